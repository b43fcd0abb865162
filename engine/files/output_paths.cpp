// Outputs checked before a run starts (see output_paths.h).
#include "files/output_paths.h"

#include "error.h"

#include <algorithm>

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

std::string fitFileName(std::string name, std::size_t reserve, bool* cut)
{
    // Bytes of one file name on Linux's file systems (255), less what an atomic write's
    // temporary beside the file adds to its name (".<name>.XXXXXX.tmp": 12).
    constexpr std::size_t kNameMax = 255 - 12;
    const std::size_t room = kNameMax - std::min(kNameMax - 1, reserve);
    const bool cutting = name.size() > room;
    if (cutting) {
        std::size_t end = room;
        while (end > 0 && (static_cast<unsigned char>(name[end]) & 0xC0) == 0x80) --end;   // a UTF-8 boundary
        name.resize(end);
    }
    if (cut) *cut = cutting;
    return name;
}

std::string freeOutputStem(const fs::path& folder, std::string stem, const std::vector<std::string>& suffixes,
                           std::vector<std::string>& taken, bool* cut)
{
    std::size_t longest = 0;
    for (const auto& s : suffixes) longest = std::max(longest, s.size());
    stem = fitFileName(std::move(stem), longest + 8, cut);   // room for the suffix and "-NNNNNNN"
    const auto free = [&](const std::string& name) {
        if (std::find(taken.begin(), taken.end(), name) != taken.end()) return false;
        std::error_code ec;
        for (const auto& suffix : suffixes)
            if (fs::exists(fs::symlink_status(folder / (name + suffix), ec))) return false;
        return true;
    };
    std::string name = stem;
    for (int n = 2; !free(name); ++n) name = stem + "-" + std::to_string(n);
    taken.push_back(name);
    return name;
}

void makeOutputFolder(const fs::path& folder, const std::string& what)
{
    const std::string named = what + " " + quotedExcerpt(folder.string(), 200);
    std::error_code ec;
    const auto target = fs::status(folder, ec);   // where a link leads
    if (!fs::exists(target) && fs::is_symlink(fs::symlink_status(folder, ec)))
        throw InputError(named + ": it is a link to nothing (a dangling symbolic link), not a folder");
    if (fs::exists(target) && !fs::is_directory(target)) throw InputError(named + ": it is a file, not a folder");
    fs::create_directories(folder, ec);
    if (ec) throw InputError(named + ": cannot create the folder (" + ec.message() + ")");
    if (::access(folder.c_str(), W_OK | X_OK) != 0) throw InputError(named + ": the folder is not writable");
}

}  // namespace plab
