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

// `name` cut at a UTF-8 boundary so that `reserve` more bytes still fit in one file name
// (255 bytes, less the 12 an atomic write's temporary adds); `*cut` says whether it was cut.
std::string fitFileName(std::string name, std::size_t reserve, bool* cut = nullptr);

// Outputs named after text inside an input (a run's name in a report, a lesson run's id, a
// run's TensorBoard folder): that text never chooses what gets replaced. Returns a stem for
// `folder` such that no `folder/<stem><suffix>` exists for any of `suffixes` (a folder of
// that name counts too) and no earlier call with the same `taken` returned it: `stem` itself,
// else stem-2, stem-3, ... The stem is first cut to fit a file name (255 bytes) with the
// longest suffix and room for a number; `*cut` says whether it was.
std::string freeOutputStem(const std::filesystem::path& folder, std::string stem,
                           const std::vector<std::string>& suffixes, std::vector<std::string>& taken,
                           bool* cut = nullptr);

// Creates `folder` (and its parents) for outputs; throws InputError "<what> <folder>: ..."
// when it cannot: a file or a dangling link is in the way, or the system refuses.
void makeOutputFolder(const std::filesystem::path& folder, const std::string& what);

}  // namespace plab
