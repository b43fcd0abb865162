// Conv2d with a k x k kernel, stride 1 and "same" zero padding (the models use 3x3, pad
// 1), lowered to one GEMM per pass over the whole batch: im2col of the (C, N, H, W) input
// into cols (C*k*k, N*H*W), then output (Cout, N*H*W) = W (Cout, C*k*k) * cols.
// Very large batches are lowered in blocks of samples so the cols buffer stays bounded.
// A backend with a convolution library (the CUDA plugin's cuDNN) runs all three passes
// as library calls instead, on the same operands. A backward pass the library refuses
// after its forward pass ran (cuDNN's last algorithm refusing the shape at run time) is
// lowered from the kept input instead, as is the rest of that step's backward pass.
#pragma once

#include "backend/backend.h"
#include "nn/layer.h"
#include "nn/layer_ops.h"

#include <functional>

namespace plab {

struct StepPrecision;

class Conv2d final : public Layer {
public:
    Conv2d(std::string name, std::int64_t inChannels, std::int64_t outChannels, int kernel = 3);

    std::int64_t inChannels() const { return inChannels_; }
    std::int64_t outChannels() const { return outChannels_; }
    Parameter& weight() { return weight_; }   // (Cout, Cin, k, k)
    Parameter& bias() { return bias_; }       // (Cout)

    Shape outputShape(const Shape& input) const override;
    Tensor& forward(Tensor& input, StepContext& ctx) override;
    Tensor* backward(Tensor& gradOutput, StepContext& ctx, bool needInputGrad) override;
    std::vector<Parameter*> parameters() override { return {&weight_, &bias_}; }
    std::int64_t keptBytesPerSample(const Shape& input, const PrecisionRecipe& recipe) const override;
    std::int64_t loweredBytesPerSample(const Shape& input, const PrecisionRecipe& recipe) const override;

    // Upper bound of the cols buffer in elements (im2col of one block of samples).
    static constexpr std::int64_t kColsBudget = std::int64_t{32} << 20;

private:
    ConvGeometry geometryOf(const Shape& input) const;
    // The samples whose columns fit kColsBudget: a multiple of `granule` (deviceGranule) where
    // the batch does not fit whole and at least one granule does.
    std::int64_t samplesPerBlock(const ConvGeometry& g, std::int64_t granule) const;
    // Sizes cols_ for one block of samples of geometry_ and sets colsBlock_.
    void prepareColumns(StepContext& ctx, const StepPrecision& p);
    // The im2col + GEMM lowering: output_ from the operands, dW into weight_.grad, and dX
    // into gradInput_.
    void lowerAndMultiply(StepContext& ctx, const StepPrecision& p, float* target);
    void filterGradientLowered(StepContext& ctx, const StepPrecision& p, const Tensor& dY);
    // Backward with the quantised operands held as codes (codes_): dY quantised whole into
    // the first work buffer as values where it fits a block's budget, else into gradCodes_,
    // the filter gradient as filterGradientLowered's (dY then decoded span by span or block
    // by block), the input gradient as inputGradientLowered's, into gradInput_
    // packed block by block where the layer packs (packs_).
    void backwardFromCodes(StepContext& ctx, const StepPrecision& p, const Tensor& gradOutput, bool needInputGrad);
    void inputGradientFromCodes(StepContext& ctx, const StepPrecision& p);
    // Backward under mxInBlocks_: dY quantised a block of samples at a time into the step's
    // first work buffer (widened from its patterns when packed), never whole; the input
    // lowered and quantised block by block as forward; dX packed block by block where the
    // layer packs.
    void backwardInBlocks(StepContext& ctx, const StepPrecision& p, const Tensor& gradOutput, bool needInputGrad);
    // db (Cout) = row sums of dY as it arrived (packed or not), before any quantisation
    // (Transformer Engine sums it before the cast).
    void biasGradientAsArrived(StepContext& ctx, const Tensor& gradOutput);
    // The packed forward pass under MX (forwardPacked).
    void forwardInBlocks(StepContext& ctx, const StepPrecision& p, const GemmPrecision& precision);
    // dX from the weight operand w (fp32 values) and dY's blocks of the lowering:
    // dYBlock(n0, count, ld) returns samples [n0, n0 + count) of dY (fp32 values, rows ld
    // apart); into gradInput_ (packed block by block when it is packed).
    using BlockOfDY = std::function<const float*(std::int64_t n0, std::int64_t count, std::int64_t& ld)>;
    void inputGradientBySamples(StepContext& ctx, const StepPrecision& p, const Tensor& w, const BlockOfDY& dYBlock);
    void inputGradientLowered(StepContext& ctx, const StepPrecision& p, const Tensor& dY, float* target);
    // The library refused a backward pass: the rest of the step's backward is lowered.
    void lowerAfterRefusal(StepContext& ctx, const StepPrecision& p);
    // The output and gradients packed: the three passes in blocks of samples (and of
    // channels, or spans of pixels), each block's fp32 columns and GEMM results in buffers
    // of about packedBlockValues() values, so that no fp32 copy of a whole activation
    // exists. Every GEMM is a block of rows or columns of the unblocked one, or a span of its
    // sum cut where the BLAS cuts it anyway (gemmReductionCut): the same sums, the same bits.
    // Where the backend's sums depend on the cut (gemmCut), groups of its pieces instead
    // (forwardInPieces, inputGradientInPieces), and a filter gradient whose sum is too
    // short for spans takes a lowering block's dY widened whole.
    void forwardPacked(StepContext& ctx, const StepPrecision& p);
    // Where the backend's sums depend on how a product is cut (gemmCut): the unpacked
    // layer's products (one a block of unpackedLowering samples), each computed in groups
    // of the backend's pieces (pieceGroups), so that the packed layer has its bits.
    void forwardInPieces(StepContext& ctx, const StepPrecision& p, const GemmPrecision& precision);
    void inputGradientInPieces(StepContext& ctx, const StepPrecision& p, const GemmPrecision& dataGemm,
                               const Tensor& dY);
    // The samples per block of the unpacked layer's lowering (prepareColumns's colsBlock_).
    std::int64_t unpackedLowering(const StepContext& ctx) const;
    // The groups of pieces (pieceGroups) of a pass's unpacked products, one a lowering block
    // with an (M, samples * H * W) result and a sum of `sum`, each group's fp32 buffers within
    // the block budget of a packed tensor of `rows` rows (its columns, patchSize rows, twice
    // that): one entry a lowering block.
    std::vector<PieceGroups> loweringGroups(const StepContext& ctx, const GemmPrecision& precision, std::int64_t M,
                                            std::int64_t sum, std::int64_t rows) const;
    // The weight and bias gradients rounded to the storage format (when it is not fp32).
    void roundWeightGradients(StepContext& ctx, const StepPrecision& p);
    void filterGradientPacked(StepContext& ctx, const StepPrecision& p, const Tensor& dY);
    // The filter gradient's products (in filterGemm) over blocks of `lowering` samples, each
    // cut along its pixels into spans a multiple of `cut` long (ComputeBackend::
    // gemmReductionCut): the whole product's sums from a span of dY widened and the columns
    // of the samples it touches, in at most about `budget` (dY) and packedColumnValues
    // (columns) values.
    // dYColumns(at, width, dst) writes dY's columns [at, at + width) of every row (rows N * H * W
    // apart in dY) into dst (rows width apart), as fp32: widened, decoded, or (MX) copied and
    // quantised.
    using ColumnsOfDY = std::function<void(std::int64_t at, std::int64_t width, float* dst)>;
    // quantizeColumns (may be empty; MX) is called on each span's columns once lowered
    // (width columns from `columns`, rows ld apart).
    using SpanOfColumns = std::function<void(float* columns, std::int64_t ld, std::int64_t width)>;
    void filterGradientInSpans(StepContext& ctx, const GemmPrecision& filterGemm, const ColumnsOfDY& dYColumns,
                               std::int64_t lowering, std::int64_t cut, std::int64_t budget,
                               const SpanOfColumns& quantizeColumns = {});
    void inputGradientPacked(StepContext& ctx, const StepPrecision& p, const Tensor& dY);
    // Whether a backward GEMM of the packed passes reads 16-bit patterns (gemm16): the
    // forward pass did, and dY (stored in f) is in the compute format.
    bool readsPatterns(const StepContext& ctx, const GemmPrecision& gemm, const StepPrecision& p, Format f) const;
    // im2col of input channels [c0, c1) of samples [n0, n0 + count) of the input operand into
    // cols_, in the form cols_ holds: 16-bit patterns when packed (gemm16), else fp32.
    void lowerChannels(StepContext& ctx, std::int64_t c0, std::int64_t c1, std::int64_t n0, std::int64_t count);
    // Every channel of samples [n0, n0 + count) into cols_ as the forward pass reads them:
    // lowerChannels, or under MX lowered and quantised in blocks down the columns.
    void lowerInput(StepContext& ctx, const StepPrecision& p, std::int64_t n0, std::int64_t count);

    std::int64_t inChannels_, outChannels_;
    int kernel_;
    Parameter weight_, bias_;

    // Forward state kept for backward.
    ConvGeometry geometry_;
    const Tensor* inputOperand_ = nullptr;   // the input in the compute format
    float inputAmax_ = 0.0f;                 // NVFP4: its amax (the lowered input's tensor scale)
    const Tensor* weightOperand_ = nullptr;  // the weights in the compute format
    bool usesLibrary_ = false;               // the library ran forward, and has not refused backward since
    bool packs_ = false;                     // output and input gradient packed (packsStorage)
    bool multiplies16_ = false;              // the packed forward pass ran gemm16 on weightPatterns_
    bool colsHoldWholeBatch_ = false;        // cols_ holds the whole batch's lowering of this step's input
    bool codes_ = false;                     // the quantised operands are Fp8Codes (holdsCodes)
    bool mxInBlocks_ = false;                // MX / NVFP4 quantised block by block (mxInBlocks)
    std::int64_t colsBlock_ = 1;             // samples per block of cols_ (>= 1)

    Tensor roundedInput_;   // (Cin, N, H, W) tf32 rounding of the input
    Tensor roundedWeight_;  // (Cout, Cin, k, k) weights rounded to the compute format
    Tensor weightPatterns_; // the weight operand as 16-bit patterns (multiplies16_)
    Tensor cols_;           // (Cin*k*k, block*H*W) lowered input; reused for dcols in backward
    Tensor output_;         // (Cout, N, H, W)
    Tensor roundedGrad_;    // (Cout, N, H, W) tf32 rounding of dL/doutput
    Tensor gradInput_;       // (Cin, N, H, W)
    Fp8Codes inputCodes_, weightCodes_, gradCodes_;   // the quantised operands when codes_
    Tensor blockSums_;      // codes_ or mxInBlocks_, packed: a block of dX's sums before rounding
    const Tensor* quantizedGrad_ = nullptr;   // codes_: dY's quantised values, whole (small enough), or null
    OperandScalers scalers_;   // FP8 recipes: the operands' scales across steps
    Tensor ownWork_[2];        // fp32 work buffers when the step has none (StepContext::work)
};

}  // namespace plab
