// `plab convert --format fp16|bf16|tf32|e4m3|e5m2|fp6-e2m3|fp6-e3m2|fp4-e2m1
// [--saturate]`: one number per input line, printed rounded to the format as
// "<shortest decimal>\t<hex bits>\t<class>". CLI code over the engine's formats
// (numerics/format.h, numerics/minifloat.h) and number text (numerics/number_text.h,
// which the format explorer uses too).
#pragma once

#include "numerics/format.h"
#include "numerics/minifloat.h"

#include <functional>
#include <optional>

#include <iosfwd>
#include <string>

namespace plab::cli {

// The output line for one fp32 input rounded to format f, without the newline: the
// shortest decimal, the format's bits ("0x" + 4 hex digits for fp16/bf16, 8 for the fp32
// pattern of tf32/fp32), and the class word (normal, subnormal, zero, inf, nan).
std::string convertLine(Format f, float input);

// Reads `in` line by line; blank lines are skipped. Returns 0 when every line converted,
// or 2 at the first line that is not a number: then `err` gets
// "line N: cannot parse '<text>': expected a decimal number or 0x followed by 8 hex digits"
// and nothing more is read.
int runConvertCommand(Format f, std::istream& in, std::ostream& out, std::ostream& err);

// The line for one fp32 input rounded to a format below 16 bits: the value,
// "0x" + 2 hex digits of its pattern, and the class; a NaN in FP6/FP4, which have none:
// "nan\tnone\tnot representable".
std::string convertMiniLine(MiniFormat f, Overflow overflow, float input);

// An MX block: the numbers of one input line (at most 32, separated by spaces
// or commas) as one block of `element`. Output: "scale\t2^K\t0xSS" (E8M0 bits; "nan" and
// 0xff when the block holds a NaN or an infinity), then one line per number:
// "<X * P_i>\t<P_i>\t0xPP". Returns 2 with `err` naming the line for a bad number or more
// than 32 of them.
int runMxConvertCommand(MiniFormat element, std::istream& in, std::ostream& out, std::ostream& err);

// An NVFP4 block: the numbers of one input line (at most 16) as one block of a tensor whose
// amax is tensorAmax (none: the line's own amax). Output: "tensor scale\t<S_enc>", "block
// scale\t<S_b>\t0xSS" (E4M3 bits; nan and 0x7f when the block holds a NaN or an infinity),
// then one line per number: "<value>\t<P_i>\t0xP". Errors as runMxConvertCommand.
int runNvfp4ConvertCommand(std::optional<float> tensorAmax, std::istream& in, std::ostream& out, std::ostream& err);

// runConvertCommand with any line maker.
int runConvertCommand(const std::function<std::string(float)>& lineOf, std::istream& in, std::ostream& out,
                      std::ostream& err);

}  // namespace plab::cli
