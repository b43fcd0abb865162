// `plab convert --format fp16|bf16|tf32|e4m3|e5m2|fp6-e2m3|fp6-e3m2|fp4-e2m1`: reads
// numbers line by line, rounds them to a format and prints value, bits and class,
// tab-separated. `--format mxfp8|mxfp8-e5m2|mxfp6-e2m3|mxfp6-e3m2|mxfp4`: each line is
// one MX block; prints its shared scale, then each number's value, element and bits.
// `--format nvfp4`: each line is one NVFP4 block of a tensor whose amax is the line's own
// or --tensor-amax; prints the tensor scale, the block scale, then the numbers as MX.
#include "convert_command.h"

#include "commands.h"
#include "numerics/format.h"
#include "numerics/number_text.h"
#include "numerics/quantize.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <algorithm>
#include <functional>
#include <iostream>
#include <optional>
#include <string_view>
#include <vector>

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
    // As it is stored: 16 bits for fp16 and bf16, tf32 in its fp32 container.
    char text[16];
    std::snprintf(text, sizeof text, "0x%0*x", 2 * formatInfo(f).storageBytes, unsigned{storedBits(f, rounded)});
    return text;
}

// Calls convert(line without surrounding space, its number) for every line that is not
// blank; stops at the first non-zero status. 2 when the input cannot be read.
int forEachLine(std::istream& in, std::ostream& err, const std::function<int(std::string_view, long long)>& convert)
{
    std::string line;
    for (long long lineNumber = 1; std::getline(in, line); ++lineNumber) {
        const std::string_view text = withoutSurroundingSpace(line);
        if (text.empty()) continue;
        if (const int status = convert(text, lineNumber); status != 0) return status;
    }
    // getline stops at the end of the input or on a read error (stdin is a folder: EISDIR).
    if (in.bad()) {
        err << "cannot read the input (standard input is not a readable file or stream)\n";
        return 2;
    }
    return 0;   // plab checks that standard output took everything
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

std::string convertMiniLine(MiniFormat f, Overflow overflow, float input)
{
    const auto bits = encodeMini(f, input, overflow);
    if (!bits) return "nan\tnone\tnot representable";
    const float value = decodeMini(f, *bits);
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02x", unsigned{*bits});
    const MiniFormatInfo& info = miniFormatInfo(f);
    const char* kind = std::isnan(value)                                     ? "nan"
                       : std::isinf(value)                                   ? "inf"
                       : value == 0.0f                                       ? "zero"
                       : std::fabs(value) < std::ldexp(1.0f, info.minNormalLog2) ? "subnormal"
                                                                              : "normal";
    std::string line = shortestDecimal(Format::fp32, value);
    line += '\t';
    line += hex;
    line += '\t';
    line += kind;
    return line;
}

int runConvertCommand(Format f, std::istream& in, std::ostream& out, std::ostream& err)
{
    return runConvertCommand([f](float x) { return convertLine(f, x); }, in, out, err);
}

int runConvertCommand(const std::function<std::string(float)>& lineOf, std::istream& in, std::ostream& out,
                      std::ostream& err)
{
    return forEachLine(in, err, [&](std::string_view text, long long lineNumber) {
        const std::optional<float> value = parseFp32Text(text);
        if (!value) {
            err << "line " << lineNumber << ": cannot parse '" << text
                << "': expected a decimal number or 0x followed by 8 hex digits\n";
            return 2;
        }
        out << lineOf(*value) << '\n';
        return 0;
    });
}

namespace {

// Runs `onBlock` on the numbers of each line that has some (at most `most`, separated by
// spaces or commas); 2 with `err` naming the line for a bad number or too many of them.
int forEachBlockLine(std::istream& in, std::ostream& err, std::size_t most, std::string_view what,
                     const std::function<void(const std::vector<float>&)>& onBlock)
{
    return forEachLine(in, err, [&](std::string_view text, long long lineNumber) {
        std::vector<float> block;
        std::string_view rest = text;
        while (true) {
            const auto start = rest.find_first_not_of(" \t\r\n\f\v,");
            if (start == std::string_view::npos) break;
            rest.remove_prefix(start);
            const auto end = std::min(rest.find_first_of(" \t\r\n\f\v,"), rest.size());
            const std::string_view word = rest.substr(0, end);
            const std::optional<float> value = parseFp32Text(word);
            if (!value) {
                err << "line " << lineNumber << ": cannot parse '" << word
                    << "': expected decimal numbers or 0x followed by 8 hex digits, separated by spaces or commas\n";
                return 2;
            }
            block.push_back(*value);
            rest.remove_prefix(end);
        }
        if (block.empty()) return 0;   // only separators
        if (block.size() > most) {
            err << "line " << lineNumber << ": " << what << " holds at most " << most << " numbers, got "
                << block.size() << '\n';
            return 2;
        }
        onBlock(block);
        return 0;
    });
}

std::string bitsText(std::optional<std::uint8_t> pattern)
{
    if (!pattern) return "none";
    char bits[8];
    std::snprintf(bits, sizeof bits, "0x%02x", unsigned{*pattern});
    return bits;
}

}  // namespace

int runMxConvertCommand(MiniFormat element, std::istream& in, std::ostream& out, std::ostream& err)
{
    return forEachBlockLine(in, err, kMxBlockSize, "an MX block", [&](const std::vector<float>& block) {
        const MxBlock b = mxQuantize(element, block.data(), block.size());
        out << "scale\t" << (b.nanScale ? std::string("nan") : "2^" + std::to_string(b.scaleExponent)) << '\t'
            << bitsText(b.scaleBits()) << '\n';
        for (std::size_t i = 0; i < block.size(); ++i)
            out << shortestDecimal(Format::fp32, b.value(i)) << '\t' << shortestDecimal(Format::fp32, b.elements[i])
                << '\t' << bitsText(encodeMini(element, b.elements[i], Overflow::saturate)) << '\n';
    });
}

int runNvfp4ConvertCommand(std::optional<float> tensorAmax, std::istream& in, std::ostream& out, std::ostream& err)
{
    return forEachBlockLine(in, err, kNvfp4BlockSize, "an NVFP4 block", [&](const std::vector<float>& block) {
        const float amax = tensorAmax ? *tensorAmax : amaxOf(block.data(), block.size());
        const Nvfp4Block b = nvfp4Quantize(block.data(), block.size(), nvfp4TensorScale(amax));
        out << "tensor scale\t" << shortestDecimal(Format::fp32, b.tensorScale) << '\n';
        out << "block scale\t" << shortestDecimal(Format::fp32, b.blockScale) << '\t' << bitsText(b.scaleBits)
            << '\n';
        for (std::size_t i = 0; i < block.size(); ++i)
            out << shortestDecimal(Format::fp32, b.value(i)) << '\t' << shortestDecimal(Format::fp32, b.elements[i])
                << '\t' << bitsText(encodeMini(MiniFormat::e2m1, b.elements[i], Overflow::saturate)) << '\n';
    });
}

void addConvertCommand(CLI::App& app, std::function<int()>& run)
{
    auto* cmd = app.add_subcommand("convert",
        "Round numbers read from stdin (one per line: a decimal, or 0x + 8 hex digits of an "
        "fp32 pattern) to a format; prints value, bits and class, tab-separated");
    auto format = std::make_shared<std::string>();
    auto saturate = std::make_shared<bool>(false);
    // The formats' tables (fp32 rounds nothing), then the block formats.
    std::vector<std::string> targets;
    for (const FormatInfo& f : formats())
        if (f.format != Format::fp32) targets.emplace_back(f.name);
    for (const MiniFormatInfo& f : miniFormats()) targets.emplace_back(f.name);
    for (const MxFormatInfo& f : mxFormats()) targets.emplace_back(f.name);
    targets.emplace_back("nvfp4");
    cmd->add_option("--format", *format, "Target format")->required()->check(CLI::IsMember(targets));
    cmd->add_flag("--saturate", *saturate,
                  "Below 16 bits: a value too large saturates to the largest finite value (default: E5M2 gives "
                  "inf and E4M3 NaN, as OFP8's non-saturating mode; FP6 and FP4 always saturate)");
    auto tensorAmax = std::make_shared<std::optional<float>>();
    cmd->add_option_function<float>(
           "--tensor-amax", [tensorAmax](float v) { *tensorAmax = v; },
           "NVFP4: the amax of the whole tensor the blocks belong to, which sets the tensor scale 448 * 6 / amax "
           "(default: each line's own)")
        ->check(CLI::Validator(
            [](std::string& text) -> std::string {
                const std::optional<float> v = parseFp32Text(text);
                if (v && std::isfinite(*v) && *v > 0.0f) return {};
                return "must be a positive finite number (an fp32 value), got '" + text + "'";
            },
            "AMAX"));
    cmd->callback([&run, format, saturate, tensorAmax] {
        run = [format, saturate, tensorAmax]() -> int {
            // MX block formats: each input line is one block (OCP MX v1.0).
            const auto mx = std::find_if(mxFormats().begin(), mxFormats().end(),
                                         [&](const MxFormatInfo& f) { return f.name == *format; });
            int status = 0;
            if (tensorAmax->has_value() && *format != "nvfp4") {
                std::cerr << "plab: convert: --tensor-amax applies to --format nvfp4 only\n";
                return kExitBadInput;
            }
            if (*format == "nvfp4") {
                status = runNvfp4ConvertCommand(*tensorAmax, std::cin, std::cout, std::cerr);
            } else if (mx != mxFormats().end()) {
                status = runMxConvertCommand(mx->element, std::cin, std::cout, std::cerr);
            } else if (const auto mini = parseMiniFormat(*format)) {
                const Overflow overflow = *saturate ? Overflow::saturate : Overflow::nonFinite;
                status = runConvertCommand([f = *mini, overflow](float x) { return convertMiniLine(f, overflow, x); },
                                           std::cin, std::cout, std::cerr);
            } else {
                status = runConvertCommand(*parseFormat(*format), std::cin, std::cout, std::cerr);
            }
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
