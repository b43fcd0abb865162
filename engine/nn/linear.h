// Linear (fully connected) layer with bias: output (N, out) = input (N, in) * W^T + b,
// with W (out, in) as in PyTorch.
#pragma once

#include "nn/layer.h"
#include "nn/layer_ops.h"

namespace plab {

class Linear final : public Layer {
public:
    Linear(std::string name, std::int64_t inFeatures, std::int64_t outFeatures);

    std::int64_t inFeatures() const { return inFeatures_; }
    std::int64_t outFeatures() const { return outFeatures_; }
    Parameter& weight() { return weight_; }   // (out, in)
    Parameter& bias() { return bias_; }       // (out)

    Shape outputShape(const Shape& input) const override;
    Tensor& forward(Tensor& input, StepContext& ctx) override;
    Tensor* backward(Tensor& gradOutput, StepContext& ctx, bool needInputGrad) override;
    std::vector<Parameter*> parameters() override { return {&weight_, &bias_}; }
    std::int64_t keptBytesPerSample(const Shape& input, const PrecisionRecipe& recipe) const override;

private:
    std::int64_t inFeatures_, outFeatures_;
    Parameter weight_, bias_;

    const Tensor* input_ = nullptr;          // (N, in) the input as it arrived, widened when packed but not read in blocks
    const Tensor* inputOperand_ = nullptr;   // (N, in) the input in the compute format
    const Tensor* weightOperand_ = nullptr;  // (out, in) the weights in the compute format
    Tensor roundedInput_;    // (N, in) tf32 rounding of the input
    Tensor roundedWeight_;   // (out, in)
    Tensor output_;          // (N, out)
    Tensor roundedGrad_;     // (N, out) tf32 rounding of dL/doutput
    Tensor gradInput_;       // (N, in)
    OperandScalers scalers_;   // FP8 recipes: the operands' scales across steps
    bool inputArrivedPacked_ = false;   // then its input gradient is packed too
    // The packed input is the operand as it is, read in blocks of rows (forward,
    // dX) or columns (dW) widened into a work buffer of at most packedBlockValues() values
    // (not where the backend's sums depend on the cut, gemmCut: then widened whole, and dX
    // in one block).
    bool readsInBlocks_ = false;
    // ... or, where the backend multiplies 16-bit patterns (gemm16), read whole as they are,
    // with the weights' patterns (forward) and dY's (dW).
    bool multiplies16_ = false;
    Tensor patterns_;      // the weights' patterns in forward, dY's in backward
    Tensor ownWork_;       // the widened input (or a block of it) when the step has no work buffers
    Tensor ownGradWork_;   // a block of dX before rounding, likewise
    bool codes_ = false;   // the quantised operands are Fp8Codes (holdsCodes), decoded for each GEMM
    bool mxInBlocks_ = false;   // MX / NVFP4: the input's quantised values in a work buffer (mxInBlocks)
    Fp8Codes inputCodes_, weightCodes_;
    Tensor quantizedGrad_;   // codes_: dY's quantised values for backward's GEMMs (no codes)
};

}  // namespace plab
