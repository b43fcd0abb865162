// Every output of a command checked before anything runs: a run must not train
// for an hour and then find that its weights cannot be written, or write its weights over
// its own record or over the config it was started from.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace plab {

struct NamedPath {
    std::string what;              // how the user named it: "--out", "--save-weights", "config"
    std::filesystem::path path;    // empty: not given (skipped)
};

// Throws InputError naming the flag when an output cannot be written: its folder is
// missing or not writable, it is a folder, two outputs are the same file, or an output is
// one of the inputs (the same file by any path, links followed). A device that exists
// (/dev/stdout, /dev/null) is written in place and only checked for sameness.
void checkOutputPaths(const std::vector<NamedPath>& outputs, const std::vector<NamedPath>& inputs = {});

// Whether two paths name the same file (after links and "..", whether or not it exists yet).
bool sameFile(const std::filesystem::path& a, const std::filesystem::path& b);

}  // namespace plab
