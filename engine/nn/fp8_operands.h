// Per-tensor FP8 operands (the fp8-unscaled, fp8-delayed and fp8-current recipes): each
// operand's scale across steps, its quantisation (into values or into 1-byte codes, tapped
// with its scale and amax), the codes' decoding, and the GEMM precision that carries the
// operands' formats and scales to a backend with FP8 matrix units.
#pragma once

#include "nn/model.h"
#include "nn/step_precision.h"
#include "tensor/byte_buffer.h"
#include "tensor/tensor.h"

#include <cstdint>
#include <string_view>
#include <vector>

namespace plab {

// The per-tensor scale of one operand of one layer across steps (FP8 recipes): the scale
// this step uses and, for delayed scaling, the amax history that sets the next one.
// Transformer Engine's order: step t quantises with the scale computed from the amaxes of
// steps before t (1 at the first step), then its own amax joins the history. Evaluation
// uses the scale and leaves the history alone. A change of the quantisation settings
// (mid-run) starts afresh.
class OperandScaler {
public:
    // The scale for this step. Current scaling needs the tensor's amax (`currentAmax`).
    float scale(const Quantization& q, MiniFormat f, float currentAmax);
    // After a training step's quantisation: the amax joins the history, the next scale is set.
    void record(const Quantization& q, MiniFormat f, float amax);
    // The FP8 operand the last quantisation wrote (its format and scale), for the GEMMs
    // that read it (layerGemm); off before the first.
    const Fp8Operand& operand() const { return operand_; }
    void setOperand(const Fp8Operand& o) { operand_ = o; }

private:
    void adopt(const Quantization& q);
    Quantization settings_;
    std::vector<float> history_;   // ring of the last amaxHistory amaxes
    std::size_t next_ = 0;
    std::size_t filled_ = 0;
    float scale_ = 1.0f;
    Fp8Operand operand_;
};

// The operand a matmul/conv reads for `t` under a per-tensor FP8 recipe: t quantised into
// `workspace` with its scaler's scale, tapped as (layer, quantizedKind(role)) with the
// scale and amax reported. Only for QuantMode fp8Unscaled / fp8Delayed / fp8Current.
const Tensor& quantizedOperand(StepContext& ctx, const StepPrecision& p, const Tensor& t, Tensor& workspace,
                               std::string_view layer, OperandRole role, OperandScaler& scaler);

// A per-tensor FP8 operand held as its codes, a byte a value (counted so), with the format
// and scale it was quantised with: where the backend holds codes (BackendOp::fp8Codes, the CPU),
// the layers keep their quantised copies so and decode them for the GEMMs, which read fp32.
struct Fp8Codes {
    ByteBuffer codes;
    Shape shape;
    Fp8Operand operand;
    std::int64_t size() const { return elementCount(shape); }
    const std::uint8_t* data() const { return codes.data(); }
    // Frees the codes (a layer that stopped holding codes: no longer counted).
    void discard()
    {
        codes.clear();
        shape.clear();
    }
};
// Whether a layer of precision p holds its quantised operands as Fp8Codes: per-tensor FP8 on
// a backend that holds codes, where tensors are held in their format's bytes (packsStorageOn:
// PLAB_PACKED_STORAGE=off holds FP8 copies as fp32 values too).
bool holdsCodes(const StepContext& ctx, const StepPrecision& p);
// quantizedOperand into codes: the same scale, counts, tap and amax history (a packed t
// read from its patterns).
const Fp8Codes& quantizedCodes(StepContext& ctx, const StepPrecision& p, const Tensor& t, Fp8Codes& out,
                               std::string_view layer, OperandRole role, OperandScaler& scaler);
// The values quantizedCodes' codes decode to, written straight into `values` (fp32, shaped
// as t, prepared by the caller) in one pass from t (its patterns when packed): for a dY
// that a layer holding codes reads whole, at once (no codes kept to decode). The same
// scale, counts, tap and amax history.
void quantizedValuesInto(StepContext& ctx, const StepPrecision& p, const Tensor& t, Tensor& values,
                         std::string_view layer, OperandRole role, OperandScaler& scaler);
// The values of codes (what quantizedOperand writes, bit for bit), whole, in the step's fp32
// work buffer `slot` (or `own`), shaped as the codes.
const Tensor& decodedInto(StepContext& ctx, int slot, const Fp8Codes& codes, Tensor& own);
// rows x cols of the codes from `at` (rows ld apart) decoded into dst (rows dstLd apart).
void decodeRows(StepContext& ctx, const Fp8Codes& codes, std::int64_t at, std::int64_t ld, float* dst,
                std::int64_t dstLd, std::int64_t rows, std::int64_t cols);

// The scalers of a matmul/conv layer's three operands.
struct OperandScalers {
    OperandScaler input, weight, gradOutput;
    OperandScaler& of(OperandRole role)
    {
        return role == OperandRole::input ? input : role == OperandRole::weight ? weight : gradOutput;
    }
    const OperandScaler& of(OperandRole role) const
    {
        return role == OperandRole::input ? input : role == OperandRole::weight ? weight : gradOutput;
    }
};

// The GemmPrecision of a layer's GEMM (or convolution) of op(A) in role `a` by op(B) in
// role `b`: p.gemm(), with both operands' FP8 format and scale under a per-tensor FP8 recipe
// with fp32 accumulation (as the last quantisation of each wrote them), so that a backend
// with FP8 matrix units can multiply the codes.
GemmPrecision layerGemm(const StepPrecision& p, const OperandScalers& scalers, OperandRole a, OperandRole b);

}  // namespace plab
