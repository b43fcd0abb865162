// safetensors encoding and decoding (see safetensors.h): bit-exact values, and every
// malformed file refused with one sentence before any value is used.
#include "weights/safetensors.h"

#include "error.h"
#include "files/atomic_file.h"
#include "files/input_file.h"
#include "json/json_input.h"
#include "numerics/format.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <optional>
#include <stdexcept>

namespace plab {

static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian, as this host must be");

using nlohmann::json;

std::string_view weightDtypeName(WeightDtype d)
{
    switch (d) {
    case WeightDtype::f32: return "F32";
    case WeightDtype::f16: return "F16";
    case WeightDtype::bf16: return "BF16";
    }
    return "F32";
}

namespace {

std::size_t dtypeBytes(WeightDtype d) { return d == WeightDtype::f32 ? 4 : 2; }

std::optional<WeightDtype> dtypeOf(std::string_view name)
{
    for (WeightDtype d : {WeightDtype::f32, WeightDtype::f16, WeightDtype::bf16})
        if (weightDtypeName(d) == name) return d;
    return std::nullopt;
}

// The 16-bit pattern of v in d; nullopt when v is not exactly a value of d.
std::optional<std::uint16_t> halfBits(WeightDtype d, float v)
{
    if (d == WeightDtype::f16) {
        const std::uint16_t h = fp32ToFp16Bits(v);
        if (bitsOf(fp16BitsToFp32(h)) != bitsOf(v) && !(std::isnan(v) && std::isnan(fp16BitsToFp32(h))))
            return std::nullopt;
        return h;
    }
    const std::uint16_t b = fp32ToBf16Bits(v);
    if (bitsOf(bf16BitsToFp32(b)) != bitsOf(v) && !(std::isnan(v) && std::isnan(bf16BitsToFp32(b))))
        return std::nullopt;
    return b;
}

// Valid UTF-8 (RFC 3629: no overlongs, no surrogates, at most U+10FFFF).
bool validUtf8(std::string_view s)
{
    std::size_t i = 0;
    while (i < s.size()) {
        const auto c = static_cast<unsigned char>(s[i]);
        int extra = 0;
        std::uint32_t cp = 0;
        if (c < 0x80) {
            ++i;
            continue;
        }
        if (c >= 0xC2 && c <= 0xDF) extra = 1, cp = c & 0x1F;
        else if (c >= 0xE0 && c <= 0xEF) extra = 2, cp = c & 0x0F;
        else if (c >= 0xF0 && c <= 0xF4) extra = 3, cp = c & 0x07;
        else return false;
        if (i + static_cast<std::size_t>(extra) >= s.size()) return false;   // cut short
        for (int k = 1; k <= extra; ++k) {
            const auto d = static_cast<unsigned char>(s[i + static_cast<std::size_t>(k)]);
            if ((d & 0xC0) != 0x80) return false;
            cp = (cp << 6) | (d & 0x3F);
        }
        if ((extra == 2 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) || (extra == 3 && (cp < 0x10000 || cp > 0x10FFFF)))
            return false;
        i += static_cast<std::size_t>(extra) + 1;
    }
    return true;
}

struct Entry {
    std::string name;
    WeightDtype dtype;
    Shape shape;
    std::uint64_t begin, end;
};

Entry readEntry(const std::string& name, const json& info, const std::string& origin)
{
    auto fail = [&](const std::string& what) -> InputError {
        return InputError(origin + ": tensor '" + name + "': " + what);
    };
    if (!info.is_object()) throw fail("expected an object with dtype, shape and data_offsets");
    for (const auto& [key, value] : info.items())
        if (key != "dtype" && key != "shape" && key != "data_offsets") throw fail("unknown field '" + key + "'");
    if (!info.contains("dtype") || !info["dtype"].is_string()) throw fail("no dtype");
    const auto dtype = dtypeOf(info["dtype"].get<std::string>());
    if (!dtype)
        throw fail("dtype " + jsonExcerpt(info["dtype"]) + " is not one Precision Lab holds (F32, F16 or BF16)");
    if (!info.contains("shape") || !info["shape"].is_array()) throw fail("no shape (a list of sizes)");
    Shape shape;
    std::uint64_t count = 1;
    for (const json& d : info["shape"]) {
        if (!d.is_number_unsigned()) throw fail("shape " + jsonExcerpt(info["shape"]) + " holds something other than sizes");
        const std::uint64_t n = d.get<std::uint64_t>();
        if (n > (std::uint64_t{1} << 40) || (n != 0 && count > (std::uint64_t{1} << 40) / n))
            throw fail("shape " + jsonExcerpt(info["shape"]) + " is impossibly large");
        count *= n;
        shape.push_back(static_cast<std::int64_t>(n));
    }
    const json& offsets = info.contains("data_offsets") ? info["data_offsets"] : json();
    if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() || !offsets[1].is_number_unsigned())
        throw fail("data_offsets must be two byte offsets [begin, end]");
    const std::uint64_t begin = offsets[0].get<std::uint64_t>(), end = offsets[1].get<std::uint64_t>();
    if (end < begin) throw fail("data_offsets end " + std::to_string(end) + " before begin " + std::to_string(begin));
    if (end - begin != count * dtypeBytes(*dtype))
        throw fail("data_offsets hold " + std::to_string(end - begin) + " bytes, but shape " + shapeString(shape) +
                   " of " + std::string(weightDtypeName(*dtype)) + " takes " +
                   std::to_string(count * dtypeBytes(*dtype)));
    return {name, *dtype, std::move(shape), begin, end};
}

}  // namespace

std::string encodeSafetensors(const WeightsFile& w)
{
    json header = json::object();
    std::uint64_t offset = 0;
    for (const WeightTensor& t : w.tensors) {
        if (static_cast<std::int64_t>(t.values.size()) != elementCount(t.shape))
            throw std::invalid_argument("tensor " + t.name + ": " + std::to_string(t.values.size()) +
                                        " values for shape " + shapeString(t.shape));
        const std::uint64_t bytes = t.values.size() * dtypeBytes(t.dtype);
        header[t.name] = {{"dtype", std::string(weightDtypeName(t.dtype))},
                          {"shape", t.shape},
                          {"data_offsets", {offset, offset + bytes}}};
        offset += bytes;
    }
    if (!w.metadata.empty()) header["__metadata__"] = w.metadata;
    std::string text = header.dump();
    text.append((8 - text.size() % 8) % 8, ' ');   // the data starts 8-byte aligned, as the reference writes it

    std::string out(8, '\0');
    const std::uint64_t n = text.size();
    std::memcpy(out.data(), &n, 8);
    out += text;
    out.reserve(out.size() + offset);
    for (const WeightTensor& t : w.tensors) {
        if (t.dtype == WeightDtype::f32) {
            out.append(reinterpret_cast<const char*>(t.values.data()), t.values.size() * 4);
            continue;
        }
        for (std::size_t i = 0; i < t.values.size(); ++i) {
            const auto bits = halfBits(t.dtype, t.values[i]);
            if (!bits)
                throw std::invalid_argument("tensor " + t.name + ": value " + std::to_string(t.values[i]) + " at " +
                                            std::to_string(i) + " is not a " +
                                            std::string(weightDtypeName(t.dtype)) + " value");
            out.append(reinterpret_cast<const char*>(&*bits), 2);
        }
    }
    return out;
}

namespace {

// A file torch.save wrote: a zip archive (PyTorch 1.6 and later) or a bare pickle (the
// legacy format, protocol 2 to 5). A safetensors header begins with '{' at byte 8 (the
// format's rule), which neither has there, so no safetensors file is taken for one.
const char* torchSaveKind(std::string_view bytes)
{
    if (bytes.size() < 9 || bytes[8] == '{') return nullptr;
    if (bytes.substr(0, 4) == std::string_view("PK\x03\x04", 4)) return "a zip archive";
    const auto protocol = static_cast<unsigned char>(bytes[1]);
    if (static_cast<unsigned char>(bytes[0]) == 0x80 && protocol >= 2 && protocol <= 5) return "a Python pickle";
    return nullptr;
}

}  // namespace

WeightsFile decodeSafetensors(std::string_view bytes, const std::string& origin)
{
    if (const char* kind = torchSaveKind(bytes))
        throw InputError(origin + ": this is a PyTorch file written by torch.save (" + kind +
                         "), not safetensors; plab reads weights only as safetensors, which hold no code: save "
                         "them with safetensors.torch.save_file(model.state_dict(), \"weights.safetensors\"), or "
                         "scripts/plab_torch.py's save_safetensors where the safetensors package is missing "
                         "(docs/WEIGHTS.md)");
    if (bytes.size() < 8)
        throw InputError(origin + ": " + std::to_string(bytes.size()) +
                         " bytes, too short for a safetensors file (an 8-byte header length comes first)");
    std::uint64_t n = 0;
    std::memcpy(&n, bytes.data(), 8);
    // A JSON file (a run record, a config) handed over as weights: its first 8 bytes read as
    // a header length that cannot be one. Say what it is.
    const auto first = bytes.find_first_not_of(" \t\r\n");
    if ((n > kMaxSafetensorsHeader || n > bytes.size() - 8) && first != std::string_view::npos &&
        (bytes[first] == '{' || bytes[first] == '['))
        throw InputError(origin + ": this is a JSON file (a run record or a config?), not safetensors weights; a run's "
                                  "weights are the .safetensors file written beside its record (--save-weights)");
    if (n > kMaxSafetensorsHeader)
        throw InputError(origin + ": the header length " + std::to_string(n) + " is over the 100 MB limit");
    if (n > bytes.size() - 8)
        throw InputError(origin + ": the header length " + std::to_string(n) + " runs past the end of the file (" +
                         std::to_string(bytes.size()) + " bytes): truncated or not a safetensors file");
    const std::string_view text = bytes.substr(8, n);
    if (!validUtf8(text)) throw InputError(origin + ": the header is not UTF-8 text");
    const json header = parseJsonInput(text, origin + ": header", JsonLimits{kMaxSafetensorsHeader, 8});
    if (!header.is_object()) throw InputError(origin + ": the header is not a JSON object of tensors");

    WeightsFile w;
    std::vector<Entry> entries;
    for (const auto& [name, info] : header.items()) {
        if (name == "__metadata__") {
            if (!info.is_object()) throw InputError(origin + ": __metadata__ must map names to text");
            for (const auto& [key, value] : info.items()) {
                if (!value.is_string()) throw InputError(origin + ": __metadata__ '" + key + "' is not text");
                w.metadata[key] = value.get<std::string>();
            }
            continue;
        }
        entries.push_back(readEntry(name, info, origin));
    }
    // The tensors' bytes tile the data exactly: no overlap, no gap, nothing past the end.
    std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
        return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
    });
    const std::uint64_t dataSize = bytes.size() - 8 - n;
    std::uint64_t expected = 0;
    for (std::size_t i = 0; i < entries.size(); ++i) {
        const Entry& e = entries[i];
        if (e.begin < expected)
            throw InputError(origin + ": tensor '" + e.name + "' overlaps tensor '" + entries[i - 1].name + "'");
        if (e.begin > expected)
            throw InputError(origin + ": " + std::to_string(e.begin - expected) + " bytes before tensor '" + e.name +
                             "' belong to no tensor");
        if (e.end > dataSize)
            throw InputError(origin + ": tensor '" + e.name + "' ends at byte " + std::to_string(e.end) +
                             " of the data, past its end (" + std::to_string(dataSize) + " bytes): truncated?");
        expected = e.end;
    }
    if (expected != dataSize)
        throw InputError(origin + ": " + std::to_string(dataSize - expected) + " bytes after the last tensor belong to no tensor");

    const char* data = bytes.data() + 8 + n;
    for (const Entry& e : entries) {
        WeightTensor t{e.name, e.dtype, e.shape, {}};
        const std::size_t count = static_cast<std::size_t>(elementCount(e.shape));
        t.values.resize(count);
        const char* src = data + e.begin;
        if (e.dtype == WeightDtype::f32) {
            std::memcpy(t.values.data(), src, count * 4);
        } else {
            for (std::size_t i = 0; i < count; ++i) {
                std::uint16_t h = 0;
                std::memcpy(&h, src + 2 * i, 2);
                t.values[i] = e.dtype == WeightDtype::f16 ? fp16BitsToFp32(h) : bf16BitsToFp32(h);
            }
        }
        w.tensors.push_back(std::move(t));
    }
    return w;
}

WeightsFile readSafetensors(const std::filesystem::path& file)
{
    const std::string origin = "weights " + file.string();
    constexpr std::uint64_t kMaxFile = std::uint64_t{4} << 30;   // 4 GiB: far above the largest model's weights
    return decodeSafetensors(readRegularFile(file, origin, kMaxFile), origin);
}

void writeSafetensors(const std::filesystem::path& file, const WeightsFile& w)
{
    writeFileAtomically(file, encodeSafetensors(w));
}

}  // namespace plab
