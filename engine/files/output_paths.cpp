// Outputs checked before a run starts (see output_paths.h).
#include "files/output_paths.h"

#include "error.h"

#include <unistd.h>

namespace plab {

namespace fs = std::filesystem;

bool sameFile(const fs::path& a, const fs::path& b)
{
    std::error_code ec;
    if (fs::exists(a, ec) && fs::exists(b, ec)) return fs::equivalent(a, b, ec);
    const fs::path ca = fs::weakly_canonical(fs::absolute(a, ec), ec);
    const fs::path cb = fs::weakly_canonical(fs::absolute(b, ec), ec);
    return ca.lexically_normal() == cb.lexically_normal();
}

void checkOutputPaths(const std::vector<NamedPath>& outputs, const std::vector<NamedPath>& inputs)
{
    for (std::size_t i = 0; i < outputs.size(); ++i) {
        const NamedPath& out = outputs[i];
        if (out.path.empty()) continue;
        const std::string named = out.what + " " + quotedExcerpt(out.path.string(), 200);
        std::error_code ec;
        const auto status = fs::status(out.path, ec);
        if (fs::is_directory(status)) throw InputError(named + ": it is a folder, not a file");
        if (fs::exists(status) && !fs::is_regular_file(status)) continue;   // a device, written in place
        {
            const fs::path folder = out.path.has_parent_path() ? out.path.parent_path() : fs::path(".");
            if (!fs::is_directory(folder, ec))
                throw InputError(named + ": the folder " + quotedExcerpt(folder.string(), 200) + " does not exist");
            if (::access(folder.c_str(), W_OK | X_OK) != 0)
                throw InputError(named + ": the folder " + quotedExcerpt(folder.string(), 200) + " is not writable");
            if (fs::exists(status) && ::access(out.path.c_str(), W_OK) != 0)
                throw InputError(named + ": the file exists and is not writable");
        }
        for (std::size_t j = 0; j < i; ++j)
            if (!outputs[j].path.empty() && sameFile(outputs[j].path, out.path))
                throw InputError(named + " is the same file as " + outputs[j].what + ": one would overwrite the other");
        for (const NamedPath& in : inputs)
            if (!in.path.empty() && sameFile(in.path, out.path))
                throw InputError(named + " is the same file as " + in.what + ", which the run reads: it would be overwritten");
    }
}

}  // namespace plab
