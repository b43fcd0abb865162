// Temporary folders and synthetic IDX data sets for the tests.
#include "test_support.h"

#include "backend/backend.h"
#include "data/idx.h"
#include "numerics/format.h"

#include <QtGlobal>

#include <cstring>
#include <random>
#include <stdexcept>

namespace plab::testing {

std::vector<SimdLevel> simdLevelsOfThisCpu()
{
    std::vector<SimdLevel> levels;
    for (SimdLevel l : {SimdLevel::avx512, SimdLevel::avx2, SimdLevel::scalar})
        if (l <= cpuSimdLevel()) levels.push_back(l);
    static const bool said = [] {
        for (SimdLevel l : {SimdLevel::avx512, SimdLevel::avx2})
            if (l > cpuSimdLevel())
                qInfo("not run here: the %s path (this CPU has %s)", simdLevelName(l), simdLevelName(cpuSimdLevel()));
        return true;
    }();
    (void)said;
    return levels;
}

TempDir::TempDir()
{
    std::random_device rd;
    auto base = std::filesystem::temp_directory_path();
    for (int attempt = 0; attempt < 100; ++attempt) {
        auto candidate = base / ("plab-test-" + std::to_string(rd()));
        if (std::filesystem::create_directory(candidate)) {
            path_ = candidate;
            return;
        }
    }
    throw std::runtime_error("could not create a temporary folder");
}

TempDir::~TempDir()
{
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
}

namespace {

// Class c lights a 10x10 square whose position depends on c, plus noise.
IdxArray syntheticImages(int count, std::uint64_t seed, std::vector<std::uint8_t>& labels)
{
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<int> noise(0, 40);
    IdxArray images;
    images.dims = {count, 28, 28};
    images.data.assign(static_cast<std::size_t>(count) * 784, 0);
    labels.resize(static_cast<std::size_t>(count));
    for (int i = 0; i < count; ++i) {
        const int c = i % 10;
        labels[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(c);
        const int top = 2 + (c / 5) * 13, left = 1 + (c % 5) * 5;
        std::uint8_t* img = images.data.data() + static_cast<std::size_t>(i) * 784;
        for (int p = 0; p < 784; ++p) img[p] = static_cast<std::uint8_t>(noise(rng));
        for (int y = top; y < top + 10; ++y)
            for (int x = left; x < left + 6 && x < 28; ++x) img[y * 28 + x] = 220;
    }
    return images;
}

}  // namespace

void writeSyntheticDataset(const std::filesystem::path& folder, int trainCount, int testCount,
                           std::uint64_t seed)
{
    std::filesystem::create_directories(folder);
    auto write = [&](const std::string& prefix, int count, std::uint64_t s) {
        std::vector<std::uint8_t> labels;
        IdxArray images = syntheticImages(count, s, labels);
        writeIdx(folder / (prefix + "-images-idx3-ubyte"), images);
        IdxArray lab;
        lab.dims = {count};
        lab.data = labels;
        writeIdx(folder / (prefix + "-labels-idx1-ubyte"), lab);
    };
    write("train", trainCount, seed);
    write("t10k", testCount, seed + 1);
}

bool blasSumsCutsAlike()
{
    auto backend = createCpuBackend(1);
    const std::int64_t M = 40, N = 392, K = 144;
    std::vector<float> A(M * K), B(K * N), whole(M * N), cut(M * N);
    std::uint32_t state = 5;
    auto next = [&] {
        state = state * 1664525u + 1013904223u;
        return roundTo(Format::fp16, static_cast<float>(static_cast<std::int32_t>(state)) / 2147483648.0f);
    };
    for (float& v : A) v = next();
    for (float& v : B) v = next();
    const GemmPrecision fp32;
    backend->gemm(Transpose::no, Transpose::no, M, N, K, A.data(), K, B.data(), N, 0.0f, whole.data(), N, fp32);
    backend->gemm(Transpose::no, Transpose::no, M, N / 2, K, A.data(), K, B.data(), N, 0.0f, cut.data(), N, fp32);
    backend->gemm(Transpose::no, Transpose::no, M, N - N / 2, K, A.data(), K, B.data() + N / 2, N, 0.0f,
                  cut.data() + N / 2, N, fp32);
    if (std::memcmp(whole.data(), cut.data(), whole.size() * sizeof(float)) != 0) return false;
    backend->gemm(Transpose::no, Transpose::no, M / 2, N, K, A.data(), K, B.data(), N, 0.0f, cut.data(), N, fp32);
    backend->gemm(Transpose::no, Transpose::no, M - M / 2, N, K, A.data() + M / 2 * K, K, B.data(), N, 0.0f,
                  cut.data() + M / 2 * N, N, fp32);
    return std::memcmp(whole.data(), cut.data(), whole.size() * sizeof(float)) == 0;
}

void syntheticBatch(int count, Tensor& images, std::vector<std::uint8_t>& labels)
{
    images = Tensor({count, 1, 28, 28});
    labels.resize(static_cast<std::size_t>(count));
    for (int i = 0; i < count; ++i) {
        const int c = i % 10;
        labels[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(c);
        const int top = 2 + (c / 5) * 13, left = 1 + (c % 5) * 5;
        for (int p = 0; p < 784; ++p) images[i * 784 + p] = static_cast<float>((p * 37 + i * 11) % 41) / 255.0f;
        for (int y = top; y < top + 10; ++y)
            for (int x = left; x < left + 6; ++x) images[i * 784 + y * 28 + x] = 220.0f / 255.0f;
    }
}

}  // namespace plab::testing
