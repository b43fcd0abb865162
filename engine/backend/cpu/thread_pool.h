// A small persistent pool for the CPU backend's elementwise work (rounding, im2col,
// pooling) and its GEMMs' pieces. Between loops a worker spins for at most 50
// microseconds, then sleeps on a condition variable (the packed layers call loops back to
// back, and waking a sleeping thread each time cost small-cnn's packed step about a
// sixth; a core taken by another process loses no more than that spin), and chunks are
// handed out dynamically from an atomic counter, so the loop finishes at the pace of the
// threads that actually run.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace plab::cpu {

class ThreadPool {
public:
    explicit ThreadPool(int threads);   // threads including the caller's
    ~ThreadPool();
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    int threads() const { return static_cast<int>(workers_.size()) + 1; }

    // body(begin, end) over disjoint chunks covering [0, n); serial when n < 2 * grain.
    // The first exception a chunk throws is rethrown here after the loop drains.
    void parallelFor(std::int64_t n, std::int64_t grain,
                     const std::function<void(std::int64_t, std::int64_t)>& body);

private:
    void workerLoop();
    void runChunks();   // takes chunks until none are left

    std::vector<std::thread> workers_;
    std::mutex mutex_;
    std::condition_variable wake_;
    std::condition_variable done_;
    std::uint64_t generation_ = 0;   // bumped per loop, guarded by mutex_
    int busyWorkers_ = 0;            // workers inside the current loop, guarded by mutex_
    // Their values as last written under mutex_, read without it while spinning.
    std::atomic<std::uint64_t> postedGeneration_{0};
    std::atomic<int> postedBusy_{0};
    bool stopping_ = false;

    // The current loop (written before generation_ is bumped).
    const std::function<void(std::int64_t, std::int64_t)>* body_ = nullptr;
    std::int64_t n_ = 0;
    std::int64_t chunk_ = 0;
    std::atomic<std::int64_t> next_{0};
    std::exception_ptr error_;
    std::mutex errorMutex_;
};

}  // namespace plab::cpu
