// CounterArena: the deferred host counters of one step (see cuda_counters.h).
#include "backend/cuda/cuda_counters.h"

#include "backend/cuda/cuda_status.h"
#include "backend/cuda/kernels.h"

namespace plab::cuda {

namespace {

constexpr std::size_t kSlotBytes = sizeof(unsigned long long);
// Room for a few dozen rounding sites before the first growth.
constexpr std::size_t kInitialSlots = 32 * cudakernels::kCounterSlots;

}  // namespace

CounterArena::CounterArena(cudaStream_t stream, cudaMemPool_t pool) : stream_(stream), device_(stream, pool) {}

unsigned long long* CounterArena::roundingSlots(RoundingStats* stats, GradientHistogram* hist)
{
    return slotsOf(blockFor(stats, hist, nullptr, cudakernels::kCounterSlots));
}

void CounterArena::addElements(RoundingStats* stats, GradientHistogram* hist, std::size_t elements)
{
    if (Block* b = find(stats, hist, nullptr)) b->elements += elements;
}

unsigned long long* CounterArena::updateSlots(UpdateCounts* counts)
{
    return slotsOf(blockFor(nullptr, nullptr, counts, cudakernels::kUpdateSlots));
}

CounterArena::Block* CounterArena::find(RoundingStats* stats, GradientHistogram* hist, UpdateCounts* update)
{
    for (Block& b : blocks_)
        if (b.stats == stats && b.hist == hist && b.update == update) return &b;
    return nullptr;
}

CounterArena::Block& CounterArena::blockFor(RoundingStats* stats, GradientHistogram* hist, UpdateCounts* update,
                                            std::size_t slots)
{
    if (Block* b = find(stats, hist, update)) return *b;
    if (used_ + slots > capacity_) {
        // Grow in stream order, keeping the slots that kernels already enqueued add to:
        // they finish on the old block before the copy reads it.
        std::size_t grown = capacity_ ? 2 * capacity_ : kInitialSlots;
        while (grown < used_ + slots) grown *= 2;
        auto* base = static_cast<unsigned long long*>(device_.reserve(grown * kSlotBytes, used_ * kSlotBytes));
        // A grown buffer holds only the kept slots: nothing past used_ is known to be zero
        // until the memset is enqueued (after a failure the next growth zeroes again).
        capacity_ = used_;
        const std::size_t capacity = device_.capacity() / kSlotBytes;
        PLAB_CUDA_CHECK(cudaMemsetAsync(base + used_, 0, (capacity - used_) * kSlotBytes, stream_));
        capacity_ = capacity;
    }
    Block b;
    b.stats = stats;
    b.hist = hist;
    b.update = update;
    b.offset = used_;
    blocks_.push_back(b);
    used_ += slots;
    return blocks_.back();
}

unsigned long long* CounterArena::slotsOf(const Block& b) const
{
    return static_cast<unsigned long long*>(device_.data()) + b.offset;
}

void CounterArena::flush()
{
    if (blocks_.empty()) return;
    auto* counts = host_.reserveFor<unsigned long long>(used_);
    PLAB_CUDA_CHECK(cudaMemcpyAsync(counts, device_.data(), used_ * kSlotBytes, cudaMemcpyDeviceToHost, stream_));
    PLAB_CUDA_CHECK(cudaMemsetAsync(device_.data(), 0, used_ * kSlotBytes, stream_));
    PLAB_CUDA_CHECK(cudaStreamSynchronize(stream_));
    // The counts are on the host and the arena is zero again: deliver and forget them in
    // one go (nothing below throws), so they arrive exactly once. After a throw above
    // they stay pending; the device is then in error anyway.
    for (const Block& b : blocks_) deliver(b, counts + b.offset);
    blocks_.clear();
    used_ = 0;
}

void CounterArena::deliver(const Block& b, const unsigned long long* c) const
{
    namespace ck = cudakernels;
    if (b.update) {
        b.update->nonzero += static_cast<std::int64_t>(c[ck::kUpdateNonzero]);
        b.update->lost += static_cast<std::int64_t>(c[ck::kUpdateLost]);
        b.update->nonFinite += static_cast<std::int64_t>(c[ck::kUpdateNonFinite]);
        b.update->stateFlushed += static_cast<std::int64_t>(c[ck::kUpdateStateFlushed] + c[ck::kUpdateStateFlushed2]);
        b.update->stateNonFinite +=
            static_cast<std::int64_t>(c[ck::kUpdateStateNonFinite] + c[ck::kUpdateStateNonFinite2]);
    }
    if (b.stats) {
        b.stats->count += b.elements;
        b.stats->zerosIn += c[ck::kZerosIn];
        b.stats->underflow += c[ck::kUnderflow];
        b.stats->subnormal += c[ck::kSubnormal];
        b.stats->overflow += c[ck::kOverflow];
        b.stats->nan += c[ck::kNan];
        b.stats->infIn += c[ck::kInfIn];
    }
    if (b.hist) {
        for (int bin = 0; bin < ck::kHistBins; ++bin)
            b.hist->bins[static_cast<std::size_t>(bin)] += c[ck::kHistFirst + bin];
        b.hist->zeros += c[ck::kHistZeros];
        b.hist->nonFinite += c[ck::kHistNonFinite];
    }
}

}  // namespace plab::cuda
