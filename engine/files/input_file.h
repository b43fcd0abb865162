// Reading a file that may come from someone else (a lesson, a record, weights, batches, a
// config, the data set): only a regular file is opened, and never more than a stated
// number of bytes is read. A FIFO, a device (/dev/zero, /dev/stdin), a socket or a folder
// is refused by name instead of blocking forever or filling memory; the open itself is
// non-blocking, so a FIFO swapped in after the check cannot hang the reader either.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace plab {

// An open file descriptor, closed with the object.
class InputFd {
public:
    explicit InputFd(int fd = -1) : fd_(fd) {}
    InputFd(InputFd&& other) noexcept : fd_(other.release()) {}
    InputFd& operator=(InputFd&& other) noexcept;
    InputFd(const InputFd&) = delete;
    InputFd& operator=(const InputFd&) = delete;
    ~InputFd();
    int get() const { return fd_; }
    int release() { const int fd = fd_; fd_ = -1; return fd; }

private:
    int fd_;
};

// Opens `file` for reading when it is a regular file (symbolic links followed); throws
// InputError "<origin>: <why>" otherwise: no such file, a folder, a FIFO, a device, a
// socket, or the open failed (with the system's reason). `size` gets the file's size.
InputFd openRegularFile(const std::filesystem::path& file, const std::string& origin, std::uint64_t* size = nullptr);

// The whole file, opened as above, when it holds at most `maxBytes`; InputError naming
// the size and the limit otherwise. The limit is checked again while reading (a file
// that grows meanwhile).
std::string readRegularFile(const std::filesystem::path& file, const std::string& origin, std::uint64_t maxBytes);

// "12 MiB", "3.1 GiB", "512 bytes": a size as messages say it.
std::string byteSizeText(std::uint64_t bytes);

}  // namespace plab
