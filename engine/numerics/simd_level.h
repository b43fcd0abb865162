// Which vector kernels the CPU code may use: the level the CPU has (and the OS saves the
// state of), capped by PLAB_SIMD_MAX or by a test. Every dispatching kernel (bulk rounding,
// the quantisers, reduced-format accumulation, oneDNN's ISA) asks this one place, so
// PLAB_SIMD_MAX=avx2 on an AVX-512 machine runs the code an AVX2-only machine runs, and
// PLAB_SIMD_MAX=scalar the portable reference.
#pragma once

#include <string>

namespace plab {

enum class SimdLevel {
    scalar = 0,   // portable C++ (the reference every kernel is tested against)
    avx2 = 1,     // AVX2 + FMA + F16C (Haswell and Zen 1 onwards)
    avx512 = 2,   // AVX-512 F + BW (+ VL for some kernels)
};

const char* simdLevelName(SimdLevel level);

// What this CPU supports (the build's kernels permitting), ignoring any cap.
SimdLevel cpuSimdLevel();

// The level kernels use now: min(cpuSimdLevel(), the cap).
SimdLevel simdLevel();

// The cap: PLAB_SIMD_MAX ("avx512", "avx2" or "scalar") when the process starts, or what a
// test sets. An unknown PLAB_SIMD_MAX value leaves the level uncapped (simdCapNote says so).
void setSimdLevelCap(SimdLevel cap);
SimdLevel simdLevelCap();

// One line for `plab info` and run records: the level in use and why, e.g. "avx2 (capped by
// PLAB_SIMD_MAX=avx2; this CPU has avx512)".
std::string simdLevelDescription();

// Tests: caps the level for a scope, restoring the previous cap after it.
class ScopedSimdCap {
public:
    explicit ScopedSimdCap(SimdLevel cap) : previous_(simdLevelCap()) { setSimdLevelCap(cap); }
    ~ScopedSimdCap() { setSimdLevelCap(previous_); }
    ScopedSimdCap(const ScopedSimdCap&) = delete;
    ScopedSimdCap& operator=(const ScopedSimdCap&) = delete;

private:
    SimdLevel previous_;
};

}  // namespace plab
