// Who is writing a run record: a lock file beside the record, ".<name>.lock",
// created exclusively (O_EXCL) and holding the writer's pid and host. It makes run ids
// unique across processes (an id is taken while its lock or its record exists, and the
// lock is created before the record and removed after it is complete), it stops two
// processes writing one record at once, and it tells a reader whether a record that says
// "running" is still being written or was left by a writer that is gone.
#pragma once

#include <filesystem>
#include <memory>
#include <string>

namespace plab {

class RecordLock {
public:
    enum class Outcome { created, held, failed };   // held: another live writer has it

    // Creates the lock of `record`. A lock left by a writer that is gone (a process of this
    // host that no longer runs) is taken over. Once created, the record's temporaries that
    // dead writers left beside it (a kill during a write) are removed. `holder` gets "pid 123 on host" when held;
    // `why` the system's reason when failed (an unwritable folder).
    static std::unique_ptr<RecordLock> acquire(const std::filesystem::path& record, Outcome* outcome,
                                               std::string* holder = nullptr, std::string* why = nullptr);
    ~RecordLock();   // removes the lock file
    RecordLock(const RecordLock&) = delete;
    RecordLock& operator=(const RecordLock&) = delete;

    const std::filesystem::path& path() const { return lock_; }

private:
    explicit RecordLock(std::filesystem::path lock) : lock_(std::move(lock)) {}
    std::filesystem::path lock_;
};

std::filesystem::path recordLockPath(const std::filesystem::path& record);

// Whether a live process holds the record's lock: a pid of this host that still runs, or
// any lock from another host (which cannot be checked from here).
bool recordWriterAlive(const std::filesystem::path& record, std::string* holder = nullptr);

}  // namespace plab
