// The layer interface of the models: forward and backward over tensors that the layers
// own, under the precision rules of one step (see nn/layer_ops.h). Convolution-stack
// activations are held channel-major over the batch, (C, N, H, W): a batched im2col GEMM
// then writes its output in place without a transpose; Flatten turns them into PyTorch's
// (N, C*H*W) order for the linear layers.
#pragma once

#include "nn/model.h"
#include "nn/parameter.h"
#include "tensor/tensor.h"

#include <string>
#include <vector>

namespace plab {

class Layer {
public:
    explicit Layer(std::string name) : name_(std::move(name)) {}
    virtual ~Layer() = default;
    Layer(const Layer&) = delete;
    Layer& operator=(const Layer&) = delete;

    const std::string& name() const { return name_; }

    // Output shape for an input shape (batch dimension included, in its usual place);
    // throws std::invalid_argument when the input does not fit the layer.
    virtual Shape outputShape(const Shape& input) const = 0;

    // Returns the output, which may be `input` itself (in-place layers). The input must
    // stay unchanged until backward() (the model guarantees it: it is the previous
    // layer's output).
    virtual Tensor& forward(Tensor& input, StepContext& ctx) = 0;

    // gradOutput: dL/d(output), may be overwritten. Returns dL/d(input), or nullptr when
    // needInputGrad is false (the first layer with parameters skips it).
    virtual Tensor* backward(Tensor& gradOutput, StepContext& ctx, bool needInputGrad) = 0;

    virtual std::vector<Parameter*> parameters() { return {}; }
    // Sets the initial weights from the model's seed, `layerIndex` counting the layers with
    // parameters (each draws from layerGenerator(seed, its index)). By default PyTorch's
    // for Linear and Conv2d: every parameter U(-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in
    // from the first (the weight).
    virtual void initialize(std::uint64_t seed, int& layerIndex);

    // Bytes per sample this layer keeps for backward (its output and any lowered input),
    // for the given input shape (its batch dimension is ignored).
    virtual std::int64_t keptBytesPerSample(const Shape& input, const PrecisionRecipe& recipe) const = 0;
    // The part of keptBytesPerSample that is the layer's lowered input (a convolution's
    // columns), which a layer holding packed 16-bit tensors lowers in bounded blocks instead
    // of for every sample.
    virtual std::int64_t loweredBytesPerSample(const Shape&, const PrecisionRecipe&) const { return 0; }

private:
    std::string name_;
};

}  // namespace plab
