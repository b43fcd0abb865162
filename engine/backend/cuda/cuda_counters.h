// Deferred host counters. Ops that count (rounding statistics and histograms, optimizer
// update counts) add into device slots of one arena per step instead of copying their
// counts back and waiting; the backend remembers which host struct each slot block belongs
// to, and flush() copies the used part of the arena back once, waits once, adds into the
// host structs, and zeroes the arena for the next step. A host struct used by several ops
// in one step shares one slot block, so an arena never grows beyond the number of distinct
// structs, even when a caller flushes rarely. State changes only after the CUDA calls
// behind it were enqueued: a call that throws leaves the pending counts as they were.
#pragma once

#include "backend/cuda/cuda_resources.h"
#include "numerics/rounding_stats.h"
#include "numerics/update_math.h"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace plab::cuda {

class CounterArena {
public:
    CounterArena(cudaStream_t stream, cudaMemPool_t pool);

    // Device slots (kCounterSlots, zero until flush) that a rounding kernel adds its counts
    // to for (stats, hist), either of which may be null.
    unsigned long long* roundingSlots(RoundingStats* stats, GradientHistogram* hist);
    // After the kernel given roundingSlots(stats, hist) was launched: `elements` more are
    // added to stats->count at flush (the host knows n). Called only once the launch
    // succeeded, so a failed launch counts nothing.
    void addElements(RoundingStats* stats, GradientHistogram* hist, std::size_t elements);
    // Device slots (kUpdateSlots) for an optimizer update's counts.
    unsigned long long* updateSlots(UpdateCounts* counts);

    bool pending() const { return !blocks_.empty(); }
    // Delivers every pending count into its host struct; returns at once when none is
    // pending. A throw delivers nothing and keeps the counts pending.
    void flush();

private:
    // One slot block and the host struct(s) it is added to.
    struct Block {
        RoundingStats* stats = nullptr;
        GradientHistogram* hist = nullptr;
        UpdateCounts* update = nullptr;
        std::size_t offset = 0;          // first slot in the arena
        std::uint64_t elements = 0;      // added to stats->count
    };

    Block* find(RoundingStats* stats, GradientHistogram* hist, UpdateCounts* update);
    Block& blockFor(RoundingStats* stats, GradientHistogram* hist, UpdateCounts* update, std::size_t slots);
    unsigned long long* slotsOf(const Block& b) const;
    void deliver(const Block& b, const unsigned long long* counts) const;

    cudaStream_t stream_;
    DeviceBuffer device_;    // (capacity_) counters, zero beyond used_
    PinnedBuffer host_;      // where flush() copies them
    std::size_t used_ = 0;       // slots
    std::size_t capacity_ = 0;   // slots known to be zero beyond used_ (the buffer may hold more)
    std::vector<Block> blocks_;
};

}  // namespace plab::cuda
