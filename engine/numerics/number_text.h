// Numbers as text: parsing one fp32 value from a line a user typed (a decimal or an
// fp32 bit pattern), and printing a value of a format as the shortest decimal that reads
// back to the same value in that format. Used by `plab convert` and the format explorer.
#pragma once

#include "numerics/format.h"

#include <optional>
#include <string>
#include <string_view>

namespace plab {

// Parses one number, surrounding whitespace allowed: a decimal as strtod reads it
// ("1.5", "-2e-7", "+3", "inf", "-inf", "nan"), rounded once, to nearest even, to fp32
// (overflow gives +-inf, underflow +-0); or an fp32 bit pattern written "0x" followed by
// exactly 8 hex digits. Anything else (including an empty line) gives nullopt.
std::optional<float> parseFp32Text(std::string_view text);

// The shortest decimal d that rounds back to `value` in format f, both when d is rounded
// directly to f and when it goes through parseFp32Text() and roundTo(f) (so what we print,
// `plab convert` reads back to the same bits). value is first rounded to f. Zero prints
// "0" or "-0"; infinities "inf" / "-inf"; every NaN "nan". Plain notation ("65504",
// "0.5") unless scientific ("5.96e-08") is shorter.
std::string shortestDecimal(Format f, float value);

}  // namespace plab
