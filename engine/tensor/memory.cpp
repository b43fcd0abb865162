// Live and peak bytes per memory category.
#include "tensor/memory.h"

#include <algorithm>

namespace plab {

std::string_view memoryCategoryName(MemoryCategory c)
{
    switch (c) {
    case MemoryCategory::weights: return "weights";
    case MemoryCategory::masterWeights: return "master_weights";
    case MemoryCategory::gradients: return "gradients";
    case MemoryCategory::activations: return "activations";
    case MemoryCategory::optimizerState: return "optimizer_state";
    case MemoryCategory::workspace: return "workspace";
    }
    return "unknown";
}

std::string_view memoryPhaseName(MemoryPhase p)
{
    return p == MemoryPhase::evaluation ? "evaluation" : "training";
}

std::optional<MemoryPhase> parseMemoryPhase(std::string_view name)
{
    if (name == "training") return MemoryPhase::training;
    if (name == "evaluation") return MemoryPhase::evaluation;
    return std::nullopt;
}

void MemoryAccountant::add(MemoryCategory c, std::int64_t bytes)
{
    std::lock_guard lock(mutex_);
    const auto i = static_cast<std::size_t>(c);
    state_.live[i] += bytes;
    state_.peak[i] = std::max(state_.peak[i], state_.live[i]);
    state_.totalLive += bytes;
    if (state_.totalLive > state_.totalPeak || !state_.peakPhase) {
        state_.totalPeak = std::max(state_.totalPeak, state_.totalLive);
        state_.peakPhase = phase_;
    }
}

void MemoryAccountant::enterPhase(MemoryPhase phase)
{
    std::lock_guard lock(mutex_);
    phase_ = phase;
}

void MemoryAccountant::samplePhase(MemoryPhase phase)
{
    std::lock_guard lock(mutex_);
    MemoryPeaks& p = state_.phasePeak[static_cast<std::size_t>(phase)];
    for (std::size_t i = 0; i < p.bytes.size(); ++i) p.bytes[i] = std::max(p.bytes[i], state_.live[i]);
    p.total = std::max(p.total, state_.totalLive);
}

void MemoryAccountant::remove(MemoryCategory c, std::int64_t bytes) { add(c, -bytes); }

MemorySnapshot MemoryAccountant::snapshot() const
{
    std::lock_guard lock(mutex_);
    return state_;
}

void MemoryAccountant::resetPeaks()
{
    std::lock_guard lock(mutex_);
    state_.peak = state_.live;
    state_.totalPeak = state_.totalLive;
    state_.peakPhase = phase_;
    state_.phasePeak = {};
}

}  // namespace plab
