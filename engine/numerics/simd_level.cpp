// The SIMD level of simd_level.h: the CPU's, read once, and the cap (PLAB_SIMD_MAX or a test).
#include "numerics/simd_level.h"

#include <algorithm>
#include <atomic>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#include <cstdlib>
#include <string_view>

namespace plab {

namespace {

// PLAB_SIMD_MAX, read once; unknown values are kept for the description.
struct EnvironmentCap {
    SimdLevel level = SimdLevel::avx512;
    std::string unknown;   // a value that named no level
    bool set = false;
};

const EnvironmentCap& environmentCap()
{
    static const EnvironmentCap cap = [] {
        EnvironmentCap c;
        const char* v = std::getenv("PLAB_SIMD_MAX");
        if (!v || !*v) return c;
        const std::string_view s(v);
        if (s == "avx512") c.level = SimdLevel::avx512;
        else if (s == "avx2") c.level = SimdLevel::avx2;
        else if (s == "scalar") c.level = SimdLevel::scalar;
        else {
            // Shown short and printable: the value is quoted in plab info.
            for (char ch : s.substr(0, 32)) c.unknown += (ch >= 0x20 && ch < 0x7f) ? ch : '?';
            return c;
        }
        c.set = true;
        return c;
    }();
    return cap;
}

std::atomic<int>& capStore()
{
    static std::atomic<int> cap{static_cast<int>(environmentCap().level)};
    return cap;
}

#if defined(__x86_64__) || defined(__i386__)
// F16C from CPUID leaf 1 (ECX bit 29): clang 14's __builtin_cpu_supports has no "f16c".
// Its registers are the AVX ones, whose saving by the OS "avx2" already checks.
bool cpuHasF16c()
{
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & (1u << 29)) != 0;
}
#endif

}  // namespace

const char* simdLevelName(SimdLevel level)
{
    switch (level) {
    case SimdLevel::scalar: return "scalar";
    case SimdLevel::avx2: return "avx2";
    case SimdLevel::avx512: return "avx512";
    }
    return "scalar";
}

SimdLevel cpuSimdLevel()
{
    static const SimdLevel level = [] {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_cpu_init();
        // __builtin_cpu_supports also checks that the OS saves the ymm/zmm and mask state.
        const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpuHasF16c();
        if (avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
            __builtin_cpu_supports("avx512vl"))
            return SimdLevel::avx512;
        if (avx2) return SimdLevel::avx2;
#endif
        return SimdLevel::scalar;
    }();
    return level;
}

SimdLevel simdLevel()
{
    return std::min(cpuSimdLevel(), simdLevelCap());
}

void setSimdLevelCap(SimdLevel cap) { capStore().store(static_cast<int>(cap), std::memory_order_relaxed); }

SimdLevel simdLevelCap() { return static_cast<SimdLevel>(capStore().load(std::memory_order_relaxed)); }

std::string simdLevelDescription()
{
    const SimdLevel cpu = cpuSimdLevel(), used = simdLevel();
    std::string s = simdLevelName(used);
    const EnvironmentCap& env = environmentCap();
    if (!env.unknown.empty())
        s += std::string(" (PLAB_SIMD_MAX=\"") + env.unknown + "\" names no level: avx512, avx2 or scalar; ignored)";
    else if (used != cpu)
        s += std::string(" (capped by ") + (env.set && simdLevelCap() == env.level ? "PLAB_SIMD_MAX=" : "a test at ") +
             simdLevelName(simdLevelCap()) + "; this CPU has " + simdLevelName(cpu) + ")";
    return s;
}

}  // namespace plab
