// Errors at the engine's boundary. InputError is the user's to fix (bad data, bad
// option, malformed config): the CLI exits 2 and the app shows the sentence. Anything
// else derived from std::exception is a failure of ours (exit 1).
#pragma once

#include <algorithm>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace plab {

class InputError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// The choices a message offers, as a sentence reads them: "a, b or c" ("a" alone).
inline std::string alternatives(const std::vector<std::string>& names)
{
    std::string out;
    for (std::size_t i = 0; i < names.size(); ++i)
        out += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
    return out;
}

// The name of `names` nearest to `typed` by edit distance (one insertion, deletion,
// substitution or swap of neighbours each), when it is near enough to be a typo (at most 2
// edits, and fewer than a third of the name); empty otherwise. For "did you mean" in messages.
inline std::string nearestName(std::string_view typed, const std::vector<std::string>& names)
{
    std::string best;
    std::size_t bestDistance = 3;
    for (const std::string& name : names) {
        // Damerau-Levenshtein (optimal string alignment) over three rows.
        const std::size_t n = typed.size(), m = name.size();
        std::vector<std::size_t> before(m + 1), previous(m + 1), current(m + 1);
        for (std::size_t j = 0; j <= m; ++j) previous[j] = j;
        for (std::size_t i = 1; i <= n; ++i) {
            current[0] = i;
            for (std::size_t j = 1; j <= m; ++j) {
                const std::size_t cost = typed[i - 1] == name[j - 1] ? 0 : 1;
                current[j] = std::min({previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost});
                if (i > 1 && j > 1 && typed[i - 1] == name[j - 2] && typed[i - 2] == name[j - 1])
                    current[j] = std::min(current[j], before[j - 2] + 1);
            }
            before.swap(previous);
            previous.swap(current);
        }
        const std::size_t distance = previous[m];
        if (distance < bestDistance && distance * 3 < std::max<std::size_t>(name.size(), 3)) {
            bestDistance = distance;
            best = name;
        }
    }
    return best;
}

// " (did you mean 'x'?)" for nearestName, or nothing.
inline std::string didYouMean(std::string_view typed, const std::vector<std::string>& names)
{
    const std::string near = nearestName(typed, names);
    return near.empty() || near == typed ? std::string() : " (did you mean '" + near + "'?)";
}

// A value from a file or a command line as a message quotes it: in double quotes, with
// control characters, backslashes and quotes escaped (\n, \x1b, \"), and cut after
// `maxChars` bytes of the value (at a UTF-8 boundary, then "…"). A 5,000-character value or
// a terminal escape in a lesson never reaches the terminal or a dialog raw.
inline std::string quotedExcerpt(std::string_view value, std::size_t maxChars = 60)
{
    std::string out = "\"";
    std::size_t i = 0;
    for (; i < value.size() && i < maxChars; ++i) {
        const auto c = static_cast<unsigned char>(value[i]);
        if (c == '\n') out += "\\n";
        else if (c == '\t') out += "\\t";
        else if (c == '"' || c == '\\') (out += '\\') += static_cast<char>(c);
        else if (c < 0x20 || c == 0x7f) {
            static constexpr char hex[] = "0123456789abcdef";
            ((out += "\\x") += hex[c >> 4]) += hex[c & 15];
        } else out += static_cast<char>(c);
    }
    if (i < value.size()) {
        while (!out.empty() && (static_cast<unsigned char>(out.back()) & 0xC0) == 0x80) out.pop_back();   // a cut character
        if (!out.empty() && (static_cast<unsigned char>(out.back()) & 0xC0) == 0xC0) out.pop_back();
        out += "…";
    }
    return out + "\"";
}

// Whether `value` holds a control character (a newline, an escape, DEL).
inline bool hasControlCharacter(std::string_view value)
{
    for (const char ch : value) {
        const auto c = static_cast<unsigned char>(ch);
        if (c < 0x20 || c == 0x7f) return true;
    }
    return false;
}

}  // namespace plab
