// Memory accounting by category: live and peak bytes of what the engine holds, counted
// in the bytes of the modelled storage format (an fp16 tensor counts 2 bytes an element
// even though the CPU backend holds its values in fp32).
#pragma once

#include <array>
#include <cstdint>
#include <mutex>
#include <string_view>

namespace plab {

enum class MemoryCategory : std::uint8_t {
    weights,          // the weights the layers compute with (compute copies, or the only copy)
    masterWeights,    // fp32 master copies updated by the optimizer
    gradients,        // weight and bias gradients
    activations,      // activations kept for backward
    optimizerState,   // momentum, Adam moments
    workspace,        // scratch buffers (im2col, temporaries)
};
inline constexpr int kMemoryCategories = 6;
std::string_view memoryCategoryName(MemoryCategory c);

// What the engine is doing while memory is held: a training step, or an evaluation of
// the test set (larger batches, no gradients). Peaks are kept per phase as well as over
// the run, so a chart or lesson can tell the training step's peak from the evaluation's.
// A phase's peak is sampled when the phase's work is done (the end of a training step, of
// an evaluation): the layers keep their buffers between calls, so what is live then is
// what the phase used, and an evaluation's larger buffers, still held until the next step
// resizes them, do not count as training memory.
enum class MemoryPhase : std::uint8_t { training, evaluation };
inline constexpr int kMemoryPhases = 2;

struct MemoryPeaks {
    std::array<std::int64_t, kMemoryCategories> bytes{};
    std::int64_t total = 0;        // peak of the sum, not the sum of peaks
};

struct MemorySnapshot {
    std::array<std::int64_t, kMemoryCategories> live{};
    std::array<std::int64_t, kMemoryCategories> peak{};
    std::int64_t totalLive = 0;
    std::int64_t totalPeak = 0;    // peak of the sum, not the sum of peaks
    std::array<MemoryPeaks, kMemoryPhases> phasePeak{};   // indexed by MemoryPhase
};

class MemoryAccountant {
public:
    void add(MemoryCategory c, std::int64_t bytes);
    void remove(MemoryCategory c, std::int64_t bytes);
    MemorySnapshot snapshot() const;
    void resetPeaks();
    // Folds what is live now into `phase`'s peaks.
    void samplePhase(MemoryPhase phase);

private:
    mutable std::mutex mutex_;
    MemorySnapshot state_;
};

}  // namespace plab
