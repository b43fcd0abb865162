// The layers of the vision transformer (model vit): images cut into patches, learned
// positions, pre-norm blocks (LayerNorm, multi-head self-attention, a GELU MLP, residual
// adds), mean pooling over the tokens. Tokens are rows: a (N * T, D) tensor holds T
// tokens of width D for each of N images, so the block's Linear layers are the plain ones.
//
// Precision, as PyTorch's autocast does it (layer_norm and softmax on its fp32 list):
// with fp32 sensitive ops, LayerNorm and the attention softmax run in fp32 from their
// storage-format inputs, their outputs rounded to the storage format (the softmax output
// to the compute format, as the operand of its matmul); without, their statistics are
// emulated in the storage format, every sum and quotient rounded as a 16-bit kernel
// with a 16-bit accumulator rounds it. The attention matmuls take the compute format and
// the accumulation switch as Linear's do; their results are rounded to storage.
// Every op runs on the backend: the GEMMs, and LayerNorm, softmax, GELU and the data
// movement as its transformer ops (BackendOp::transformer). The CUDA
// plugin's are written but not yet run on a GPU, so settings refuse vit there.
#pragma once

#include "nn/layer.h"
#include "nn/linear.h"

#include <memory>
#include <optional>
#include <string_view>

namespace plab {

// (1, N, 28, 28) images (the (C, N, H, W) input with C = 1) -> (N * T, P * P) patches:
// row n * T + t is patch t (row-major over the grid) of image n, its pixels row-major.
// Exact data movement.
class Patchify final : public Layer {
public:
    Patchify(std::string name, std::int64_t side, std::int64_t patch);

    std::int64_t tokens() const { return (side_ / patch_) * (side_ / patch_); }
    Shape outputShape(const Shape& input) const override;
    Tensor& forward(Tensor& input, StepContext& ctx) override;
    Tensor* backward(Tensor& gradOutput, StepContext& ctx, bool needInputGrad) override;
    std::int64_t keptBytesPerSample(const Shape& input, const PrecisionRecipe& recipe) const override;

private:
    std::int64_t side_, patch_;
    Tensor output_;
};

// x (N * T, D) += positions (T, D), in place (tap: the layer, activation): fp32 with master
// weights (as PyTorch promotes 16-bit embeddings plus fp32 positions), else in storage.
class PositionEmbedding final : public Layer {
public:
    PositionEmbedding(std::string name, std::int64_t tokens, std::int64_t width);

    Shape outputShape(const Shape& input) const override;
    Tensor& forward(Tensor& input, StepContext& ctx) override;
    Tensor* backward(Tensor& gradOutput, StepContext& ctx, bool needInputGrad) override;
    std::vector<Parameter*> parameters() override { return {&weight_}; }
    std::int64_t keptBytesPerSample(const Shape&, const PrecisionRecipe&) const override { return 0; }

private:
    std::int64_t tokens_, width_;
    Parameter weight_;   // (T, D)
};

// LayerNorm over the last dimension of (M, D), eps 1e-5, with a weight and a bias.
// Taps: the output (the layer, activation), each row's sum of squared deviations
// ("<layer>.sumsq", activation: what a 16-bit accumulator of the variance must hold,
// exact, rounded to the format the statistics are computed in), the input gradient.
class LayerNorm final : public Layer {
public:
    LayerNorm(std::string name, std::int64_t width);

    Shape outputShape(const Shape& input) const override;
    Tensor& forward(Tensor& input, StepContext& ctx) override;
    Tensor* backward(Tensor& gradOutput, StepContext& ctx, bool needInputGrad) override;
    std::vector<Parameter*> parameters() override { return {&weight_, &bias_}; }
    std::int64_t keptBytesPerSample(const Shape& input, const PrecisionRecipe& recipe) const override;
    void initialize(std::uint64_t seed, int& layerIndex) override;

    static constexpr float kEps = 1e-5f;
    static constexpr std::string_view kStatisticsTap = ".sumsq";   // "<layer>.sumsq"

private:
    std::int64_t width_;
    Parameter weight_, bias_;
    Tensor output_;     // (M, D) storage
    Tensor normed_;     // (M, D) fp32: (x - mean) * rstd
    Tensor rstd_;       // (M) fp32
    Tensor sumOfSquares_;   // (M) as tapped
    Tensor gradInput_;  // (M, D) in the input's format
    Format inputStorage_ = Format::fp32;
};

// Multi-head self-attention without its projections: qkv (N * T, 3D) (q, k, v side by
// side, each H heads of D / H) -> (N * T, D), per image and head softmax(q k^T * s) v with
// s = 1 / sqrt(D / H). Taps: "<layer>.scores" (q k^T before the scale, activation; its
// gradient activation_grad), "<layer>.softmax" (the probabilities as the matmul reads
// them), the output and the input gradient (the layer).
class Attention final : public Layer {
public:
    Attention(std::string name, std::int64_t tokens, std::int64_t width, std::int64_t heads);
    static constexpr std::string_view kScoresTap = ".scores";   // "<layer>.scores"

    Shape outputShape(const Shape& input) const override;
    Tensor& forward(Tensor& input, StepContext& ctx) override;
    Tensor* backward(Tensor& gradOutput, StepContext& ctx, bool needInputGrad) override;
    std::int64_t keptBytesPerSample(const Shape& input, const PrecisionRecipe& recipe) const override;

private:
    std::int64_t tokens_, width_, heads_;
    float scale_;
    const Tensor* qkv_ = nullptr;   // the input as the matmuls read it
    Tensor roundedQkv_;     // (N * T, 3D) in the compute format, where storage is not
    Tensor probabilities_;  // (N * H, T, T) the softmax as computed (fp32, or emulated)
    Tensor operandP_;       // (N * H, T, T) the same in the compute format
    Tensor scores_;         // (N * H, T, T) work: scores, then dP and dS
    Tensor output_;         // (N * T, D)
    Tensor roundedGrad_;    // (N * T, D) dO in the compute format
    Tensor gradInput_;      // (N * T, 3D)
};

// GELU, exact (erf): y = x * Phi(x) in fp32 from the storage-format input, rounded to storage.
class Gelu final : public Layer {
public:
    explicit Gelu(std::string name) : Layer(std::move(name)) {}

    Shape outputShape(const Shape& input) const override { return input; }
    Tensor& forward(Tensor& input, StepContext& ctx) override;
    Tensor* backward(Tensor& gradOutput, StepContext& ctx, bool needInputGrad) override;
    std::int64_t keptBytesPerSample(const Shape& input, const PrecisionRecipe& recipe) const override;

private:
    const Tensor* input_ = nullptr;
    Tensor output_;
};

// A pre-norm block: x + attn(ln1(x)), then + mlp(ln2(.)), mlp = fc2(gelu(fc1)), fc1 D -> 4D.
// Its layers are named "<block>.ln1", "<block>.qkv", "<block>.attn", "<block>.proj",
// "<block>.ln2", "<block>.fc1", "<block>.fc2"; the two residual adds keep the stream's
// format (fp32 from fp32 positions, else storage), tapped as "<block>.residual"
// (activation forward, activation_grad backward).
class TransformerBlock final : public Layer {
public:
    TransformerBlock(std::string name, std::int64_t tokens, std::int64_t width, std::int64_t heads);

    Shape outputShape(const Shape& input) const override;
    Tensor& forward(Tensor& input, StepContext& ctx) override;
    Tensor* backward(Tensor& gradOutput, StepContext& ctx, bool needInputGrad) override;
    std::vector<Parameter*> parameters() override;
    std::int64_t keptBytesPerSample(const Shape& input, const PrecisionRecipe& recipe) const override;
    void initialize(std::uint64_t seed, int& layerIndex) override;

private:
    std::vector<Layer*> layers() const;
    std::int64_t width_;
    LayerNorm ln1_;
    Linear qkv_;
    Attention attn_;
    Linear proj_;
    LayerNorm ln2_;
    Linear fc1_;
    Gelu gelu_;
    Linear fc2_;
    Tensor middle_;     // (M, D) x + attn
    Tensor output_;     // (M, D)
    Tensor work_;       // (M, D) a gradient handed to a layer that may overwrite it
    Tensor gradMiddle_; // (M, D)
    Tensor gradInput_;  // (M, D)
    Format residual_ = Format::fp32;   // the residual stream's: fp32, or storage without master weights
};

// (N * T, D) -> (N, D): the mean over each image's tokens, in the input's format.
class TokenMeanPool final : public Layer {
public:
    TokenMeanPool(std::string name, std::int64_t tokens) : Layer(std::move(name)), tokens_(tokens) {}

    Shape outputShape(const Shape& input) const override;
    Tensor& forward(Tensor& input, StepContext& ctx) override;
    Tensor* backward(Tensor& gradOutput, StepContext& ctx, bool needInputGrad) override;
    std::int64_t keptBytesPerSample(const Shape& input, const PrecisionRecipe& recipe) const override;

private:
    std::int64_t tokens_;
    Shape inputShape_;
    Tensor output_;
    Tensor gradInput_;
};

// A block's residual branches end in proj (attention) and fc2 (MLP): their weights, which
// zero_init_residual starts at zero so that the block begins as the identity.
bool isResidualBranchWeight(const Parameter& p);

// The taps a transformer rounds in a format of their own rather than its layer's compute
// format: a LayerNorm's statistics ("<layer>.sumsq": fp32 with fp32 sensitive ops, else
// the storage format) and attention's scores ("<layer>.scores": fp32 with
// fp32AttentionScores, else the storage format). nullopt for any other tap. The recipe is
// the whole run's; the layer's own precision is applied here.
std::optional<Format> transformerTapFormat(std::string_view tap, const PrecisionRecipe& recipe);

}  // namespace plab
