// What one bulk rounding did to a tensor: counts of underflow, subnormal results,
// overflow and NaN, and a histogram of log2|x| of the values before rounding.
#pragma once

#include <array>
#include <cstdint>
#include <optional>

namespace plab {

struct RoundingStats {
    std::uint64_t count = 0;       // elements rounded
    std::uint64_t zerosIn = 0;     // inputs that were exactly +-0
    std::uint64_t underflow = 0;   // nonzero finite inputs that became +-0
    std::uint64_t subnormal = 0;   // results that are subnormal in the target format
    std::uint64_t overflow = 0;    // finite inputs that became +-inf
    std::uint64_t nan = 0;         // NaN inputs (NaN stays NaN)
    std::uint64_t infIn = 0;       // inputs that were already +-inf
    // The largest finite |x| before rounding (0 when none was finite and nonzero, and where
    // a backend does not measure it: the CUDA plugin's counters do not). Adding stats takes
    // the larger. What made an overflow, against the format's largest finite value.
    float largestFinite = 0.0f;

    // 0 rather than a wrapped count when the parts exceed `count` (a malformed record).
    std::uint64_t nonzeroFinite() const { return count >= zerosIn + nan + infIn ? count - zerosIn - nan - infIn : 0; }
    RoundingStats& operator+=(const RoundingStats& o);
    bool operator==(const RoundingStats&) const = default;
};

// The one definition of the shares every reader shows (the record's summary, the lesson
// metrics, the charts): of the nonzero finite values rounded, those that became 0
// (underflow) or +-inf (overflow). Empty when no value was nonzero and finite: there was
// nothing to lose, which is no 0% (the record writes null, a chart leaves a gap).
// shareOf is that rule for any part of a whole (UpdateCounts::lostShare uses it too).
std::optional<double> shareOf(std::uint64_t part, std::uint64_t whole);
std::optional<double> underflowShare(const RoundingStats& s);
std::optional<double> overflowShare(const RoundingStats& s);

// One bin per power of two over the whole fp32 range: bin for exponent e holds
// |x| in [2^e, 2^(e+1)), e from -149 (fp32's smallest subnormal) to 127; plus a bin
// for zeros and one for inf/NaN.
struct GradientHistogram {
    static constexpr int kMinExponent = -149;
    static constexpr int kMaxExponent = 127;
    static constexpr int kBins = kMaxExponent - kMinExponent + 1;  // 277

    std::array<std::uint64_t, kBins> bins{};
    std::uint64_t zeros = 0;
    std::uint64_t nonFinite = 0;

    static int binOf(int exponent) { return exponent - kMinExponent; }
    static int exponentOf(int bin) { return bin + kMinExponent; }
    std::uint64_t total() const;
    GradientHistogram& operator+=(const GradientHistogram& o);
    bool operator==(const GradientHistogram&) const = default;
};

}  // namespace plab
