// Linked into every Qt Test suite: at exit, before LeakSanitizer's check, waits (at most
// five seconds) until QtTest's watchdog thread has gone.
//
// QTest::qExec stops its watchdog with QThread::wait, which returns once the thread has said
// it finished, before the thread's own thread-specific destructors run; the last of them
// releases the thread's QThreadData (152 bytes). A suite whose main returns inside that window
// leaves the QThreadData held only by a thread LeakSanitizer no longer scans, and the
// sanitizer pass fails on a "direct leak" allocated in libQt6Core (Qt 6.4): in CI once
// (tst_plugin_loader), here 3 times in 1,600 runs of that suite four at a time.
//
// LeakSanitizer registers its check with atexit when the process starts, before any static
// constructor runs; a handler registered later runs before it.
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <thread>

namespace {

// Qt names the thread after the watchdog's object name, "QtTest Watchdog" (15 characters,
// the most a Linux thread name holds).
bool watchdogRuns()
{
    std::error_code error;
    for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", error)) {
        std::ifstream comm(task.path() / "comm");
        std::string name;
        if (std::getline(comm, name) && name == "QtTest Watchdog") return true;
    }
    return false;
}

void waitForTheWatchdog()
{
    const auto giveUp = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (watchdogRuns() && std::chrono::steady_clock::now() < giveUp)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

const int registered = std::atexit(waitForTheWatchdog);

}  // namespace
