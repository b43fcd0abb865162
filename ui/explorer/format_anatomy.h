// What the format explorer shows about one number in one format, as pure arithmetic over
// the engine's conversions (engine/numerics/format.h, number_text.h; no rounding is done
// here): the bit pattern with its sign / exponent / mantissa fields, the rounded value as
// the shortest decimal and as its exact decimal expansion, the rounding error, the spacing
// to the neighbours, the class; flipping one bit; the worked examples for a class; and the
// shift of a gradient histogram by a change of loss scale.
#pragma once

#include "numerics/format.h"
#include "numerics/minifloat.h"
#include "numerics/rounding_stats.h"

#include <QString>
#include <QVector>

#include <cstdint>
#include <optional>

namespace plab::ui {

struct FormatAnatomy {
    Format format;
    double input = 0.0;          // the number asked about (a double: the typed decimal)
    float value = 0.0f;          // input rounded to the format (held exactly in fp32)
    std::uint32_t pattern = 0;   // value's encoding in the format (encodeBits: FormatInfo::bits() wide, bit 0 the last mantissa bit)
    ValueClass valueClass = ValueClass::zero;
    QString shortest;            // shortestDecimal(): the shortest decimal that reads back
    QString exact;               // the exact decimal expansion of value ("nan", "inf" too)
    // What a row shows as the value: the exact expansion where it is short (at most 9
    // significant digits: 65536, 0.75), else "≈" and the shortest decimal that reads back to
    // it (≈0.1 for fp16's 0.0999755859375). Never a decimal the format does not hold shown
    // as if it did (tf32's 65536 had read "65540").
    QString shown;
    double error = 0.0;          // value - input (NaN when either is not finite)
    double spacingUp = 0.0;      // distance from |value| to the next larger magnitude
    double spacingDown = 0.0;    // distance to the next smaller magnitude (0 at zero)
};

// One rounding from the double input to f (roundDoubleTo; fp32 too, so that the typed
// decimal's own rounding error shows in the fp32 row).
FormatAnatomy describe(Format f, double input);

// The value with bit `bit` of its pattern in f flipped (value must be exact in f).
float flipBit(Format f, float value, int bit);

// What the explorer's number field reads, as a teacher would type it:
//   a decimal: "1.0001", "-3.5e-8", "inf", "nan";
//   a power of two or m x 2^e: "2^-25", "-2^10", "1.5 x 2^-3", "3*2^-4", "1.5×2^-3";
//   a bit pattern "0x..." of a format: 8 hex digits are an fp32 pattern, 5 a tf32 pattern
//   (its 19 bits), 4 a 16-bit pattern of `sixteenBit` (fp16 or bf16).
// The value is a double (a typed decimal keeps its digits, so the fp32 row shows its own
// rounding); a pattern's value is exact in its format. `error` says what was wrong.
struct ParsedNumber {
    std::optional<double> value;
    std::optional<Format> pattern;   // the format a bit pattern was read in
    QString error;
};
ParsedNumber parseExplorerNumber(const QString& text, Format sixteenBit = Format::fp16);

// A value as m x 2^e with 1 <= |m| < 2 ("1.5 × 2^-3", "-1 × 2^-24"), m written in full
// (every digit of a double's m is finite); "0", "inf", "nan" as they are.
QString powerOfTwoForm(double value);

// The fields of a value's pattern in f and the formula that gives the value, as plain text:
//   "sign 0 · exponent 01111 (15) · mantissa 1000000000
//    (-1)^0 × 1.1000000000₂ × 2^(15 - 15) = 1.5 × 2^0"
// a subnormal: "(-1)^s × 0.m₂ × 2^(1 - bias)"; zero, inf and NaN say what their fields mean.
QString fieldFormula(Format f, float value);

// A number in a format below 16 bits, as the FP8/MX/NVFP4 recipes quantise it:
// the fp32 value rounded to f, saturating. pattern is "S.EEEE.MMM" (the fields apart); kind
// "normal", "subnormal", "zero", "saturated" (a finite value past the largest, clipped) or
// "not representable" (a NaN in FP6/FP4); nonSaturating what OFP8's non-saturating
// conversion gives instead where it differs ("NaN" for E4M3, "inf" for E5M2).
struct MiniAnatomy {
    MiniFormat format = MiniFormat::e4m3;
    float value = 0.0f;   // NaN where f has none
    QString pattern;
    QString kind;
    double error = 0.0;   // value - the fp32 value (NaN when either is not finite)
    QString nonSaturating;
};
MiniAnatomy describeMini(MiniFormat f, float value);
// A finite double as its exact decimal expansion ("0.000000059604644775390625").
QString exactDecimal(double x);

// A number a teacher can click, with the one sentence that says what it shows.
struct WorkedExample {
    QString title;
    double input;
    Format focus;           // the format the example is about
    QString explanation;
};
QVector<WorkedExample> workedExamples();

// A change of loss scale from S_current to S shifts every histogram bin by
// log2(S / S_current): regionShares(h, f, shift) in telemetry/format_regions.h says where
// the values land. This is that shift, rounded to whole bins (0 when either scale is not
// positive).
int scaleShiftBins(double currentScale, double newScale);

}  // namespace plab::ui
