// Lowering of stride-1 "same" convolutions to GEMM on the CPU: im2col over a block of
// samples of a (C, N, H, W) activation, and its adjoint col2im for the backward pass.
#pragma once

#include "backend/backend.h"
#include "backend/cpu/thread_pool.h"

namespace plab::cpu {

void im2colBatch(ThreadPool& pool, const ConvGeometry& g, const float* src, std::int64_t n0,
                 std::int64_t count, float* cols);
void col2imBatch(ThreadPool& pool, const ConvGeometry& g, const float* cols, std::int64_t n0,
                 std::int64_t count, float* dst);

}  // namespace plab::cpu
