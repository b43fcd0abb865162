// Errors at the engine's boundary. InputError is the user's to fix (bad data, bad
// option, malformed config): the CLI exits 2 and the app shows the sentence. Anything
// else derived from std::exception is a failure of ours (exit 1).
#pragma once

#include <stdexcept>
#include <string>

namespace plab {

class InputError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

}  // namespace plab
