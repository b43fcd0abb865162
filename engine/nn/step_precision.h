// One step's precision rules for a layer, read from the recipe (and the layer's own
// precision where it has one): the formats of its operands, storage and gradients, its
// quantisation; and which operand of a matmul/conv is which.
#pragma once

#include "amp/recipe.h"
#include "backend/backend.h"
#include "telemetry/telemetry.h"

#include <cstdint>
#include <string_view>

namespace plab {

struct StepContext;

struct StepPrecision {
    Format compute = Format::fp32;   // operands of matmul/conv (unless quantised)
    Format storage = Format::fp32;   // activations and their gradients
    bool fp32Accumulate = true;
    Format grad = Format::fp32;      // weight and bias gradients: recipe.gradientFormat()
    bool fp32SensitiveOps = true;
    Quantization quant;              // FP8 / MX operands; off: rounded to compute
    bool fp32AttentionScores = false;   // attention's q k^T kept in fp32 (recipe.h)

    static StepPrecision of(const PrecisionRecipe& recipe);
    // The rules of one layer: the recipe's, with the layer's own precision where the
    // recipe gives it one (per-layer precision). Throws without recipe / backend.
    static StepPrecision of(const StepContext& ctx, std::string_view layer);
    // Quantised operands hold dequantised values that no 16-bit format holds exactly, so
    // with fp32 accumulation the GEMM runs on them in fp32 (sums as FP8 matrix units do).
    GemmPrecision gemm() const
    {
        GemmPrecision g;
        g.compute = quant.on() && fp32Accumulate ? Format::fp32 : compute;
        g.fp32Accumulate = fp32Accumulate;
        return g;
    }
    // The rules of one pass of a layer whose quantisation covers only the other (recipe.h
    // QuantPasses): its operands rounded to the compute format, as an unquantised layer's.
    StepPrecision forward() const { return quant.quantizesForward() || !quant.on() ? *this : unquantized(); }
    StepPrecision backward() const { return quant.quantizesBackward() || !quant.on() ? *this : unquantized(); }
    StepPrecision unquantized() const
    {
        StepPrecision p = *this;
        p.quant.mode = QuantMode::off;
        p.quant.passes = QuantPasses::both;
        return p;
    }
    // The format a LayerNorm's statistics are computed in: fp32 under autocast's rule, else
    // every sum and quotient in storage; and attention's scores q k^T and their gradient.
    Format statisticsFormat() const { return fp32SensitiveOps ? Format::fp32 : storage; }
    Format scoresFormat() const { return fp32AttentionScores ? Format::fp32 : storage; }
    bool quantizes() const { return quant.on(); }
    bool roundsOperands() const { return compute != Format::fp32; }
    bool roundsStorage() const { return storage != Format::fp32; }
    Format gradFormat() const { return grad; }
};

// Which input of a layer's matmul/conv an operand is; each has its own scale.
enum class OperandRole : std::uint8_t { input, weight, gradOutput };
TensorKind quantizedKind(OperandRole role);
MiniFormat quantizedFormat(const Quantization& q, OperandRole role);

}  // namespace plab
