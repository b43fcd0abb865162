// Lowering of stride-1 "same" convolutions to GEMM on the CPU: im2col over a block of
// samples of a (C, N, H, W) activation, and its adjoint col2im for the backward pass.
#pragma once

#include "backend/backend.h"
#include "backend/cpu/thread_pool.h"

#include <functional>

namespace plab::cpu {

void im2colBatch(ThreadPool& pool, const ConvGeometry& g, const float* src, std::int64_t n0,
                 std::int64_t count, float* cols);
// im2colBatch of 16-bit patterns: the bits moved, zeros for the padding.
void im2colBatch16(ThreadPool& pool, const ConvGeometry& g, const std::uint16_t* src, std::int64_t n0,
                   std::int64_t count, std::uint16_t* cols);
// im2colBatch of a source packed in f (fp16 or bf16), widened on the way (exact): the columns
// im2colBatch makes from the widened values.
void im2colBatchWidened(ThreadPool& pool, Format f, const ConvGeometry& g, const std::uint16_t* src, std::int64_t n0,
                        std::int64_t count, float* cols);
// im2colBatch of a source held as FP8 codes (numerics/quantize.h decodeScaled): the columns
// im2colBatch makes from the decoded values.
void im2colBatchDecoded(ThreadPool& pool, MiniFormat element, float scaleInv, const ConvGeometry& g,
                        const std::uint8_t* src, std::int64_t n0, std::int64_t count, float* cols);
// im2colBatch, handing each part of cols to `part` as soon as it is lowered (while it is in
// the cache), for the MX and NVFP4 blocks: band == 0, one whole row at a time (part(row, 1,
// 0, count * H * W)); band > 0, `band` consecutive rows (the last band may be shorter) of
// one sample's H * W columns at a time (part(row0, rows, column0, H * W)). Parts run on the
// pool's threads, each exactly once, and cover cols.
void im2colInParts(ThreadPool& pool, const ConvGeometry& g, const float* src, std::int64_t n0, std::int64_t count,
                   float* cols, std::int64_t band,
                   const std::function<void(std::int64_t row0, std::int64_t rows, std::int64_t column0,
                                            std::int64_t columns)>& part);
// cols's rows colsLd apart (0: count * H * W).
void col2imBatch(ThreadPool& pool, const ConvGeometry& g, const float* cols, std::int64_t n0,
                 std::int64_t count, float* dst, std::int64_t colsLd = 0);

}  // namespace plab::cpu
