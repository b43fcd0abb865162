// Record locks (see record_lock.h).
#include "files/record_lock.h"

#include <algorithm>
#include <cctype>
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

namespace {

// Every writer of a record holds its lock, so once the lock is ours, a temporary of this
// record beside it (".<name>.XXXXXX.tmp": writeFileAtomically's and the probe's) is a dead
// writer's, left by a kill during a write: it is removed (it was never read as a record).
void removeStaleTemporaries(const std::filesystem::path& record)
{
    const std::string prefix = "." + record.filename().string() + ".";
    const std::filesystem::path folder = record.has_parent_path() ? record.parent_path() : std::filesystem::path(".");
    std::error_code ec;
    for (std::filesystem::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (name.size() != prefix.size() + 6 + 4 || name.compare(0, prefix.size(), prefix) != 0 ||
            name.compare(name.size() - 4, 4, ".tmp") != 0)
            continue;
        const std::string middle = name.substr(prefix.size(), 6);
        if (!std::all_of(middle.begin(), middle.end(), [](unsigned char c) { return std::isalnum(c); })) continue;
        std::error_code kind;
        if (it->is_regular_file(kind) && !it->is_symlink(kind)) std::filesystem::remove(it->path(), kind);
    }
}

}  // namespace

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
            removeStaleTemporaries(record);
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
