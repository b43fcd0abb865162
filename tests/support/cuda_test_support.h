// What the CUDA backend tests share: seeded data over every fp32 class, the kernel
// rounding emulated on the host, and the build tree's plugin opened directly (the test
// programs live in build/tests, where the engine's loader does not look).
#pragma once

#include "backend/backend.h"
#include "backend/cuda/kernel_math.h"
#include "numerics/bulk_round.h"
#include "numerics/format.h"

#include "test_support.h"

#include <QtTest>

#include <dlfcn.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <string>
#include <vector>


using namespace plab;
namespace ck = plab::cudakernels;


namespace {  // internal to each test program

// splitmix64: the same data on every machine.
using Rng = plab::testing::SplitMix64;

// Values spread over the whole fp32 range plus every special class the rounding counts:
// zeros of both signs, fp32 subnormals, values that under/overflow fp16 and bf16, ties.
std::vector<float> telemetryData(std::size_t n, std::uint64_t seed)
{
    Rng rng{seed};
    const float specials[] = {0.0f, -0.0f, std::numeric_limits<float>::infinity(),
                              -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN(),
                              -std::numeric_limits<float>::quiet_NaN(), 1e-45f, -1e-40f, 65504.0f, 65520.0f,
                              -70000.0f, 0x1.0p-25f, 0x1.8p-25f, 0x1.0p-24f, 3.4e38f, -3.39e38f, 1.0f + 0x1.0p-11f};
    std::vector<float> v(n);
    for (std::size_t i = 0; i < n; ++i) {
        if (rng.next() % 8 == 0) {
            v[i] = specials[rng.next() % std::size(specials)];
        } else {
            const double e = -150.0 + 280.0 * rng.uniform();   // 2^-150 .. 2^130: both ends
            const double sign = (rng.next() & 1) ? -1.0 : 1.0;
            v[i] = static_cast<float>(sign * std::exp2(e));
        }
    }
    return v;
}

// Counter block -> the engine's structs, the same mapping as CudaBackend::roundArray.
void addCounters(const std::vector<std::uint64_t>& c, std::size_t n, RoundingStats& stats, GradientHistogram& hist)
{
    stats.count += n;
    stats.zerosIn += c[ck::kZerosIn];
    stats.underflow += c[ck::kUnderflow];
    stats.subnormal += c[ck::kSubnormal];
    stats.overflow += c[ck::kOverflow];
    stats.nan += c[ck::kNan];
    stats.infIn += c[ck::kInfIn];
    for (int b = 0; b < ck::kHistBins; ++b) hist.bins[static_cast<std::size_t>(b)] += c[static_cast<std::size_t>(ck::kHistFirst + b)];
    hist.zeros += c[ck::kHistZeros];
    hist.nonFinite += c[ck::kHistNonFinite];
}

// What the rounding kernel computes, one element after the other on the host.
void emulateRoundKernel(Format f, const std::vector<float>& in, std::vector<float>& out, RoundingStats& stats,
                        GradientHistogram& hist)
{
    std::vector<std::uint64_t> counters(ck::kCounterSlots, 0);
    out.resize(in.size());
    for (std::size_t i = 0; i < in.size(); ++i) {
        const std::uint32_t u = std::bit_cast<std::uint32_t>(in[i]);
        const std::uint32_t r = ck::roundBits(static_cast<int>(f), u);
        out[i] = std::bit_cast<float>(r);
        for (unsigned mask = ck::statMask(static_cast<int>(f), u, r); mask != 0; mask &= mask - 1)
            ++counters[static_cast<std::size_t>(std::countr_zero(mask))];
        ++counters[static_cast<std::size_t>(ck::histogramSlot(u))];
    }
    addCounters(counters, in.size(), stats, hist);
}

bool sameBits(const std::vector<float>& a, const std::vector<float>& b)
{
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// The plugin as the engine would load it, found next to this test or next to `plab` in
// the build tree (the test does not sit beside it). Kept open for the process's life.
struct Plugin {
    std::string path;
    std::string error;   // why it could not be loaded; empty when loaded or absent
    void* handle = nullptr;
    PlabCudaProbeFn probe = nullptr;
    PlabCudaCreateBackendFn create = nullptr;
};

const Plugin& plugin()
{
    static const Plugin p = [] {
        Plugin r;
        const std::filesystem::path candidates[] = {
            std::filesystem::path(QCoreApplication::applicationDirPath().toStdString()) / "libplab_cuda.so",
            std::filesystem::path(PLAB_BINARY_DIR) / "app" / "libplab_cuda.so"};
        for (const auto& c : candidates)
            if (std::filesystem::exists(c)) {
                r.path = c.string();
                break;
            }
        if (r.path.empty()) return r;
        r.handle = dlopen(r.path.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (!r.handle) {
            const char* e = dlerror();
            r.error = e ? e : "dlopen failed";
            return r;
        }
        r.probe = reinterpret_cast<PlabCudaProbeFn>(dlsym(r.handle, PLAB_CUDA_PROBE_SYMBOL));
        r.create = reinterpret_cast<PlabCudaCreateBackendFn>(dlsym(r.handle, PLAB_CUDA_CREATE_BACKEND_SYMBOL));
        return r;
    }();
    return p;
}

// Where a CUDA backend can come from: the engine's own loader, else the build tree's plugin.
BackendInfo probeAnyCuda()
{
    BackendInfo engine = probeCudaBackend();
    if (engine.available || !plugin().probe) return engine;
    BackendInfo direct;
    plugin().probe(&direct);
    return direct;
}

}  // namespace
