// Over 500 lines: the transformer's layers share their helpers and precision rules here.
// The vision transformer's layers (see transformer.h): their shapes, formats and rounding
// sites; every op on the backend (LayerNorm, softmax and GELU among its transformer ops).
#include "nn/transformer.h"

#include "nn/init.h"
#include "nn/layer_ops.h"
#include "numerics/format.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace plab {

namespace {

void requireOps(const StepContext& ctx, const std::string& layer)
{
    if (!ctx.backend->supports(BackendOp::transformer))
        throw std::invalid_argument("Layer " + layer + " (model vit) needs the transformer ops, which this backend does "
                                    "not have (the CPU backend has them).");
}

// `input` as fp32 values: a packed tensor is widened in place.
Tensor& unpacked(Tensor& input)
{
    if (input.packed()) input.unpack();
    return input;
}

// dst = round_f(a + b) over n values, tapped as (layer, kind); f fp32 adds only.
void addRounded(StepContext& ctx, Format f, const float* a, const float* b, float* dst, std::int64_t n,
                std::string_view layer, TensorKind kind)
{
    ctx.backend->add(a, b, dst, n);
    roundTapped(ctx, f, dst, dst, n, layer, kind);
}

void checkRows(const std::string& layer, const Shape& shape, std::int64_t width)
{
    if (shape.size() != 2 || shape[1] != width)
        throw std::invalid_argument("Layer " + layer + " expects tokens (rows, " + std::to_string(width) + "), got " +
                                    shapeString(shape) + ".");
}

std::int64_t bytesOf(Format f) { return formatInfo(f).storageBytes; }

// The attention matmuls' precision: the compute format (16-bit under FP8 and MX recipes,
// which quantise only the Linear layers' operands) with the recipe's accumulation; their
// operands rounded to that format.
struct AttentionPrecision {
    StepPrecision operands;
    GemmPrecision gemm;
    static AttentionPrecision of(const StepPrecision& p)
    {
        AttentionPrecision a{p, {}};
        a.operands.compute = p.quantizes() ? p.storage : p.compute;
        a.gemm = GemmPrecision(a.operands.compute, p.fp32Accumulate);
        return a;
    }
};

}  // namespace

// Patchify ---------------------------------------------------------------------------

Patchify::Patchify(std::string name, std::int64_t side, std::int64_t patch)
    : Layer(std::move(name)), side_(side), patch_(patch)
{
    if (patch <= 0 || side % patch != 0)
        throw std::invalid_argument("A patch side must divide the image side " + std::to_string(side) + ".");
}

Shape Patchify::outputShape(const Shape& input) const
{
    if (input.size() != 4 || input[0] != 1 || input[2] != side_ || input[3] != side_)
        throw std::invalid_argument("Layer " + name() + " expects images (1, N, " + std::to_string(side_) + ", " +
                                    std::to_string(side_) + "), got " + shapeString(input) + ".");
    return {input[1] * tokens(), patch_ * patch_};
}

Tensor& Patchify::forward(Tensor& input, StepContext& ctx)
{
    requireOps(ctx, name());
    const Shape out = outputShape(input.shape());
    const float* x = unpacked(input).data();
    prepareTensor(output_, out, input.storage(), ctx, MemoryCategory::activations);
    ctx.backend->patchify(x, input.dim(1), side_, patch_, output_.data());
    return output_;
}

Tensor* Patchify::backward(Tensor&, StepContext&, bool needInputGrad)
{
    if (needInputGrad) throw std::logic_error("Layer " + name() + " has no input gradient (it reads the images).");
    return nullptr;
}

std::int64_t Patchify::keptBytesPerSample(const Shape& input, const PrecisionRecipe& recipe) const
{
    return elementCount(outputShape(input)) * bytesOf(recipe.storage());
}

// PositionEmbedding -------------------------------------------------------------------

PositionEmbedding::PositionEmbedding(std::string name, std::int64_t tokens, std::int64_t width)
    : Layer(std::move(name)), tokens_(tokens), width_(width)
{
    weight_.layer = this->name();
    weight_.name = "weight";
    weight_.value = Tensor({tokens, width});
    weight_.grad = Tensor(weight_.value.shape());
}

Shape PositionEmbedding::outputShape(const Shape& input) const
{
    checkRows(name(), input, width_);
    if (input[0] % tokens_ != 0)
        throw std::invalid_argument("Layer " + name() + " expects a multiple of " + std::to_string(tokens_) +
                                    " tokens, got " + std::to_string(input[0]) + ".");
    return input;
}

Tensor& PositionEmbedding::forward(Tensor& input, StepContext& ctx)
{
    requireOps(ctx, name());
    outputShape(input.shape());
    const auto p = StepPrecision::of(ctx, name());
    // PyTorch's type promotion: the 16-bit embeddings plus fp32 positions (the master
    // weights autocast trains) are fp32, and so is the residual stream from here on;
    // without master weights the positions, and the sum, are in storage.
    const bool master = weight_.master.size() > 0;
    const Format f = master ? Format::fp32 : p.storage;
    float* x = unpacked(input).data();
    const std::int64_t M = input.dim(0);
    ctx.backend->addPeriodic(x, M * width_, weight_.stored().data(), tokens_ * width_);
    roundTapped(ctx, f, x, x, M * width_, name(), TensorKind::activation);
    input.setStorage(f);
    return input;
}

Tensor* PositionEmbedding::backward(Tensor& gradOutput, StepContext& ctx, bool needInputGrad)
{
    const auto p = StepPrecision::of(ctx, name());
    const float* g = unpacked(gradOutput).data();
    prepareTensor(weight_.grad, weight_.value.shape(), p.gradFormat(), ctx, MemoryCategory::gradients);
    const std::int64_t block = tokens_ * width_;
    float* dw = weight_.grad.data();
    ctx.backend->sumPeriodic(g, gradOutput.size(), block, dw);
    if (p.roundsStorage()) roundTapped(ctx, p.storage, dw, dw, block, name(), TensorKind::weightGrad);
    return needInputGrad ? &gradOutput : nullptr;
}

// LayerNorm --------------------------------------------------------------------------

LayerNorm::LayerNorm(std::string name, std::int64_t width) : Layer(std::move(name)), width_(width)
{
    weight_.layer = bias_.layer = this->name();
    weight_.name = "weight";
    bias_.name = "bias";
    weight_.value = Tensor({width});
    bias_.value = Tensor({width});
    weight_.grad = Tensor({width});
    bias_.grad = Tensor({width});
}

void LayerNorm::initialize(std::uint64_t, int& layerIndex)
{
    weight_.value.fill(1.0f);   // PyTorch's LayerNorm: ones and zeros
    bias_.value.zero();
    ++layerIndex;
}

Shape LayerNorm::outputShape(const Shape& input) const
{
    checkRows(name(), input, width_);
    return input;
}

Tensor& LayerNorm::forward(Tensor& input, StepContext& ctx)
{
    requireOps(ctx, name());
    const auto p = StepPrecision::of(ctx, name());
    const Shape shape = outputShape(input.shape());
    const std::int64_t M = shape[0], D = width_;
    const float* x = unpacked(input).data();
    inputStorage_ = input.storage();
    prepareTensor(output_, shape, p.storage, ctx, MemoryCategory::activations);
    prepareTensor(normed_, shape, Format::fp32, ctx, MemoryCategory::activations);
    prepareTensor(rstd_, {M}, Format::fp32, ctx, MemoryCategory::activations);
    prepareTensor(sumOfSquares_, {M}, Format::fp32, ctx, MemoryCategory::workspace);
    // Autocast's fp32 (with the weights as the optimizer keeps them); else every sum,
    // quotient and product of the statistics rounded to the storage format.
    const Format f = p.statisticsFormat();
    const bool fp32 = f == Format::fp32;
    const float* gamma = (fp32 ? weight_.stored() : weight_.value).data();
    const float* beta = (fp32 ? bias_.stored() : bias_.value).data();
    ctx.backend->layerNorm(f, x, M, D, gamma, beta, kEps, output_.data(), normed_.data(), rstd_.data(),
                           sumOfSquares_.data());
    roundTapped(ctx, f, sumOfSquares_.data(), sumOfSquares_.data(), M, name() + std::string(kStatisticsTap),
                TensorKind::activation);
    roundTapped(ctx, p.storage, output_.data(), output_.data(), M * D, name(), TensorKind::activation);
    return output_;
}

Tensor* LayerNorm::backward(Tensor& gradOutput, StepContext& ctx, bool needInputGrad)
{
    const auto p = StepPrecision::of(ctx, name());
    requireGradientShape(name(), gradOutput, output_);
    const std::int64_t M = output_.dim(0), D = width_;
    const float* g = unpacked(gradOutput).data();
    const float* gamma = (p.fp32SensitiveOps ? weight_.stored() : weight_.value).data();
    for (Parameter* param : {&weight_, &bias_})
        prepareTensor(param->grad, param->value.shape(), p.gradFormat(), ctx, MemoryCategory::gradients);
    // dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)), dxhat = g * gamma, in
    // fp32, then in the input's format (an fp32 residual stream's gradient stays fp32).
    if (needInputGrad) prepareTensor(gradInput_, output_.shape(), inputStorage_, ctx, MemoryCategory::workspace);
    ctx.backend->layerNormBackward(g, normed_.data(), rstd_.data(), gamma, M, D,
                                   needInputGrad ? gradInput_.data() : nullptr, weight_.grad.data(), bias_.grad.data());
    if (p.roundsStorage())
        for (Parameter* param : {&weight_, &bias_})
            roundTapped(ctx, p.storage, param->grad.data(), param->grad.data(), D, name(), TensorKind::weightGrad);
    if (!needInputGrad) return nullptr;
    float* dx = gradInput_.data();
    roundTapped(ctx, inputStorage_, dx, dx, M * D, name(), TensorKind::activationGrad);
    return &gradInput_;
}

std::int64_t LayerNorm::keptBytesPerSample(const Shape& input, const PrecisionRecipe& recipe) const
{
    const Shape shape = outputShape(input);
    // The output in storage, the normalised input and 1/std in fp32.
    return shape[0] * (width_ * (bytesOf(recipe.storage()) + 4) + 4);
}

// Attention --------------------------------------------------------------------------

Attention::Attention(std::string name, std::int64_t tokens, std::int64_t width, std::int64_t heads)
    : Layer(std::move(name)), tokens_(tokens), width_(width), heads_(heads)
{
    if (heads <= 0 || width % heads != 0)
        throw std::invalid_argument("The number of heads must divide the width " + std::to_string(width) + ".");
    scale_ = static_cast<float>(1.0 / std::sqrt(static_cast<double>(width / heads)));
}

Shape Attention::outputShape(const Shape& input) const
{
    checkRows(name(), input, 3 * width_);
    if (input[0] % tokens_ != 0)
        throw std::invalid_argument("Layer " + name() + " expects a multiple of " + std::to_string(tokens_) +
                                    " tokens, got " + std::to_string(input[0]) + ".");
    return {input[0], width_};
}

Tensor& Attention::forward(Tensor& input, StepContext& ctx)
{
    requireOps(ctx, name());
    const auto p = StepPrecision::of(ctx, name());
    const Shape outShape = outputShape(input.shape());
    const std::int64_t T = tokens_, D = width_, H = heads_, dh = D / H, N = outShape[0] / T, ld = 3 * D;
    const AttentionPrecision a = AttentionPrecision::of(p);
    const Format compute = a.operands.compute;
    const GemmPrecision gemm = a.gemm;
    const StepPrecision& operands = a.operands;
    qkv_ = &operandIn(ctx, operands, unpacked(input), roundedQkv_, name(), TensorKind::activation, false);
    // The scores' format: storage, or fp32 where they are kept so (as a fused kernel does,
    // which holds them on chip and never in memory; here they are held as the lab holds them).
    const Format scores = p.scoresFormat();
    prepareTensor(scores_, {N * H, T, T}, scores, ctx, MemoryCategory::workspace);
    prepareTensor(probabilities_, {N * H, T, T}, Format::fp32, ctx, MemoryCategory::activations);
    prepareTensor(output_, outShape, p.storage, ctx, MemoryCategory::activations);
    const float* qkv = qkv_->data();
    float* s = scores_.data();
    // scores = q k^T, rounded to storage (where fp16 overflows; fp32 scores are not rounded,
    // their tap shows their values), then times the scale. One
    // batched product per head over the images: image n's rows of qkv lie T * ld apart,
    // its (head's) planes of scores H * T * T apart.
    const std::int64_t imageRows = T * ld, imagePlanes = H * T * T;
    for (std::int64_t h = 0; h < H; ++h)
        ctx.backend->gemmBatched(Transpose::no, Transpose::yes, T, T, dh, qkv + h * dh, ld, imageRows,
                                 qkv + D + h * dh, ld, imageRows, 0.0f, s + h * T * T, T, imagePlanes, N, gemm);
    const std::int64_t count = N * H * T * T;
    roundTapped(ctx, scores, s, s, count, name() + std::string(kScoresTap), TensorKind::activation);
    ctx.backend->scale(s, count, scale_);
    if (scores != Format::fp32) ctx.backend->roundArray(scores, s, s, static_cast<std::size_t>(count), nullptr, nullptr);
    // Softmax along each row: fp32 (autocast, or fused attention), or every step rounded to storage.
    const Format f = p.fp32SensitiveOps || p.fp32AttentionScores ? Format::fp32 : p.storage;
    float* prob = probabilities_.data();
    ctx.backend->softmaxRows(f, s, N * H * T, T, prob);
    // The probabilities as the second matmul reads them.
    prepareTensor(operandP_, {N * H, T, T}, compute, ctx, MemoryCategory::activations);
    roundTapped(ctx, compute, prob, operandP_.data(), count, name() + ".softmax", TensorKind::activation);
    const float* pv = operandP_.data();
    float* o = output_.data();
    for (std::int64_t h = 0; h < H; ++h)
        ctx.backend->gemmBatched(Transpose::no, Transpose::no, T, dh, T, pv + h * T * T, T, imagePlanes,
                                 qkv + 2 * D + h * dh, ld, imageRows, 0.0f, o + h * dh, D, T * D, N, gemm);
    roundTapped(ctx, p.storage, o, o, N * T * D, name(), TensorKind::activation);
    return output_;
}

Tensor* Attention::backward(Tensor& gradOutput, StepContext& ctx, bool needInputGrad)
{
    if (!needInputGrad) return nullptr;
    const auto p = StepPrecision::of(ctx, name());
    requireGradientShape(name(), gradOutput, output_);
    const std::int64_t T = tokens_, D = width_, H = heads_, dh = D / H, N = output_.dim(0) / T, ld = 3 * D;
    const AttentionPrecision a = AttentionPrecision::of(p);
    const Format compute = a.operands.compute;
    const GemmPrecision gemm = a.gemm;
    const StepPrecision& operands = a.operands;
    const float* dO = operandIn(ctx, operands, unpacked(gradOutput), roundedGrad_, name(),
                                TensorKind::activationGrad, false).data();
    const float* qkv = qkv_->data();
    prepareTensor(gradInput_, {N * T, ld}, p.storage, ctx, MemoryCategory::workspace);
    float* dqkv = gradInput_.data();
    float* ds = scores_.data();
    const float* pv = operandP_.data();
    // dV = P^T dO and dP = dO V^T, per head, batched over the images (as forward).
    const std::int64_t imageRows = T * ld, imagePlanes = H * T * T, imageOut = T * D;
    for (std::int64_t h = 0; h < H; ++h) {
        ctx.backend->gemmBatched(Transpose::yes, Transpose::no, T, dh, T, pv + h * T * T, T, imagePlanes, dO + h * dh,
                                 D, imageOut, 0.0f, dqkv + 2 * D + h * dh, ld, imageRows, N, gemm);
        ctx.backend->gemmBatched(Transpose::no, Transpose::yes, T, T, dh, dO + h * dh, D, imageOut,
                                 qkv + 2 * D + h * dh, ld, imageRows, 0.0f, ds + h * T * T, T, imagePlanes, N, gemm);
    }
    const std::int64_t count = N * H * T * T;
    // dP and dS in the scores' format (fp32 scores: fp32 throughout, as a fused kernel's).
    const Format scores = p.scoresFormat();
    if (scores != Format::fp32) ctx.backend->roundArray(scores, ds, ds, static_cast<std::size_t>(count), nullptr, nullptr);
    // dS = P o (dP - rowsum(dP o P)) in fp32 from the softmax as computed, then the scale.
    ctx.backend->softmaxRowsBackward(probabilities_.data(), ds, N * H * T, T);
    roundTapped(ctx, scores, ds, ds, count, name() + std::string(kScoresTap), TensorKind::activationGrad);
    ctx.backend->scale(ds, count, scale_);
    ctx.backend->roundArray(compute, ds, ds, static_cast<std::size_t>(count), nullptr, nullptr);
    // dQ = dS K, dK = dS^T Q.
    for (std::int64_t h = 0; h < H; ++h) {
        ctx.backend->gemmBatched(Transpose::no, Transpose::no, T, dh, T, ds + h * T * T, T, imagePlanes,
                                 qkv + D + h * dh, ld, imageRows, 0.0f, dqkv + h * dh, ld, imageRows, N, gemm);
        ctx.backend->gemmBatched(Transpose::yes, Transpose::no, T, dh, T, ds + h * T * T, T, imagePlanes,
                                 qkv + h * dh, ld, imageRows, 0.0f, dqkv + D + h * dh, ld, imageRows, N, gemm);
    }
    roundTapped(ctx, p.storage, dqkv, dqkv, N * T * ld, name(), TensorKind::activationGrad);
    return &gradInput_;
}

std::int64_t Attention::keptBytesPerSample(const Shape& input, const PrecisionRecipe& recipe) const
{
    const Shape out = outputShape(input);
    const std::int64_t images = std::max<std::int64_t>(out[0] / tokens_, 1);
    const Format compute = AttentionPrecision::of(StepPrecision::of(recipe)).operands.compute;
    // The output, the probabilities in fp32 and as the matmul read them, a rounded input.
    std::int64_t bytes = out[0] * width_ * bytesOf(recipe.storage()) +
                         images * heads_ * tokens_ * tokens_ * (4 + bytesOf(compute));
    if (compute != recipe.storage()) bytes += input[0] * input[1] * 4;
    return bytes;
}

// Gelu -------------------------------------------------------------------------------

Tensor& Gelu::forward(Tensor& input, StepContext& ctx)
{
    requireOps(ctx, name());
    const auto p = StepPrecision::of(ctx, name());
    input_ = &unpacked(input);
    prepareTensor(output_, input.shape(), p.storage, ctx, MemoryCategory::activations);
    float* y = output_.data();
    ctx.backend->gelu(input.data(), y, input.size());
    roundTapped(ctx, p.storage, y, y, input.size(), name(), TensorKind::activation);
    return output_;
}

Tensor* Gelu::backward(Tensor& gradOutput, StepContext& ctx, bool needInputGrad)
{
    if (!needInputGrad) return nullptr;
    const auto p = StepPrecision::of(ctx, name());
    if (!input_ || gradOutput.size() != input_->size())
        throw std::invalid_argument("Layer " + name() + " got a gradient that does not match its output.");
    float* g = unpacked(gradOutput).data();
    ctx.backend->geluBackward(input_->data(), g, gradOutput.size());
    roundTapped(ctx, p.storage, g, g, gradOutput.size(), name(), TensorKind::activationGrad);
    return &gradOutput;
}

std::int64_t Gelu::keptBytesPerSample(const Shape& input, const PrecisionRecipe& recipe) const
{
    return elementCount(input) * bytesOf(recipe.storage());
}

// TransformerBlock -------------------------------------------------------------------

TransformerBlock::TransformerBlock(std::string name, std::int64_t tokens, std::int64_t width, std::int64_t heads)
    : Layer(std::move(name)),
      width_(width),
      ln1_(this->name() + ".ln1", width),
      qkv_(this->name() + ".qkv", width, 3 * width),
      attn_(this->name() + ".attn", tokens, width, heads),
      proj_(this->name() + ".proj", width, width),
      ln2_(this->name() + ".ln2", width),
      fc1_(this->name() + ".fc1", width, 4 * width),
      gelu_(this->name() + ".gelu"),
      fc2_(this->name() + ".fc2", 4 * width, width)
{
}

std::vector<Layer*> TransformerBlock::layers() const
{
    auto* self = const_cast<TransformerBlock*>(this);
    return {&self->ln1_, &self->qkv_, &self->attn_, &self->proj_, &self->ln2_, &self->fc1_, &self->gelu_, &self->fc2_};
}

std::vector<Parameter*> TransformerBlock::parameters()
{
    std::vector<Parameter*> all;
    for (Layer* layer : layers())
        for (Parameter* p : layer->parameters()) all.push_back(p);
    return all;
}

void TransformerBlock::initialize(std::uint64_t seed, int& layerIndex)
{
    for (Layer* layer : layers())
        if (!layer->parameters().empty()) layer->initialize(seed, layerIndex);
}

Shape TransformerBlock::outputShape(const Shape& input) const
{
    checkRows(name(), input, width_);
    return attn_.outputShape({input[0], 3 * width_});
}

Tensor& TransformerBlock::forward(Tensor& input, StepContext& ctx)
{
    const auto p = StepPrecision::of(ctx, name());
    const Shape shape = outputShape(input.shape());
    const std::int64_t n = elementCount(shape);
    const float* x = unpacked(input).data();
    // The residual stream keeps the input's format (fp32 plus a 16-bit branch is fp32).
    residual_ = input.storage() == Format::fp32 ? Format::fp32 : p.storage;
    Tensor* a = &ln1_.forward(input, ctx);
    a = &qkv_.forward(*a, ctx);
    a = &attn_.forward(*a, ctx);
    a = &proj_.forward(*a, ctx);
    prepareTensor(middle_, shape, residual_, ctx, MemoryCategory::activations);
    addRounded(ctx, residual_, x, unpacked(*a).data(), middle_.data(), n, name() + ".residual", TensorKind::activation);
    a = &ln2_.forward(middle_, ctx);
    a = &fc1_.forward(*a, ctx);
    a = &gelu_.forward(*a, ctx);
    a = &fc2_.forward(*a, ctx);
    prepareTensor(output_, shape, residual_, ctx, MemoryCategory::activations);
    addRounded(ctx, residual_, middle_.data(), unpacked(*a).data(), output_.data(), n, name() + ".residual",
               TensorKind::activation);
    return output_;
}

Tensor* TransformerBlock::backward(Tensor& gradOutput, StepContext& ctx, bool needInputGrad)
{
    requireGradientShape(name(), gradOutput, output_);
    const Shape shape = output_.shape();
    const std::int64_t n = elementCount(shape);
    const float* g = unpacked(gradOutput).data();
    // The MLP branch, then its residual: d(middle) = g + d(ln2's input). A layer may
    // overwrite the gradient it is handed: fc2 gets a copy.
    prepareTensor(work_, shape, gradOutput.storage(), ctx, MemoryCategory::workspace);
    work_ = gradOutput;
    Tensor* d = fc2_.backward(work_, ctx, true);
    d = gelu_.backward(*d, ctx, true);
    d = fc1_.backward(*d, ctx, true);
    d = ln2_.backward(*d, ctx, true);
    prepareTensor(gradMiddle_, shape, residual_, ctx, MemoryCategory::workspace);
    addRounded(ctx, residual_, g, unpacked(*d).data(), gradMiddle_.data(), n, name() + ".residual",
               TensorKind::activationGrad);
    // The attention branch, then its residual.
    work_ = gradMiddle_;
    d = proj_.backward(work_, ctx, true);
    d = attn_.backward(*d, ctx, true);
    d = qkv_.backward(*d, ctx, true);
    d = ln1_.backward(*d, ctx, needInputGrad);
    if (!needInputGrad) return nullptr;
    prepareTensor(gradInput_, shape, residual_, ctx, MemoryCategory::workspace);
    addRounded(ctx, residual_, gradMiddle_.data(), unpacked(*d).data(), gradInput_.data(), n, name() + ".residual",
               TensorKind::activationGrad);
    return &gradInput_;
}

std::int64_t TransformerBlock::keptBytesPerSample(const Shape& input, const PrecisionRecipe& recipe) const
{
    const Shape shape = outputShape(input);
    // The two residual sums, fp32 beside fp32 positions (master weights), else in storage.
    const Format residual = recipe.keepsMasterCopy() ? Format::fp32 : recipe.storage();
    std::int64_t bytes = 2 * elementCount(shape) * bytesOf(residual);
    Shape s = input;
    for (Layer* layer : layers()) {
        bytes += layer->keptBytesPerSample(s, recipe);
        s = layer->outputShape(s);
    }
    return bytes;
}

// TokenMeanPool ----------------------------------------------------------------------

Shape TokenMeanPool::outputShape(const Shape& input) const
{
    if (input.size() != 2 || input[0] % tokens_ != 0)
        throw std::invalid_argument("Layer " + name() + " expects (N * " + std::to_string(tokens_) +
                                    ", width) tokens, got " + shapeString(input) + ".");
    return {input[0] / tokens_, input[1]};
}

Tensor& TokenMeanPool::forward(Tensor& input, StepContext& ctx)
{
    requireOps(ctx, name());
    const Shape out = outputShape(input.shape());
    inputShape_ = input.shape();
    const float* x = unpacked(input).data();
    // The mean of the residual stream, in its format.
    prepareTensor(output_, out, input.storage(), ctx, MemoryCategory::activations);
    const std::int64_t N = out[0], D = out[1];
    float* y = output_.data();
    ctx.backend->meanTokens(x, N, tokens_, D, y);
    roundTapped(ctx, input.storage(), y, y, N * D, name(), TensorKind::activation);
    return output_;
}

Tensor* TokenMeanPool::backward(Tensor& gradOutput, StepContext& ctx, bool needInputGrad)
{
    if (!needInputGrad) return nullptr;
    requireGradientShape(name(), gradOutput, output_);
    const float* g = unpacked(gradOutput).data();
    const Format f = output_.storage();
    prepareTensor(gradInput_, inputShape_, f, ctx, MemoryCategory::workspace);
    float* dx = gradInput_.data();
    ctx.backend->meanTokensBackward(g, output_.dim(0), tokens_, output_.dim(1), dx);
    roundTapped(ctx, f, dx, dx, gradInput_.size(), name(), TensorKind::activationGrad);
    return &gradInput_;
}

std::int64_t TokenMeanPool::keptBytesPerSample(const Shape& input, const PrecisionRecipe& recipe) const
{
    return elementCount(outputShape(input)) * bytesOf(recipe.storage());
}

bool isResidualBranchWeight(const Parameter& p)
{
    if (p.name != "weight" || !p.layer.starts_with("block")) return false;
    const std::string_view layer = p.layer;
    return layer.ends_with(".proj") || layer.ends_with(".fc2");
}

std::optional<Format> transformerTapFormat(std::string_view tap, const PrecisionRecipe& recipe)
{
    const auto ownedBy = [&](std::string_view suffix) {
        return tap.size() > suffix.size() && tap.substr(tap.size() - suffix.size()) == suffix;
    };
    // As the layer that rounds them decides (its own precision applied).
    const auto layerOf = [&](std::string_view suffix) {
        return StepPrecision::of(recipe.forLayer(tap.substr(0, tap.size() - suffix.size())));
    };
    if (ownedBy(LayerNorm::kStatisticsTap)) return layerOf(LayerNorm::kStatisticsTap).statisticsFormat();
    if (ownedBy(Attention::kScoresTap)) return layerOf(Attention::kScoresTap).scoresFormat();
    return std::nullopt;
}

}  // namespace plab
