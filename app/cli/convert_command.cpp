// `plab convert --format fp16|bf16|tf32`: reads numbers line by line, rounds them to a
// format and prints value, bits and class, tab-separated.
#include "convert_command.h"

#include "commands.h"
#include "numerics/format.h"
#include "numerics/number_text.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <optional>
#include <string_view>

namespace plab::cli {

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

void addConvertCommand(CLI::App& app, std::function<int()>& run)
{
    auto* cmd = app.add_subcommand("convert",
        "Round numbers read from stdin (one per line: a decimal, or 0x + 8 hex digits of an "
        "fp32 pattern) to a format; prints value, bits and class, tab-separated");
    auto format = std::make_shared<std::string>();
    cmd->add_option("--format", *format, "Target format")
        ->required()
        ->check(CLI::IsMember({"fp16", "bf16", "tf32"}));
    cmd->callback([&run, format] {
        run = [format]() -> int {
            const int status = runConvertCommand(*parseFormat(*format), std::cin, std::cout, std::cerr);
            // std::cin reports a failed read of stdin (a folder: EISDIR) as its end; stdio keeps the error.
            if (status == 0 && std::ferror(stdin)) {
                std::cerr << "plab: convert: cannot read standard input (" << std::strerror(errno) << ")\n";
                return kExitBadInput;
            }
            return status;
        };
    });
}

}  // namespace plab::cli
