// Writing a file so that it is never left half-written: the run records, reports, CSV,
// weights, batch lists and exported lessons all go through here.
#pragma once

#include <filesystem>
#include <string_view>

namespace plab {

// Writes `bytes` to a temporary file beside `file`, checks every write, flushes it to disk
// (fsync) and renames it over `file`: afterwards `file` is the old version or the new one,
// whole. On failure the temporary is removed and std::runtime_error names the file and why.
// A device or pipe (/dev/stdout) is written in place.
void writeFileAtomically(const std::filesystem::path& file, std::string_view bytes);

}  // namespace plab
