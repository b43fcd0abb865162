// Operands quantised in blocks (the MX and NVFP4 recipes): whether a layer quantises a block
// of the lowering at a time, the quantisation along rows or down columns (and lowered from a
// convolution's input in the same pass), NVFP4's tensor amax, and the quantised operands in
// work buffers.
#pragma once

#include "nn/model.h"
#include "nn/step_precision.h"
#include "tensor/tensor.h"

#include <cstdint>
#include <string_view>

namespace plab {

// Whether a layer of precision p quantises in MX or NVFP4 blocks without holding a whole
// quantised copy: each block of samples (or the whole operand, for a linear layer) is
// quantised into a step work buffer just before the GEMM that reads it, as fp32 values
// (counted so). On a backend that holds FP8 codes (the CPU), where tensors are held in their
// format's bytes (packsStorageOn; PLAB_PACKED_STORAGE=off keeps a whole copy per operand
// in each layer; the CUDA backend refuses MX and NVFP4).
bool mxInBlocks(const StepContext& ctx, const StepPrecision& p);

// Under an MX recipe: the (rows, cols) matrix at src, row stride ld, quantised
// in OCP MX blocks along its rows or down its columns (the GEMM's reduction dimension)
// into dst (may alias; same stride), tapped as (layer, quantizedKind(role)) with its
// block scales. A tensor used by two GEMMs along different dimensions is quantised once
// for each, as MX training keeps a row-wise and a column-wise copy. NVFP4 (the same in
// blocks of 16) needs the amax of the whole tensor src is part of: tensorAmax, from
// nvfp4TensorAmax (the tap reports the tensor scale and that amax).
void quantizeBlocks(StepContext& ctx, const StepPrecision& p, const float* src, float* dst, std::int64_t rows,
                    std::int64_t cols, std::int64_t ld, bool alongRows, std::string_view layer, OperandRole role,
                    float tensorAmax);
// The columns of a convolution (ConvGeometry g) lowered from samples [n0, n0 + count) of
// src into cols (patchSize, count * H * W) and quantised in blocks as quantizeBlocks does
// with the input's role, in one pass where the backend has im2colQuantize (the same values
// and counts as im2col then quantizeBlocks, which it falls back to).
// A packed src is lowered from its patterns (widened), then quantised.
void lowerInBlocks(StepContext& ctx, const StepPrecision& p, const ConvGeometry& g, const Tensor& src,
                   std::int64_t n0, std::int64_t count, float* cols, bool alongRows, std::string_view layer,
                   float tensorAmax);
// The amax of t (packed or not) under NVFP4 (on the backend), 0 under the other recipes
// (they need none).
float nvfp4TensorAmax(StepContext& ctx, const StepPrecision& p, const Tensor& t);
// blockOperand into the step's work buffer `slot` (or `own`): the quantised values, in fp32,
// for GEMMs that read them before another layer runs (mxInBlocks).
const Tensor& blockOperandInto(StepContext& ctx, const StepPrecision& p, const Tensor& t, std::int64_t rows,
                               std::int64_t cols, bool alongRows, int slot, Tensor& own, std::string_view layer,
                               OperandRole role);
// The same for a whole tensor viewed as (rows, cols), into `workspace`, which it returns.
const Tensor& blockOperand(StepContext& ctx, const StepPrecision& p, const Tensor& t, std::int64_t rows,
                           std::int64_t cols, bool alongRows, Tensor& workspace, std::string_view layer,
                           OperandRole role);

}  // namespace plab
