// IDX files (the MNIST format): a validating reader for raw and gzip files and a writer.
//
// Layout: 2 zero bytes, a type code (0x08 = unsigned byte, the only one we accept), the
// number of dimensions (1..4), each dimension as a big-endian uint32, then the product
// of the dimensions in bytes, and nothing after it.
//
// The reader streams the file through a ByteSource, so a gzip file is never held twice,
// and a header that promises more data than the file has is caught before any large
// allocation (raw files) or as soon as the stream ends (gzip). Every message starts
// with the file's path so the user knows which file to fix.
#include "data/idx.h"

#include "error.h"
#include "files/input_file.h"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>

namespace plab {
namespace {

constexpr std::uint8_t kTypeUnsignedByte = 0x08;
constexpr int kMaxDims = 4;
constexpr std::size_t kChunkBytes = 1 << 20;

std::string hexByte(unsigned v)
{
    char buf[8];
    std::snprintf(buf, sizeof buf, "0x%02X", v & 0xFFu);
    return buf;
}

// Names of the IDX type codes, so "type code 0x0D (float)" tells the user what they have.
std::string typeCodeName(std::uint8_t code)
{
    switch (code) {
    case 0x08: return "unsigned byte";
    case 0x09: return "signed byte";
    case 0x0B: return "short";
    case 0x0C: return "int";
    case 0x0D: return "float";
    case 0x0E: return "double";
    default: return "not an IDX type";
    }
}

struct FileCloser {
    void operator()(std::FILE* f) const { std::fclose(f); }
};
using FilePtr = std::unique_ptr<std::FILE, FileCloser>;

FilePtr openForReading(const std::filesystem::path& file)
{
    std::error_code ec;
    if (!std::filesystem::exists(file, ec))
        throw InputError(file.string() + " does not exist");
    if (std::filesystem::is_directory(file, ec))
        throw InputError(file.string() + " is a folder, not an IDX file");
    InputFd fd = openRegularFile(file, file.string());   // a FIFO or a device: refused, not read
    FilePtr f(::fdopen(fd.get(), "rb"));
    if (!f) throw InputError(file.string() + " cannot be opened: " + std::strerror(errno));
    fd.release();
    return f;
}

// Bytes of the IDX content, from a raw file or decompressed from a gzip file.
class ByteSource {
public:
    virtual ~ByteSource() = default;
    // Reads up to n bytes; fewer only at the end of the content.
    virtual std::size_t read(std::uint8_t* out, std::size_t n) = 0;
    // Size of the content when known without reading it (raw files), else -1.
    virtual std::int64_t knownSize() const { return -1; }
    // Words for messages: "file has" vs "decompressed file has".
    virtual const char* hasWords() const { return "file has"; }
};

class RawSource : public ByteSource {
public:
    RawSource(const std::filesystem::path& file, FilePtr f) : file_(file), f_(std::move(f))
    {
        std::error_code ec;
        auto size = std::filesystem::file_size(file, ec);
        size_ = ec ? -1 : static_cast<std::int64_t>(size);
    }
    std::size_t read(std::uint8_t* out, std::size_t n) override
    {
        std::size_t got = std::fread(out, 1, n, f_.get());
        if (got < n && std::ferror(f_.get()))
            throw InputError(file_.string() + " cannot be read: " + std::strerror(errno));
        return got;
    }
    std::int64_t knownSize() const override { return size_; }

private:
    std::filesystem::path file_;
    FilePtr f_;
    std::int64_t size_ = -1;
};

// Inflates a gzip file (one or more members, as gzip(1) allows) with zlib, checking each
// member's CRC and length. Anything after the last member that is not another gzip
// member is reported, as is a stream that stops before its end marker.
class GzipSource : public ByteSource {
public:
    GzipSource(const std::filesystem::path& file, FilePtr f) : file_(file), f_(std::move(f))
    {
        std::memset(&z_, 0, sizeof z_);
        // 15 + 16: a 32 KiB window and a gzip (not zlib) wrapper.
        if (inflateInit2(&z_, 15 + 16) != Z_OK)
            throw std::runtime_error("zlib could not start inflating " + file.string());
        in_.resize(kChunkBytes);
    }
    ~GzipSource() override { inflateEnd(&z_); }
    GzipSource(const GzipSource&) = delete;
    GzipSource& operator=(const GzipSource&) = delete;

    std::size_t read(std::uint8_t* out, std::size_t n) override
    {
        z_.next_out = out;
        z_.avail_out = static_cast<uInt>(n);
        while (z_.avail_out > 0 && !finished_) {
            if (z_.avail_in == 0 && !refill()) {
                throw InputError(file_.string() +
                                 " is truncated: the gzip stream ends before its end marker");
            }
            int rc = inflate(&z_, Z_NO_FLUSH);
            if (rc == Z_STREAM_END) {
                nextMember();
            } else if (rc == Z_DATA_ERROR || rc == Z_NEED_DICT) {
                throw InputError(file_.string() + " is a corrupt gzip stream (zlib: " +
                                 (z_.msg ? z_.msg : "data error") + ")");
            } else if (rc == Z_MEM_ERROR) {
                throw std::bad_alloc();
            } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
                throw std::runtime_error(file_.string() + ": zlib inflate failed (" +
                                         std::to_string(rc) + ")");
            }
        }
        return n - z_.avail_out;
    }
    const char* hasWords() const override { return "decompressed file has"; }

private:
    bool refill()
    {
        if (eof_) return false;
        std::size_t got = std::fread(in_.data(), 1, in_.size(), f_.get());
        if (got < in_.size()) {
            if (std::ferror(f_.get()))
                throw InputError(file_.string() + " cannot be read: " + std::strerror(errno));
            eof_ = true;
        }
        z_.next_in = in_.data();
        z_.avail_in = static_cast<uInt>(got);
        return got > 0;
    }

    // After a member's end: either another member follows, or the file must end here.
    void nextMember()
    {
        if (z_.avail_in == 0 && !refill()) {
            finished_ = true;
            return;
        }
        if (z_.avail_in >= 1 && z_.next_in[0] != 0x1f) {
            throw InputError(file_.string() +
                             " has data after the end of its gzip stream that is not gzip");
        }
        if (inflateReset(&z_) != Z_OK)
            throw std::runtime_error("zlib could not restart inflating " + file_.string());
    }

    std::filesystem::path file_;
    FilePtr f_;
    z_stream z_;
    std::vector<std::uint8_t> in_;
    bool eof_ = false;
    bool finished_ = false;
};

std::unique_ptr<ByteSource> openSource(const std::filesystem::path& file)
{
    FilePtr f = openForReading(file);
    // Detect gzip by its magic bytes, not by the name: a raw IDX file always starts
    // with 0x00 0x00, so the two can never be confused.
    std::uint8_t magic[2] = {0, 0};
    std::size_t got = std::fread(magic, 1, 2, f.get());
    std::rewind(f.get());
    if (got == 2 && magic[0] == 0x1f && magic[1] == 0x8b)
        return std::make_unique<GzipSource>(file, std::move(f));
    return std::make_unique<RawSource>(file, std::move(f));
}

std::string countOf(std::int64_t n, const char* singular)
{
    return std::to_string(n) + " " + singular + (n == 1 ? "" : "s");
}

std::string dimsString(const std::vector<std::int64_t>& dims)
{
    std::string s;
    for (std::size_t i = 0; i < dims.size(); ++i) s += (i ? " x " : "") + std::to_string(dims[i]);
    return s;
}

// Reads the 4-byte magic and the dimensions, validating each field.
std::vector<std::int64_t> readHeader(const std::filesystem::path& file, ByteSource& src)
{
    const std::string name = file.string();
    std::array<std::uint8_t, 4> magic{};
    std::size_t got = src.read(magic.data(), magic.size());
    if (got < magic.size()) {
        throw InputError(name + " is truncated: an IDX header needs at least 4 bytes, " +
                         src.hasWords() + " " + std::to_string(got));
    }
    if (magic[0] != 0 || magic[1] != 0) {
        throw InputError(name + " is not an IDX file: its magic number starts with " +
                         hexByte(magic[0]) + " " + hexByte(magic[1]) + ", expected 0x00 0x00");
    }
    if (magic[2] != kTypeUnsignedByte) {
        throw InputError(name + " has IDX type code " + hexByte(magic[2]) + " (" +
                         typeCodeName(magic[2]) +
                         "); only 0x08 (unsigned byte) is supported");
    }
    const int rank = magic[3];
    if (rank < 1 || rank > kMaxDims) {
        throw InputError(name + " declares " + countOf(rank, "dimension") +
                         "; an IDX file of images or labels has 1 to 4");
    }

    std::array<std::uint8_t, 4 * kMaxDims> raw{};
    const std::size_t dimBytes = 4 * static_cast<std::size_t>(rank);
    got = src.read(raw.data(), dimBytes);
    if (got < dimBytes) {
        throw InputError(name + " is truncated: its header declares " + countOf(rank, "dimension") +
                         " (" + std::to_string(4 + dimBytes) + " header bytes), " +
                         src.hasWords() + " " + std::to_string(4 + got) + " bytes");
    }
    std::vector<std::int64_t> dims(static_cast<std::size_t>(rank));
    for (int i = 0; i < rank; ++i) {
        const std::uint8_t* p = raw.data() + 4 * i;
        dims[static_cast<std::size_t>(i)] = (std::int64_t{p[0]} << 24) | (std::int64_t{p[1]} << 16) |
                                            (std::int64_t{p[2]} << 8) | std::int64_t{p[3]};
    }
    for (int i = 0; i < rank; ++i) {
        if (dims[static_cast<std::size_t>(i)] == 0) {
            throw InputError(name + " has dimension " + std::to_string(i + 1) +
                             " of size 0 (dimensions " + dimsString(dims) +
                             "); every dimension must be at least 1");
        }
    }
    return dims;
}

// Product of the dimensions, refusing results beyond what a vector can hold.
std::int64_t payloadBytes(const std::filesystem::path& file, const std::vector<std::int64_t>& dims)
{
    std::int64_t product = 1;
    constexpr auto limit = static_cast<std::int64_t>(
        std::min<std::uint64_t>(std::numeric_limits<std::int64_t>::max(),
                                std::numeric_limits<std::ptrdiff_t>::max()));
    for (std::int64_t d : dims) {
        if (__builtin_mul_overflow(product, d, &product) || product > limit) {
            throw InputError(file.string() + " has dimensions " + dimsString(dims) +
                             " whose product overflows a 64-bit size; the header is corrupt");
        }
    }
    // Decided from the header, before a byte of the data is inflated or allocated: a small
    // gzip file can claim gigabytes.
    if (product > kMaxIdxDataBytes)
        throw InputError(file.string() + " declares " + byteSizeText(static_cast<std::uint64_t>(product)) + " of data (" +
                         dimsString(dims) + "), more than the " + byteSizeText(static_cast<std::uint64_t>(kMaxIdxDataBytes)) +
                         " an IDX file of this lab may hold");
    return product;
}

bool endsWithGz(const std::filesystem::path& file)
{
    return file.extension() == ".gz";
}

}  // namespace

IdxArray readIdx(const std::filesystem::path& file)
{
    const std::string name = file.string();
    std::unique_ptr<ByteSource> src = openSource(file);

    IdxArray out;
    out.dims = readHeader(file, *src);
    const std::int64_t expected = payloadBytes(file, out.dims);
    const std::int64_t headerBytes = 4 + 4 * static_cast<std::int64_t>(out.dims.size());

    // A raw file's size is known: judge it before allocating what the header asks for.
    if (std::int64_t size = src->knownSize(); size >= 0) {
        const std::int64_t have = size - headerBytes;
        if (have < expected) {
            throw InputError(name + " is truncated: header says " + std::to_string(expected) +
                             " bytes of data (" + dimsString(out.dims) + "), file has " +
                             std::to_string(have));
        }
        if (have > expected) {
            throw InputError(name + " has " + countOf(have - expected, "byte") +
                             " of trailing garbage after the " + std::to_string(expected) +
                             " bytes of data its header describes (" + dimsString(out.dims) + ")");
        }
        out.data.resize(static_cast<std::size_t>(expected));
        std::size_t got = src->read(out.data.data(), out.data.size());
        if (static_cast<std::int64_t>(got) != expected)
            throw InputError(name + " changed size while being read");
        return out;
    }

    // Compressed: grow the buffer as data arrives, so a lying header costs no memory.
    std::int64_t have = 0;
    while (have < expected) {
        const std::size_t want =
            static_cast<std::size_t>(std::min<std::int64_t>(expected - have, kChunkBytes));
        out.data.resize(static_cast<std::size_t>(have) + want);
        std::size_t got = src->read(out.data.data() + have, want);
        have += static_cast<std::int64_t>(got);
        if (got < want) {
            throw InputError(name + " is truncated: header says " + std::to_string(expected) +
                             " bytes of data (" + dimsString(out.dims) + "), " +
                             src->hasWords() + " " + std::to_string(have));
        }
    }
    // Count what follows the data (bounded work: the rest of the stream, discarded).
    std::int64_t trailing = 0;
    std::vector<std::uint8_t> sink(64 * 1024);
    for (std::size_t got; trailing <= kMaxIdxDataBytes && (got = src->read(sink.data(), sink.size())) > 0;)
        trailing += static_cast<std::int64_t>(got);
    if (trailing > 0) {
        throw InputError(name + " has " + (trailing > kMaxIdxDataBytes ? "over " : "") + countOf(trailing, "byte") +
                         " of trailing garbage after the " + std::to_string(expected) +
                         " bytes of data its header describes (" + dimsString(out.dims) + ")");
    }
    return out;
}

void writeIdx(const std::filesystem::path& file, const IdxArray& a)
{
    // A malformed array is our bug, not the user's: std::invalid_argument.
    if (a.dims.empty() || a.dims.size() > kMaxDims)
        throw std::invalid_argument("writeIdx: an IDX array has 1 to 4 dimensions");
    std::int64_t product = 1;
    for (std::int64_t d : a.dims) {
        if (d < 1 || d > std::int64_t{0xFFFFFFFF} || __builtin_mul_overflow(product, d, &product))
            throw std::invalid_argument("writeIdx: dimension out of range for " + file.string());
    }
    if (product != static_cast<std::int64_t>(a.data.size()))
        throw std::invalid_argument("writeIdx: data size does not match the dimensions for " +
                                    file.string());

    std::vector<std::uint8_t> header = {0, 0, kTypeUnsignedByte,
                                        static_cast<std::uint8_t>(a.dims.size())};
    for (std::int64_t d : a.dims) {
        const auto u = static_cast<std::uint32_t>(d);
        for (int shift = 24; shift >= 0; shift -= 8)
            header.push_back(static_cast<std::uint8_t>(u >> shift));
    }

    const std::string name = file.string();
    if (endsWithGz(file)) {
        gzFile gz = gzopen(file.c_str(), "wb6");
        if (!gz) throw std::runtime_error("cannot create " + name + ": " + std::strerror(errno));
        auto put = [&](const std::uint8_t* p, std::size_t n) {
            while (n > 0) {
                const unsigned step = static_cast<unsigned>(std::min<std::size_t>(n, 1u << 30));
                if (gzwrite(gz, p, step) != static_cast<int>(step)) {
                    int err = 0;
                    std::string msg = gzerror(gz, &err);
                    gzclose(gz);
                    throw std::runtime_error("cannot write " + name + ": " + msg);
                }
                p += step;
                n -= step;
            }
        };
        put(header.data(), header.size());
        put(a.data.data(), a.data.size());
        if (gzclose(gz) != Z_OK) throw std::runtime_error("cannot finish writing " + name);
        return;
    }

    FilePtr f(std::fopen(file.c_str(), "wb"));
    if (!f) throw std::runtime_error("cannot create " + name + ": " + std::strerror(errno));
    if (std::fwrite(header.data(), 1, header.size(), f.get()) != header.size() ||
        std::fwrite(a.data.data(), 1, a.data.size(), f.get()) != a.data.size()) {
        throw std::runtime_error("cannot write " + name + ": " + std::strerror(errno));
    }
    if (std::fclose(f.release()) != 0)
        throw std::runtime_error("cannot finish writing " + name + ": " + std::strerror(errno));
}

}  // namespace plab
