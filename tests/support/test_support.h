// Helpers shared by the test suites: temporary folders and small IDX data sets made
// on the fly (tests never depend on the installed data).
#pragma once

#include "numerics/simd_level.h"
#include "tensor/tensor.h"

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace plab::testing {

// splitmix64: the same test data on every machine and standard library (std's
// distributions are implementation-defined).
struct SplitMix64 {
    std::uint64_t s;
    std::uint64_t next()
    {
        std::uint64_t z = (s += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }
    double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }   // [0, 1)
    float uniform(float lo, float hi) { return lo + (hi - lo) * static_cast<float>(next() >> 40) * 0x1.0p-24f; }
};

// The SIMD levels this CPU can run, highest first, whatever PLAB_SIMD_MAX says (tests cap
// dispatch at each in turn with ScopedSimdCap); the first call says, with qInfo, which
// levels the build has that this CPU cannot run.
std::vector<SimdLevel> simdLevelsOfThisCpu();

// Issue 31's packed layers cut their products into blocks of rows or columns. Whether a cut
// changes an element's sum is the CPU's BLAS kernels' doing: OpenBLAS 0.3.21's SkylakeX
// kernels sum such cuts alike, its Haswell and Zen kernels (what AVX2-only CPUs get) do not
// (measured 2026-11-25). This asks the CPU backend: one product whole and in two halves of
// columns, and in two halves of rows, on fp16 values.
bool blasSumsCutsAlike();

// A fresh folder under the system temp dir, removed when the object dies.
class TempDir {
public:
    TempDir();
    ~TempDir();
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    const std::filesystem::path& path() const { return path_; }

private:
    std::filesystem::path path_;
};

// A learnable batch of `count` images: class i % 10 lights a block whose position depends
// on the class, over a fixed pattern (tst_model, tst_skip_cause).
void syntheticBatch(int count, Tensor& images, std::vector<std::uint8_t>& labels);

// Writes DIR/<name>/ with the four standard IDX files of a small synthetic digit task:
// each class is a distinct blob pattern plus seeded noise, learnable in a few steps.
void writeSyntheticDataset(const std::filesystem::path& folder, int trainCount, int testCount,
                           std::uint64_t seed);

}  // namespace plab::testing
