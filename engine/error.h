// Errors at the engine's boundary. InputError is the user's to fix (bad data, bad
// option, malformed config): the CLI exits 2 and the app shows the sentence. Anything
// else derived from std::exception is a failure of ours (exit 1).
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
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

}  // namespace plab
