// The memory a run will need, checked before its first step (issue 37): a batch the
// machine cannot hold is refused with the estimate and the largest batch that fits,
// instead of growing until the kernel kills the process with no message.
#pragma once

#include "train/settings.h"

#include <cstdint>
#include <string>

namespace plab {

struct MemoryEstimate {
    std::int64_t fixedBytes = 0;       // weights, gradients, optimizer state, master copies
    std::int64_t perSampleBytes = 0;   // activations kept for backward, per sample
    std::int64_t bytesAt(std::int64_t batch) const { return fixedBytes + perSampleBytes * batch; }
};

// From the engine's own accounting (Model::parameters, activationBytesPerSample): every
// tensor at 4 bytes an element, as the CPU backend holds them without 16-bit packing (with
// PLAB_PACKED_STORAGE=on: Model::packedHeldBytesPerSample), and Adam's two moments. A lower bound of what the process takes: the check refuses only runs that
// cannot fit, never one that would.
MemoryEstimate estimateRunMemory(const TrainSettings& settings);

// The memory this machine has free for a run: MemAvailable of /proc/meminfo, 0 when unknown.
std::int64_t availableMemoryBytes();

// Empty, or one sentence refusing the run: its estimate exceeds `limitBytes` (the
// available memory, or --memory-limit when smaller), with the largest batch that fits.
// `limitName` says which limit ("the 23.4 GiB this machine has available").
std::string checkRunMemory(const TrainSettings& settings, std::int64_t limitBytes, const std::string& limitName);

// Checks against the available memory and, when > 0, `memoryLimitBytes`. Used by plab
// train, sweep, lesson and the app before a run's first step.
std::string checkRunMemory(const TrainSettings& settings, std::int64_t memoryLimitBytes = 0);

}  // namespace plab
