// Gradient accumulation over micro-batches: a step's batch split into parts, each part's
// gradients added into one buffer per parameter, the sum rounded to the buffer's format
// after every addition, as a framework's .grad of that dtype accumulates (PyTorch's
// model.half() keeps it in fp16; with fp32 parameters it is fp32). What the additions lost
// is counted as lost updates count a weight's.
#pragma once

#include "numerics/format.h"

#include <cstdint>

namespace plab {

struct AccumulationCounts {
    std::int64_t nonzero = 0;   // nonzero finite contributions added to a buffer
    std::int64_t lost = 0;      // ... that left its element unchanged (rounded away)
    AccumulationCounts& operator+=(const AccumulationCounts& o)
    {
        nonzero += o.nonzero;
        lost += o.lost;
        return *this;
    }
};

// buffer[i] = round_f(buffer[i] + round_f(grad[i])) for each of the n elements (first:
// round_f(grad[i])): each part's gradient in the buffer's format, added in that format. The
// sum is taken in fp32 and rounded once to f, which is IEEE addition in fp16 and bf16, since
// fp32's 24 bits are at least twice theirs plus two (the rounding through fp32 is then
// innocuous). Counts the nonzero finite contributions of the additions after the first and
// those that changed nothing (a contribution below half the spacing of the sum's format there).
AccumulationCounts accumulateGradient(float* buffer, const float* grad, std::int64_t n, Format f, bool first);

// The parts a step of `batch` samples is split into for `steps` micro-batches (fewer where the
// batch is smaller), and where part k starts: parts differ by at most one sample.
std::int64_t accumulationParts(std::int64_t batch, int steps);
std::int64_t accumulationPartStart(std::int64_t batch, std::int64_t parts, std::int64_t k);

}  // namespace plab
