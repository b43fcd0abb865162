// Regular files only, bounded reads (see input_file.h).
#include "files/input_file.h"

#include "error.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace plab {

InputFd& InputFd::operator=(InputFd&& other) noexcept
{
    if (this != &other) {
        if (fd_ >= 0) ::close(fd_);
        fd_ = other.release();
    }
    return *this;
}

InputFd::~InputFd()
{
    if (fd_ >= 0) ::close(fd_);
}

namespace {

// Why a file of this mode is not read, or empty for a regular file.
std::string notRegular(mode_t mode)
{
    if (S_ISREG(mode)) return {};
    if (S_ISDIR(mode)) return "it is a folder, not a file";
    if (S_ISFIFO(mode)) return "it is a FIFO (a named pipe), not a regular file: it is not read";
    if (S_ISCHR(mode) || S_ISBLK(mode)) return "it is a device, not a regular file: it is not read";
    if (S_ISSOCK(mode)) return "it is a socket, not a regular file: it is not read";
    return "it is not a regular file: it is not read";
}

}  // namespace

std::string byteSizeText(std::uint64_t bytes)
{
    char text[32];
    if (bytes >= (std::uint64_t{1} << 30)) std::snprintf(text, sizeof text, "%.1f GiB", static_cast<double>(bytes) / (1 << 30));
    else if (bytes >= (std::uint64_t{1} << 20)) std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
    else if (bytes >= 1024) std::snprintf(text, sizeof text, "%.1f KiB", static_cast<double>(bytes) / 1024);
    else std::snprintf(text, sizeof text, "%llu bytes", static_cast<unsigned long long>(bytes));
    return text;
}

InputFd openRegularFile(const std::filesystem::path& file, const std::string& origin, std::uint64_t* size)
{
    struct stat st {};
    if (::stat(file.c_str(), &st) != 0) {
        const int err = errno;
        if (err == ENOENT || err == ENOTDIR) throw InputError(origin + ": no such file");
        throw InputError(origin + ": cannot open it (" + std::strerror(err) + ")");
    }
    if (const std::string why = notRegular(st.st_mode); !why.empty()) throw InputError(origin + ": " + why);
    // Non-blocking: if a FIFO took the file's place since the stat, the open returns at once
    // (and fstat refuses it) instead of waiting for a writer.
    InputFd fd(::open(file.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
    if (fd.get() < 0) {
        const int err = errno;
        throw InputError(origin + ": cannot open it (" + std::strerror(err) + ")");
    }
    if (::fstat(fd.get(), &st) != 0) throw InputError(origin + ": cannot read it (" + std::strerror(errno) + ")");
    if (const std::string why = notRegular(st.st_mode); !why.empty()) throw InputError(origin + ": " + why);
    const int flags = ::fcntl(fd.get(), F_GETFL);
    if (flags >= 0) ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK);
    if (size) *size = static_cast<std::uint64_t>(st.st_size);
    return fd;
}

std::string readRegularFile(const std::filesystem::path& file, const std::string& origin, std::uint64_t maxBytes)
{
    std::uint64_t size = 0;
    const InputFd fd = openRegularFile(file, origin, &size);
    const auto tooLarge = [&](const std::string& what) {
        return InputError(origin + ": the file is too large (" + what + "; at most " + byteSizeText(maxBytes) + " are read)");
    };
    if (size > maxBytes) throw tooLarge(byteSizeText(size));
    std::string bytes;
    bytes.resize(static_cast<std::size_t>(size));
    std::size_t done = 0;
    for (;;) {
        if (done == bytes.size()) {   // the file may have grown since fstat: read on, up to the limit
            if (done > maxBytes) throw tooLarge("over " + byteSizeText(maxBytes));
            bytes.resize(static_cast<std::size_t>(std::min<std::uint64_t>(std::max<std::uint64_t>(done * 2, 4096), maxBytes + 1)));
        }
        const ssize_t n = ::read(fd.get(), bytes.data() + done, bytes.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) throw InputError(origin + ": cannot read it (" + std::strerror(errno) + ")");
        if (n == 0) break;
        done += static_cast<std::size_t>(n);
    }
    if (done > maxBytes) throw tooLarge("over " + byteSizeText(maxBytes));
    bytes.resize(done);
    return bytes;
}

}  // namespace plab
