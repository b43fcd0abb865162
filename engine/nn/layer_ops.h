// What the layers share besides their recipes' operands: the rounding sites (round a buffer
// to a format on the backend, its statistics tapped into telemetry, also into a packed
// tensor), tensors sized and placed for the step on the backend's memory (quantised ones as
// their format stores them), the bias addition, and the operand a matmul/conv reads under
// any recipe. The recipes' parts have their own headers, included here for the layers:
// step_precision.h (the rules), fp8_operands.h (per-tensor FP8), mx_operands.h (MX and NVFP4
// blocks), packed_storage.h (16-bit tensors held packed, and their blocks).
#pragma once

#include "nn/fp8_operands.h"
#include "nn/model.h"
#include "nn/mx_operands.h"
#include "nn/packed_storage.h"
#include "nn/step_precision.h"
#include "telemetry/telemetry.h"
#include "tensor/tensor.h"

#include <cstdint>
#include <string_view>

namespace plab {

// The operand a layer's matmul/conv reads for `t` in `role`, under any recipe: quantised
// (quantizedOperand) under a per-tensor FP8 recipe; else t rounded to the compute format
// (operandIn), the input and the output gradient tapped as activation / activation_grad
// when the compute format is tf32 (its only rounding site), the weight never.
const Tensor& layerOperand(StepContext& ctx, const StepPrecision& p, const Tensor& t, Tensor& workspace,
                           std::string_view layer, OperandRole role, OperandScalers& scalers);

// Throws std::invalid_argument, naming the layer and both shapes, unless the gradient a
// layer's backward receives has its output's shape.
void requireGradientShape(std::string_view layer, const Tensor& gradOutput, const Tensor& output);

// Where a rounding site adds its counts; both null without telemetry.
TelemetryCollector::Sink tapSink(const StepContext& ctx, std::string_view layer, TensorKind kind);

// dst = round_f(src) over n elements in parallel, counts added to the tap (layer, kind).
void roundTapped(StepContext& ctx, Format f, const float* src, float* dst, std::int64_t n,
                 std::string_view layer, TensorKind kind);

// Sizes `t` for this step where the backend keeps its tensors: shape, modelled storage
// format, memory accounting under `category`. packed: held packed into its
// 16-bit storage format. A tensor that changes form is emptied first, never converted:
// its values are about to be written, and it never holds both forms at once. Elements it
// gains read as `added` says: NewElements::undefined only where every element is written
// before one is read (outputs, lowered columns, work buffers).
void prepareTensor(Tensor& t, const Shape& shape, Format storage, StepContext& ctx, MemoryCategory category,
                   bool packed = false, NewElements added = NewElements::zero);
// The packed form of roundTapped: the same values and counts, the results stored into the
// packed tensor `out` (storage f).
void roundTappedTo16(StepContext& ctx, Format f, const float* src, Tensor& out, std::string_view layer,
                     TensorKind kind);

// How the recipe stores a quantised operand of this role, for the memory accountant: FP8
// per tensor (1 byte a value, an fp32 scale), MX (the element's bits, an E8M0 byte per 32
// values), NVFP4 (4 bits, an E4M3 byte per 16, an fp32 tensor scale).
QuantizedStorage quantizedStorageOf(const StepPrecision& p, OperandRole role);
// prepareTensor for a workspace that holds quantised values (modelled as quantizedStorageOf).
void prepareQuantized(Tensor& t, const Shape& shape, const QuantizedStorage& q, StepContext& ctx,
                      MemoryCategory category);

// x[i] += bias[(i / repeat) % period] in fp32, then, when f is not fp32, x rounded to f
// with the counts added to the tap (layer, kind). See ComputeBackend::addBiasRound.
void addBiasAndRound(StepContext& ctx, Format f, Tensor& x, const Tensor& bias, std::int64_t period,
                     std::int64_t repeat, std::string_view layer, TensorKind kind);

// The operand a matmul/conv reads for `t`: t itself when it already holds values of the
// compute format, else t rounded into `workspace` (tapped as (layer, kind) when tap).
const Tensor& operandIn(StepContext& ctx, const StepPrecision& p, const Tensor& t,
                        Tensor& workspace, std::string_view layer, TensorKind kind, bool tap);

}  // namespace plab
