// The CPU backend's transformer ops (see ComputeBackend in backend/backend.h for what each
// computes): LayerNorm, row softmax, GELU, patches, positions, token means. Parallel over
// rows on the backend's pool; a row's arithmetic is the same on any thread, so the results
// are the serial ones. The reference the CUDA plugin's kernels will be checked against.
#pragma once

#include "backend/cpu/thread_pool.h"
#include "numerics/format.h"

#include <cstdint>

namespace plab::cpu {

void patchify(ThreadPool& pool, const float* images, std::int64_t N, std::int64_t side, std::int64_t patch,
              float* out);
void addPeriodic(ThreadPool& pool, float* x, std::int64_t n, const float* add, std::int64_t period);
void sumPeriodic(ThreadPool& pool, const float* x, std::int64_t n, std::int64_t period, float* out);
void layerNorm(ThreadPool& pool, Format emulate, const float* x, std::int64_t rows, std::int64_t D,
               const float* gamma, const float* beta, float eps, float* y, float* xhat, float* rstd,
               float* sumOfSquares);
void layerNormBackward(ThreadPool& pool, const float* g, const float* xhat, const float* rstd, const float* gamma,
                       std::int64_t rows, std::int64_t D, float* dx, float* dgamma, float* dbeta);
void softmaxRows(ThreadPool& pool, Format emulate, const float* s, std::int64_t rows, std::int64_t T, float* p);
void softmaxRowsBackward(ThreadPool& pool, const float* p, float* g, std::int64_t rows, std::int64_t T);
void gelu(ThreadPool& pool, const float* x, float* y, std::int64_t n);
void geluBackward(ThreadPool& pool, const float* x, float* g, std::int64_t n);
void add(ThreadPool& pool, const float* a, const float* b, float* y, std::int64_t n);
void scale(ThreadPool& pool, float* x, std::int64_t n, float factor);
void meanTokens(ThreadPool& pool, const float* x, std::int64_t N, std::int64_t T, std::int64_t D, float* y);
void meanTokensBackward(ThreadPool& pool, const float* g, std::int64_t N, std::int64_t T, std::int64_t D, float* dx);

}  // namespace plab::cpu
