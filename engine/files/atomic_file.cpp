// Files written whole: a temporary beside the target, every write checked, fsync, rename.
#include "files/atomic_file.h"

#include <cerrno>
#include <cstring>
#include <cstdlib>
#include <fcntl.h>
#include <sys/stat.h>
#include <stdexcept>
#include <string>
#include <unistd.h>

namespace plab {

namespace {

// Writes all of `bytes` to fd; 0, or the errno of the write that failed (ENOSPC when the
// disk took nothing more).
int writeAll(int fd, std::string_view bytes, std::size_t& done)
{
    done = 0;
    while (done < bytes.size()) {
        const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return n < 0 ? errno : ENOSPC;
        done += static_cast<std::size_t>(n);
    }
    return 0;
}

}  // namespace

void writeFileAtomically(const std::filesystem::path& file, std::string_view bytes)
{
    auto error = [&](const std::string& what, int err) {
        return std::runtime_error("cannot write " + file.string() + ": " + what + " (" + std::strerror(err) + ")");
    };
    std::size_t done = 0;
    // A device or pipe (/dev/stdout, /dev/full) is written in place, never replaced by a file.
    std::error_code ec;
    const auto status = std::filesystem::status(file, ec);
    if (!ec && std::filesystem::exists(status) && !std::filesystem::is_regular_file(status)) {
        if (std::filesystem::is_directory(status)) throw std::runtime_error("cannot write " + file.string() + ": it is a folder");
        const int out = ::open(file.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
        if (out < 0) throw error("cannot open it", errno);
        const int err = writeAll(out, bytes, done);
        if (::close(out) != 0 && err == 0) throw error("closing failed", errno);
        if (err != 0) throw error("it took " + std::to_string(done) + " of " + std::to_string(bytes.size()) + " bytes", err);
        return;
    }
    const auto dir = file.has_parent_path() ? file.parent_path() : std::filesystem::path(".");
    // A temporary of this writer's own (mkostemps: a unique name, created exclusively): two
    // processes writing the same file at once each rename a whole file, the last one wins,
    // and neither finds its temporary taken or removed by the other.
    std::string tmpName = ".";   // appended, not "." + ...: g++ 12 warns falsely there (-Wrestrict, PR 105329)
    tmpName += file.filename().string();
    tmpName += ".XXXXXX.tmp";
    std::string tmpPath = (dir / tmpName).string();
    const int fd = ::mkostemps(tmpPath.data(), 4, O_CLOEXEC);
    const std::filesystem::path tmp = tmpPath;
    auto fail = [&](const std::string& what, int err) {
        std::error_code ignored;
        std::filesystem::remove(tmp, ignored);   // never leave a partial temporary behind
        throw error(what, err);
    };
    if (fd < 0) {
        const int err = errno;
        throw error("cannot create a file in " + dir.string(), err);
    }
    ::fchmod(fd, 0644);   // mkostemps makes it 0600; a record or a report is readable like any file
    if (const int err = writeAll(fd, bytes, done); err != 0) {
        ::close(fd);
        fail("the disk took " + std::to_string(done) + " of " + std::to_string(bytes.size()) + " bytes", err);
    }
    // On the disk before it replaces the old file: a crash then leaves one or the other whole.
    if (::fsync(fd) != 0) {
        const int err = errno;
        ::close(fd);
        fail("flushing to disk failed", err);
    }
    if (::close(fd) != 0) {
        const int err = errno;
        fail("closing failed", err);
    }
    if (::rename(tmp.c_str(), file.c_str()) != 0) {
        const int err = errno;
        fail("cannot replace it", err);
    }
    // The rename itself on the disk too (best effort: some filesystems refuse fsync on folders).
    if (const int dirFd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dirFd >= 0) {
        ::fsync(dirFd);
        ::close(dirFd);
    }
}

}  // namespace plab
