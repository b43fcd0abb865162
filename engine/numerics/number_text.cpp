// Parsing fp32 values from text and printing shortest round-tripping decimals for the
// reduced formats. Decimals are converted with std::from_chars, which is correctly
// rounded and ignores the C locale (the GUI may set a locale with a decimal comma).
#include "numerics/number_text.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <system_error>

namespace plab {

namespace {

bool isSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v'; }

std::string_view trimmed(std::string_view s)
{
    while (!s.empty() && isSpace(s.front())) s.remove_prefix(1);
    while (!s.empty() && isSpace(s.back())) s.remove_suffix(1);
    return s;
}

bool isDigit(char c) { return c >= '0' && c <= '9'; }

std::optional<float> parseBitPattern(std::string_view hexDigits)
{
    if (hexDigits.size() != 8) return std::nullopt;
    std::uint32_t bits = 0;
    const auto [ptr, ec] = std::from_chars(hexDigits.data(), hexDigits.data() + 8, bits, 16);
    if (ec != std::errc{} || ptr != hexDigits.data() + 8) return std::nullopt;
    return floatFromBits(bits);
}

// For a decimal that from_chars matched but found out of fp32's range (so it rounds to
// 0 or to inf): whether |value| >= 1, from the position of its leading nonzero digit and
// its exponent. The text has the shape [-]digits[.digits][(e|E)[+-]digits].
bool magnitudeAtLeastOne(std::string_view s)
{
    if (!s.empty() && s.front() == '-') s.remove_prefix(1);
    long long leadingDigitPower = 0;
    bool found = false;
    std::size_t i = 0;
    std::size_t integerDigits = 0;
    while (i < s.size() && isDigit(s[i])) ++integerDigits, ++i;
    for (std::size_t k = 0; k < integerDigits && !found; ++k)
        if (s[k] != '0') found = true, leadingDigitPower = static_cast<long long>(integerDigits - 1 - k);
    if (i < s.size() && s[i] == '.') {
        ++i;
        for (long long fractionIndex = 1; i < s.size() && isDigit(s[i]); ++i, ++fractionIndex)
            if (!found && s[i] != '0') found = true, leadingDigitPower = -fractionIndex;
    }
    long long exponent = 0;
    if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
        ++i;
        bool negative = false;
        if (i < s.size() && (s[i] == '+' || s[i] == '-')) negative = (s[i++] == '-');
        for (; i < s.size() && isDigit(s[i]); ++i)
            exponent = std::min<long long>(exponent * 10 + (s[i] - '0'), 1'000'000'000LL);  // saturate
        if (negative) exponent = -exponent;
    }
    return found && leadingDigitPower + exponent >= 0;
}

std::optional<float> parseDecimal(std::string_view s)
{
    // strtod accepts a leading '+'; from_chars does not.
    if (s.size() > 1 && s.front() == '+' && s[1] != '+' && s[1] != '-') s.remove_prefix(1);
    float value = 0.0f;
    const char* end = s.data() + s.size();
    const auto [ptr, ec] = std::from_chars(s.data(), end, value, std::chars_format::general);
    if (ptr != end || s.empty()) return std::nullopt;
    if (ec == std::errc{}) return value;
    if (ec != std::errc::result_out_of_range) return std::nullopt;
    // Out of range: the correctly rounded fp32 value is +-inf or +-0.
    const bool negative = s.front() == '-';
    const float magnitude = magnitudeAtLeastOne(s) ? HUGE_VALF : 0.0f;
    return negative ? -magnitude : magnitude;
}

// A candidate decimal: digits (no leading zeros) times 10^power.
struct Decimal {
    unsigned long long digits;
    int power;
};

// Formats |d| in plain notation unless scientific is shorter (as std::to_chars does).
std::string formatDecimal(Decimal d, bool negative)
{
    std::string digits = std::to_string(d.digits);
    int power = d.power;
    while (digits.size() > 1 && digits.back() == '0') digits.pop_back(), ++power;
    const int leadExponent = power + static_cast<int>(digits.size()) - 1;

    std::string scientific = digits.substr(0, 1);
    if (digits.size() > 1) scientific.append(".").append(digits, 1);
    char exponentText[16];
    std::snprintf(exponentText, sizeof exponentText, "e%c%02d", leadExponent < 0 ? '-' : '+',
                  std::abs(leadExponent));
    scientific += exponentText;

    std::string plain;
    if (power >= 0) {
        plain = digits + std::string(static_cast<std::size_t>(power), '0');
    } else if (leadExponent >= 0) {
        const auto integerPart = static_cast<std::size_t>(leadExponent + 1);
        plain = digits.substr(0, integerPart);
        plain.append(".").append(digits, integerPart);
    } else {
        plain = "0.";
        plain.append(static_cast<std::size_t>(-leadExponent - 1), '0').append(digits);
    }
    std::string result = negative ? "-" : "";
    result += plain.size() <= scientific.size() ? plain : scientific;
    return result;
}

// Whether `text` reads back to exactly `value` in format f, by both routes (see header).
bool readsBackAs(Format f, const std::string& text, float value)
{
    double asDouble = 0.0;
    const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), asDouble);
    if (ec != std::errc{} || ptr != text.data() + text.size()) return false;
    if (bitsOf(roundDoubleTo(f, asDouble)) != bitsOf(value)) return false;
    const std::optional<float> parsed = parseFp32Text(text);
    return parsed && bitsOf(roundTo(f, *parsed)) == bitsOf(value);
}

unsigned long long powerOfTen(int n)
{
    unsigned long long p = 1;
    while (n-- > 0) p *= 10;
    return p;
}

}  // namespace

std::optional<float> parseFp32Text(std::string_view text)
{
    text = trimmed(text);
    if (text.size() >= 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X'))
        return parseBitPattern(text.substr(2));
    return parseDecimal(text);
}

std::string shortestDecimal(Format f, float value)
{
    value = roundTo(f, value);
    if (std::isnan(value)) return "nan";
    const bool negative = std::signbit(value);
    if (std::isinf(value)) return negative ? "-inf" : "inf";
    if (value == 0.0f) return negative ? "-0" : "0";

    const double magnitude = std::fabs(static_cast<double>(value));
    for (int precision = 1; precision <= 17; ++precision) {
        // The nearest decimal with `precision` significant digits, from glibc's exact printf.
        char text[64];
        std::snprintf(text, sizeof text, "%.*e", precision - 1, magnitude);
        unsigned long long digits = 0;
        const char* p = text;
        for (; *p != 'e'; ++p)
            if (isDigit(*p)) digits = digits * 10 + static_cast<unsigned>(*p - '0');
        const int power = std::atoi(p + 1) - (precision - 1);
        // Where the rounding interval is lopsided (at a power of two), the nearest decimal
        // may miss it while a neighbour one unit away fits: try those too, nearer first.
        const double unit = std::pow(10.0, power);
        const double nearest = static_cast<double>(digits) * unit;
        const bool belowFirst = nearest > magnitude;
        const unsigned long long lowest = powerOfTen(precision - 1);
        const unsigned long long highest = powerOfTen(precision) - 1;
        for (long long delta : {0LL, belowFirst ? -1LL : 1LL, belowFirst ? 1LL : -1LL}) {
            const unsigned long long candidate = digits + static_cast<unsigned long long>(delta);
            if (candidate < lowest || candidate > highest) continue;  // other length: tried elsewhere
            const std::string result = formatDecimal({candidate, power}, negative);
            if (readsBackAs(f, result, value)) return result;
        }
    }
    // Unreachable: 9 significant digits identify every fp32 value, hence every f value.
    char text[64];
    std::snprintf(text, sizeof text, "%.9g", static_cast<double>(value));
    return text;
}

}  // namespace plab
