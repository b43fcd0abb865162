// Record locks (see record_lock.h).
#include "files/record_lock.h"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <unistd.h>

namespace plab {

namespace {

std::string hostName()
{
    char name[256] = {};
    if (::gethostname(name, sizeof name - 1) != 0) return "unknown";
    return name;
}

struct Holder {
    long pid = 0;
    std::string host;
    bool read = false;
};

Holder readHolder(const std::filesystem::path& lock)
{
    Holder h;
    std::error_code ec;
    if (!std::filesystem::is_regular_file(std::filesystem::symlink_status(lock, ec))) return h;   // never open a FIFO
    std::ifstream in(lock);
    if (in >> h.pid >> h.host) h.read = true;
    return h;
}

bool alive(const Holder& h, const std::filesystem::path& lock)
{
    if (!h.read) {   // being written this instant (taken), or left half-written long ago (gone)
        std::error_code ec;
        const auto age = std::filesystem::file_time_type::clock::now() - std::filesystem::last_write_time(lock, ec);
        return !ec && age < std::chrono::seconds(60);
    }
    if (h.host != hostName()) return true;
    if (h.pid <= 0) return false;
    return ::kill(static_cast<pid_t>(h.pid), 0) == 0 || errno == EPERM;
}

std::string describe(const Holder& h)
{
    return h.read ? "pid " + std::to_string(h.pid) + " on " + h.host : "another process";
}

}  // namespace

std::filesystem::path recordLockPath(const std::filesystem::path& record)
{
    std::string name = ".";
    name += record.filename().string();
    name += ".lock";
    return record.has_parent_path() ? record.parent_path() / name : std::filesystem::path(name);
}

std::unique_ptr<RecordLock> RecordLock::acquire(const std::filesystem::path& record, Outcome* outcome, std::string* holder,
                                                std::string* why)
{
    const std::filesystem::path lock = recordLockPath(record);
    const std::string content = std::to_string(::getpid()) + " " + hostName() + "\n";
    for (int attempt = 0; attempt < 2; ++attempt) {
        const int fd = ::open(lock.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd >= 0) {
            const bool ok = ::write(fd, content.data(), content.size()) == static_cast<ssize_t>(content.size());
            ::close(fd);
            if (!ok) {
                ::unlink(lock.c_str());
                break;
            }
            *outcome = Outcome::created;
            return std::unique_ptr<RecordLock>(new RecordLock(lock));
        }
        if (errno != EEXIST) {
            if (why) *why = std::strerror(errno);
            *outcome = Outcome::failed;
            return nullptr;
        }
        const Holder h = readHolder(lock);
        if (alive(h, lock)) {
            if (holder) *holder = describe(h);
            *outcome = Outcome::held;
            return nullptr;
        }
        ::unlink(lock.c_str());   // its writer is gone: taken over (one more try)
    }
    if (why) *why = "the lock could not be written";
    *outcome = Outcome::failed;
    return nullptr;
}

RecordLock::~RecordLock() { ::unlink(lock_.c_str()); }

bool recordWriterAlive(const std::filesystem::path& record, std::string* holder)
{
    const std::filesystem::path lock = recordLockPath(record);
    std::error_code ec;
    if (!std::filesystem::exists(std::filesystem::symlink_status(lock, ec))) return false;
    const Holder h = readHolder(lock);
    if (holder) *holder = describe(h);
    return alive(h, lock);
}

}  // namespace plab
