// The engine side of `plab convert`: reading numbers line by line, rounding them to a
// format and printing value, bits and class, tab-separated.
#include "numerics/convert_command.h"

#include "numerics/number_text.h"

#include <cstdio>
#include <istream>
#include <optional>
#include <ostream>
#include <string_view>

namespace plab {

namespace {

std::string_view withoutSurroundingSpace(std::string_view s)
{
    const auto first = s.find_first_not_of(" \t\r\n\f\v");
    if (first == std::string_view::npos) return {};
    const auto last = s.find_last_not_of(" \t\r\n\f\v");
    return s.substr(first, last - first + 1);
}

std::string hexBits(Format f, float rounded)
{
    char text[16];
    switch (f) {
    case Format::fp16: std::snprintf(text, sizeof text, "0x%04x", unsigned{fp32ToFp16Bits(rounded)}); break;
    case Format::bf16: std::snprintf(text, sizeof text, "0x%04x", unsigned{fp32ToBf16Bits(rounded)}); break;
    case Format::tf32:
    case Format::fp32: std::snprintf(text, sizeof text, "0x%08x", unsigned{bitsOf(rounded)}); break;
    }
    return text;
}

}  // namespace

std::string convertLine(Format f, float input)
{
    const float rounded = roundTo(f, input);
    std::string line = shortestDecimal(f, rounded);
    line += '\t';
    line += hexBits(f, rounded);
    line += '\t';
    line += valueClassName(classify(f, rounded));
    return line;
}

int runConvertCommand(Format f, std::istream& in, std::ostream& out, std::ostream& err)
{
    std::string line;
    for (long long lineNumber = 1; std::getline(in, line); ++lineNumber) {
        const std::string_view text = withoutSurroundingSpace(line);
        if (text.empty()) continue;
        const std::optional<float> value = parseFp32Text(text);
        if (!value) {
            err << "line " << lineNumber << ": cannot parse '" << text
                << "': expected a decimal number or 0x followed by 8 hex digits\n";
            return 2;
        }
        out << convertLine(f, *value) << '\n';
    }
    // getline stops at the end of the input or on a read error (stdin is a folder: EISDIR).
    if (in.bad()) {
        err << "cannot read the input (standard input is not a readable file or stream)\n";
        return 2;
    }
    return 0;   // plab checks that standard output took everything
}

}  // namespace plab
