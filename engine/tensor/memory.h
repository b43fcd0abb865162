// Memory accounting by category: live and peak bytes of what the engine holds, counted
// in the bytes of the modelled storage format (an fp16 tensor counts 2 bytes an element
// even though the CPU backend holds its values in fp32).
#pragma once

#include <array>
#include <cstdint>
#include <mutex>
#include <optional>
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
std::string_view memoryPhaseName(MemoryPhase p);   // "training", "evaluation"
std::optional<MemoryPhase> parseMemoryPhase(std::string_view name);

struct MemoryPeaks {
    std::array<std::int64_t, kMemoryCategories> bytes{};
    std::int64_t total = 0;        // peak of the sum, not the sum of peaks
    bool operator==(const MemoryPeaks&) const = default;
};

struct MemorySnapshot {
    std::array<std::int64_t, kMemoryCategories> live{};
    std::array<std::int64_t, kMemoryCategories> peak{};
    std::int64_t totalLive = 0;
    std::int64_t totalPeak = 0;    // peak of the sum, not the sum of peaks
    // The phase the engine was in when the sum reached totalPeak (MemoryAccountant::
    // enterPhase); empty in a record written before it was kept. The peak of the sum can lie
    // above both phases' peaks: those are sampled at a phase's end, the sum's at every
    // allocation (a step's temporaries, an evaluation's buffers still held as a step begins).
    std::optional<MemoryPhase> peakPhase;
    std::array<MemoryPeaks, kMemoryPhases> phasePeak{};   // indexed by MemoryPhase
    bool operator==(const MemorySnapshot&) const = default;
};

class MemoryAccountant {
public:
    void add(MemoryCategory c, std::int64_t bytes);
    void remove(MemoryCategory c, std::int64_t bytes);
    MemorySnapshot snapshot() const;
    void resetPeaks();
    // Folds what is live now into `phase`'s peaks.
    void samplePhase(MemoryPhase phase);
    // What the engine does from now on (a training step until told otherwise): the phase a
    // new peak of the sum is put down to (MemorySnapshot::peakPhase).
    void enterPhase(MemoryPhase phase);

private:
    mutable std::mutex mutex_;
    MemorySnapshot state_;
    MemoryPhase phase_ = MemoryPhase::training;
};

}  // namespace plab
