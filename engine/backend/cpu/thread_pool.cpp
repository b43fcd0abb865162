// Persistent worker threads with dynamic chunking for the CPU backend's parallel loops.
#include "backend/cpu/thread_pool.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace plab::cpu {

namespace {
// How long a thread spins for the next loop (a worker) or for the workers to finish one
// (the caller) before it sleeps on the condition variable: 50 microseconds, or
// PLAB_POOL_SPIN_US (0 to 10,000; 0 sleeps at once) when the process starts.
std::chrono::microseconds spinTime()
{
    static const std::chrono::microseconds time = [] {
        const char* v = std::getenv("PLAB_POOL_SPIN_US");
        char* end = nullptr;
        const long n = v ? std::strtol(v, &end, 10) : -1;
        return std::chrono::microseconds(v && *v && end && *end == '\0' && n >= 0 && n <= 10000 ? n : 50);
    }();
    return time;
}

template <typename Done>
void spinUntil(Done done)
{
    const auto spin = spinTime();
    if (spin.count() == 0) return;
    const auto until = std::chrono::steady_clock::now() + spin;
    for (int i = 0; !done(); ++i) {
#if defined(__x86_64__) || defined(__i386__)
        _mm_pause();
#endif
        if ((i & 63) == 63 && std::chrono::steady_clock::now() > until) return;
    }
}
}  // namespace

ThreadPool::ThreadPool(int threads)
{
    for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { workerLoop(); });
}

ThreadPool::~ThreadPool()
{
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
        postedGeneration_.store(++generation_, std::memory_order_release);
    }
    wake_.notify_all();
    for (auto& t : workers_) t.join();
}

void ThreadPool::runChunks()
{
    for (;;) {
        const std::int64_t begin = next_.fetch_add(chunk_, std::memory_order_relaxed);
        if (begin >= n_) return;
        const std::int64_t end = std::min(n_, begin + chunk_);
        try {
            (*body_)(begin, end);
        } catch (...) {
            std::lock_guard lock(errorMutex_);
            if (!error_) error_ = std::current_exception();
        }
    }
}

void ThreadPool::workerLoop()
{
    std::uint64_t seen = 0;
    for (;;) {
        spinUntil([&] { return postedGeneration_.load(std::memory_order_acquire) != seen; });
        {
            std::unique_lock lock(mutex_);
            wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
            if (stopping_) return;
            seen = generation_;
            // A loop whose caller has already returned (it saw no busy worker and cleared
            // body_) is not joined: the next loop may reset the counter at any moment, and
            // a chunk taken from it here would run twice, or with the old body.
            if (!body_) continue;
            postedBusy_.store(++busyWorkers_, std::memory_order_release);
        }
        runChunks();
        {
            std::lock_guard lock(mutex_);
            postedBusy_.store(--busyWorkers_, std::memory_order_release);
        }
        done_.notify_one();
    }
}

void ThreadPool::parallelFor(std::int64_t n, std::int64_t grain,
                             const std::function<void(std::int64_t, std::int64_t)>& body)
{
    if (n <= 0) return;
    grain = std::max<std::int64_t>(grain, 1);
    if (workers_.empty() || n < 2 * grain) {
        body(0, n);
        return;
    }
    // About four chunks per thread: small enough to rebalance when one core is busy,
    // large enough that the counter is not contended.
    const std::int64_t pieces = std::min<std::int64_t>(n / grain, 4 * threads());
    {
        std::lock_guard lock(mutex_);
        body_ = &body;
        n_ = n;
        chunk_ = (n + pieces - 1) / pieces;
        next_.store(0, std::memory_order_relaxed);
        error_ = nullptr;
        postedGeneration_.store(++generation_, std::memory_order_release);
    }
    wake_.notify_all();
    runChunks();
    spinUntil([&] { return postedBusy_.load(std::memory_order_acquire) == 0; });
    {
        // A worker that has not woken yet finds no chunk left and leaves at once.
        std::unique_lock lock(mutex_);
        done_.wait(lock, [&] { return busyWorkers_ == 0; });
        body_ = nullptr;
    }
    if (error_) std::rethrow_exception(error_);
}

}  // namespace plab::cpu
