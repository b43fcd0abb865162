// Shared rounding sites of the layers: parallel bulk rounding with telemetry taps, and the
// quantisation of matmul/conv inputs under the FP8 and MX recipes.
#include "nn/layer_ops.h"

#include "numerics/quantize.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <stdexcept>
#include <string>
#include <string_view>

namespace plab {

StepPrecision StepPrecision::of(const PrecisionRecipe& recipe)
{
    StepPrecision p;
    p.compute = recipe.compute;
    p.storage = recipe.storage();
    p.fp32Accumulate = recipe.fp32Accumulate;
    p.grad = recipe.gradientFormat();
    p.fp32SensitiveOps = recipe.fp32SensitiveOps;
    p.quant = recipe.quantization;
    return p;
}

StepPrecision StepPrecision::of(const StepContext& ctx, std::string_view layer)
{
    if (!ctx.recipe || !ctx.backend)
        throw std::invalid_argument("A model step needs a precision recipe and a compute backend in its context.");
    return ctx.recipe->layers.empty() ? of(*ctx.recipe) : of(ctx.recipe->forLayer(layer));
}

void requireGradientShape(std::string_view layer, const Tensor& gradOutput, const Tensor& output)
{
    if (gradOutput.shape() != output.shape())
        throw std::invalid_argument("Layer " + std::string(layer) + " got a gradient of shape " +
                                    shapeString(gradOutput.shape()) + " for an output of shape " +
                                    shapeString(output.shape()) + ".");
}

TelemetryCollector::Sink tapSink(const StepContext& ctx, std::string_view layer, TensorKind kind)
{
    if (!ctx.telemetry) return {nullptr, nullptr};
    return ctx.telemetry->sink(layer, kind);
}

void roundTapped(StepContext& ctx, Format f, const float* src, float* dst, std::int64_t n,
                 std::string_view layer, TensorKind kind)
{
    const auto sink = tapSink(ctx, layer, kind);
    ctx.backend->roundArray(f, src, dst, static_cast<std::size_t>(n), sink.stats, sink.hist);
}

void prepareTensor(Tensor& t, const Shape& shape, Format storage, StepContext& ctx, MemoryCategory category,
                   bool packed, NewElements added)
{
    t.place(ctx.backend->allocator());
    if (t.packed() != packed || (packed && t.storage() != storage)) t.discard();
    if (packed) {
        t.setStorage(storage);
        t.pack();   // empty: nothing converted
        t.resize(shape, added);
    } else {
        t.resize(shape, added);
        t.setStorage(storage);
    }
    t.track(ctx.memory, category);
}

namespace {
std::atomic<PackedStorage>& packedStorageSwitch()
{
    static std::atomic<PackedStorage> setting{[] {
        const char* v = std::getenv("PLAB_PACKED_STORAGE");
        const std::string_view s = v ? v : "";
        return s == "on" ? PackedStorage::on : s == "off" ? PackedStorage::off : PackedStorage::byDefault;
    }()};
    return setting;
}
}  // namespace

void setPackedStorage(PackedStorage setting) { packedStorageSwitch() = setting; }
PackedStorage packedStorageSetting() { return packedStorageSwitch(); }
void setPackedStorageEnabled(bool enabled) { setPackedStorage(enabled ? PackedStorage::on : PackedStorage::off); }

bool packsStorageOn(const ComputeBackend& backend)
{
    if (!backend.handlesPackedTensors()) return false;
    switch (packedStorageSetting()) {
    case PackedStorage::on: return true;
    case PackedStorage::off: return false;
    case PackedStorage::byDefault: break;
    }
    return backend.packsByDefault();
}

bool packableStorage(Format storage, bool quantizes)
{
    return formatInfo(storage).packable16() && !quantizes;
}

bool packsStorage(const StepContext& ctx, const StepPrecision& p)
{
    return packableStorage(p.storage, p.quantizes()) && packsStorageOn(*ctx.backend);
}

Tensor& workBuffer(StepContext& ctx, int slot, const Shape& shape, Tensor& own)
{
    Tensor& t = ctx.work ? (*ctx.work)[static_cast<std::size_t>(slot)] : own;
    prepareTensor(t, shape, Format::fp32, ctx, MemoryCategory::workspace, false, NewElements::undefined);
    return t;
}

const Tensor& widenedInto(StepContext& ctx, int slot, const Tensor& packed, Tensor& own)
{
    Tensor& wide = workBuffer(ctx, slot, packed.shape(), own);
    ctx.backend->widen16(packed.storage(), packed.bits16(), packed.size(), wide.data(), packed.size(), 1,
                         packed.size());
    return wide;
}

bool operandAsItIs(const Tensor& packed, const StepPrecision& p)
{
    return packed.packed() && packed.storage() == p.compute && !p.quantizes();
}

void roundTappedTo16(StepContext& ctx, Format f, const float* src, Tensor& out, std::string_view layer,
                     TensorKind kind)
{
    const auto sink = tapSink(ctx, layer, kind);
    ctx.backend->roundTo16(f, src, out.size(), out.bits16(), out.size(), 1, out.size(), sink.stats, sink.hist);
}

const std::uint16_t* patternsOf(StepContext& ctx, Format f, const Tensor& t, Tensor& bits)
{
    prepareTensor(bits, t.shape(), f, ctx, MemoryCategory::workspace, true);
    // Representable values: the rounding moves none of them, and counts nothing.
    ctx.backend->roundTo16(f, t.data(), t.size(), bits.bits16(), t.size(), 1, t.size(), nullptr, nullptr);
    return bits.bits16();
}

namespace {
std::atomic<std::int64_t>& packedBlockSetting()
{
    static std::atomic<std::int64_t> values{[] {
        const char* v = std::getenv("PLAB_PACKED_BLOCK_VALUES");
        const long long n = v ? std::atoll(v) : 0;
        return n > 0 ? static_cast<std::int64_t>(n) : std::int64_t{8} << 20;
    }()};
    return values;
}
}  // namespace

std::int64_t packedBlockValues() { return packedBlockSetting(); }
void setPackedBlockValues(std::int64_t values) { packedBlockSetting() = std::max<std::int64_t>(1, values); }

std::int64_t packedBlockValues(const StepContext& ctx, const GemmPrecision& precision, std::int64_t packedValues)
{
    const std::int64_t most = packedBlockValues();
    if (ctx.backend->multiplies16(precision)) return most;
    return std::clamp(packedValues / 4, std::max<std::int64_t>(1, most / 32), most);
}

std::int64_t leastGemmBlock(std::int64_t others)
{
    constexpr std::int64_t kLeastProduct = std::int64_t{1} << 21;
    return std::max<std::int64_t>(16, (kLeastProduct + std::max<std::int64_t>(others, 1) - 1) /
                                          std::max<std::int64_t>(others, 1));
}

Pieces piecesOf(std::int64_t total, std::int64_t most, std::int64_t least, std::int64_t granule)
{
    Pieces p;
    p.total = std::max<std::int64_t>(total, 0);
    most = std::max<std::int64_t>(most, 1);
    // A granule wider than `most` allows would override that budget: then no granule.
    p.granule = std::max<std::int64_t>(granule, 1) <= most ? std::max<std::int64_t>(granule, 1) : 1;
    // Starts rounded down to the granule widen a piece by up to granule - 1: pieces of at
    // most `most` take as many as `most - (granule - 1)` asks for...
    const std::int64_t narrowed = most - (p.granule - 1);
    const std::int64_t wanted = (p.total + narrowed - 1) / narrowed;
    // ... and each keeps at least `least`, rounded up to the granule (none empty).
    const std::int64_t fewest = (std::max<std::int64_t>(least, 1) + p.granule - 1) / p.granule * p.granule;
    p.count = std::max<std::int64_t>(1, std::min(wanted, p.total / fewest));
    return p;
}

std::int64_t Pieces::largest() const
{
    if (granule == 1) return (total + count - 1) / count;
    std::int64_t widest = 0;
    for (std::int64_t i = 0; i < count; ++i) widest = std::max(widest, begin(i + 1) - begin(i));
    return widest;
}

PieceGroups pieceGroups(const GemmCut& cut, bool columns, std::int64_t extent, std::int64_t most, std::int64_t least,
                        std::int64_t roomy)
{
    PieceGroups g;
    if (cut.count < 1 || cut.columns != columns || cut.extent != extent) {   // one group, the whole
        g.cut = {columns, extent, extent, 1};
        g.firstPiece = {0, 1};
        return g;
    }
    g.cut = cut;
    g.firstPiece.push_back(0);
    for (std::int64_t p = 0; p < cut.count;) {
        // One piece, `least` where they fit in `roomy`, more where they fit in `most`.
        auto fits = [&](std::int64_t end) {
            const std::int64_t width = cut.begin(end) - cut.begin(p);
            return width <= most || (end - p <= least && width <= roomy);
        };
        std::int64_t q = p + 1;
        while (q < cut.count && fits(q + 1)) ++q;
        // A multiple of `least` pieces where more fit: the threads take a group's pieces side
        // by side, so a group of 3 on 2 threads leaves one idle for its last piece (the seed
        // CNN's conv2 in groups of 3, 3 and 2 rather than 2, 2, 2 and 2).
        if (least > 1 && q - p > least) q = p + (q - p) / least * least;
        g.firstPiece.push_back(q);
        p = q;
    }
    return g;
}

std::int64_t PieceGroups::largest() const
{
    std::int64_t widest = 0;
    for (std::int64_t i = 0; i < count(); ++i) widest = std::max(widest, begin(i + 1) - begin(i));
    return widest;
}

void gemmGroup(StepContext& ctx, const PieceGroups& groups, std::int64_t i, Transpose transA, Transpose transB,
               std::int64_t M, std::int64_t N, std::int64_t K, const float* A, std::int64_t lda, const float* B,
               std::int64_t ldb, float beta, float* C, std::int64_t ldc, const GemmPrecision& precision)
{
    if (groups.count() == 1) {
        ctx.backend->gemm(transA, transB, M, N, K, A, lda, B, ldb, beta, C, ldc, precision);
        return;
    }
    const auto first = groups.firstPiece[static_cast<std::size_t>(i)];
    const auto last = groups.firstPiece[static_cast<std::size_t>(i + 1)];
    ctx.backend->gemmPieces(groups.cut, first, last, transA, transB, M, N, K, A, lda, B, ldb, beta, C, ldc, precision);
}

void copyColumns(StepContext& ctx, const float* src, std::int64_t srcLd, float* dst, std::int64_t dstLd,
                 std::int64_t rows, std::int64_t cols)
{
    if (rows <= 0 || cols <= 0) return;
    const std::size_t bytes = static_cast<std::size_t>(cols) * sizeof(float);
    DeviceAllocator* device = ctx.backend->allocator();
    for (std::int64_t r = 0; r < rows; ++r) {
        if (device) device->copy(dst + r * dstLd, src + r * srcLd, bytes);
        else std::memmove(dst + r * dstLd, src + r * srcLd, bytes);
    }
}

bool sumsDependOnCut(const StepContext& ctx, const GemmPrecision& precision, std::int64_t M, std::int64_t N,
                     std::int64_t K)
{
    return ctx.backend->gemmCut(precision, M, N, K).count > 0;
}

std::int64_t deviceGranule(const StepContext& ctx, std::int64_t itemBytes)
{
    if (!ctx.backend->allocator()) return 1;
    return 16 / std::gcd<std::int64_t>(std::max<std::int64_t>(itemBytes, 1), 16);
}

QuantizedStorage quantizedStorageOf(const StepPrecision& p, OperandRole role)
{
    QuantizedStorage q;
    q.elementBits = miniFormatInfo(quantizedFormat(p.quant, role)).bits();
    if (p.quant.blockScaled()) {
        q.blockSize = p.quant.info().blockSize;
        if (p.quant.info().scale == QuantScale::blockE8M0) q.tensorBytes = 0;   // MX: block scales only
    }
    return q;
}

void prepareQuantized(Tensor& t, const Shape& shape, const QuantizedStorage& q, StepContext& ctx,
                      MemoryCategory category)
{
    // The model first, then the size: the accountant never sees the fp32 size in between.
    t.place(ctx.backend->allocator());
    t.setQuantizedStorage(q);
    t.resize(shape);
    t.track(ctx.memory, category);
}

void addBiasAndRound(StepContext& ctx, Format f, Tensor& x, const Tensor& bias, std::int64_t period,
                     std::int64_t repeat, std::string_view layer, TensorKind kind)
{
    // fp32 has no rounding site, so no tap either.
    const auto sink = f == Format::fp32 ? TelemetryCollector::Sink{nullptr, nullptr} : tapSink(ctx, layer, kind);
    ctx.backend->addBiasRound(f, x.data(), x.size(), bias.data(), period, repeat, sink.stats, sink.hist);
}

const Tensor& operandIn(StepContext& ctx, const StepPrecision& p, const Tensor& t,
                        Tensor& workspace, std::string_view layer, TensorKind kind, bool tap)
{
    if (!p.roundsOperands() || t.storage() == p.compute) return t;
    prepareTensor(workspace, t.shape(), p.compute, ctx, MemoryCategory::workspace);
    if (tap) {
        roundTapped(ctx, p.compute, t.data(), workspace.data(), t.size(), layer, kind);
    } else {
        ctx.backend->roundArray(p.compute, t.data(), workspace.data(), static_cast<std::size_t>(t.size()),
                                nullptr, nullptr);
    }
    return workspace;
}

TensorKind quantizedKind(OperandRole role)
{
    switch (role) {
    case OperandRole::input: return TensorKind::quantizedActivation;
    case OperandRole::weight: return TensorKind::quantizedWeight;
    case OperandRole::gradOutput: return TensorKind::quantizedActivationGrad;
    }
    return TensorKind::quantizedActivation;
}

MiniFormat quantizedFormat(const Quantization& q, OperandRole role)
{
    return role == OperandRole::gradOutput ? q.gradientFormat() : q.forwardFormat();
}

void OperandScaler::adopt(const Quantization& q)
{
    if (q == settings_ && history_.size() == static_cast<std::size_t>(q.amaxHistory)) return;
    settings_ = q;
    history_.assign(static_cast<std::size_t>(q.amaxHistory), 0.0f);
    next_ = filled_ = 0;
    scale_ = 1.0f;
}

float OperandScaler::scale(const Quantization& q, MiniFormat f, float currentAmax)
{
    adopt(q);
    switch (q.info().scale) {
    case QuantScale::tensorDelayed: return scale_;
    // Transformer Engine's current scaling: a tensor of zeros keeps scale 1.
    case QuantScale::tensorCurrent: return fp8ScaleFor(f, currentAmax, 1.0f, q.margin);
    default: return 1.0f;
    }
}

void OperandScaler::record(const Quantization& q, MiniFormat f, float amax)
{
    adopt(q);
    if (q.info().scale != QuantScale::tensorDelayed) return;
    history_[next_] = amax;
    next_ = (next_ + 1) % history_.size();
    filled_ = std::min(filled_ + 1, history_.size());
    float reduced = amax;   // most_recent
    if (q.algorithm == AmaxAlgorithm::max) {
        // NaN wins, as torch.max over the history does; fp8ScaleFor then keeps the scale.
        for (std::size_t i = 0; i < filled_; ++i)
            if (std::isnan(history_[i]) || history_[i] > reduced) reduced = history_[i];
    }
    scale_ = fp8ScaleFor(f, reduced, scale_, q.margin);
}

namespace {

// The scale for this quantisation of t, and the quantiser's op; current scaling takes t's
// amax from `amax` (called only then).
template <class Amax>
QuantizeOp scaledOp(const StepPrecision& p, OperandRole role, OperandScaler& scaler, const Amax& amax)
{
    const MiniFormat f = quantizedFormat(p.quant, role);
    const float currentAmax = p.quant.info().scale == QuantScale::tensorCurrent ? amax() : 0.0f;
    QuantizeOp op;
    op.element = f;
    op.scale = scaler.scale(p.quant, f, currentAmax);
    op.scaleInv = 1.0f / op.scale;
    return op;
}

// After quantising with op: the operand the GEMMs read, the amax history, the tap's scale.
Fp8Operand recordQuantized(StepContext& ctx, const StepPrecision& p, const QuantizeOp& op, float amax,
                           const TelemetryCollector::Sink& sink, OperandScaler& scaler)
{
    const Fp8Operand operand{true, op.element, op.scale, op.scaleInv};
    scaler.setOperand(operand);
    if (ctx.training) scaler.record(p.quant, op.element, amax);
    if (sink.scaling) {
        sink.scaling->present = sink.scaling->tensorScale = true;
        sink.scaling->scale = op.scale;
        sink.scaling->amax = amax;
    }
    return operand;
}

}  // namespace

const Tensor& quantizedOperand(StepContext& ctx, const StepPrecision& p, const Tensor& t, Tensor& workspace,
                               std::string_view layer, OperandRole role, OperandScaler& scaler)
{
    // The values dequantised, in fp32; the accountant counts the FP8 copy a GPU would hold
    // (quantizedStorageOf).
    prepareQuantized(workspace, t.shape(), quantizedStorageOf(p, role), ctx, MemoryCategory::workspace);
    quantizedValuesInto(ctx, p, t, workspace, layer, role, scaler);
    return workspace;
}

bool holdsCodes(const StepContext& ctx, const StepPrecision& p)
{
    return p.quantizes() && !p.quant.blockScaled() && ctx.backend->holdsFp8Codes() && packsStorageOn(*ctx.backend);
}

namespace {
// The per-tensor op for t (held packed or not) under its scaler.
QuantizeOp scaledOpOf(StepContext& ctx, const StepPrecision& p, const Tensor& t, OperandRole role,
                      OperandScaler& scaler)
{
    return scaledOp(p, role, scaler, [&] {
        return t.packed() ? ctx.backend->amax16(t.storage(), t.bits16(), t.size()) : ctx.backend->amax(t.data(), t.size());
    });
}
}  // namespace

const Fp8Codes& quantizedCodes(StepContext& ctx, const StepPrecision& p, const Tensor& t, Fp8Codes& out,
                               std::string_view layer, OperandRole role, OperandScaler& scaler)
{
    const QuantizeOp op = scaledOpOf(ctx, p, t, role, scaler);
    out.shape = t.shape();
    out.codes.track(ctx.memory, MemoryCategory::workspace);
    out.codes.resize(static_cast<std::size_t>(t.size()), ctx.backend->allocator());
    const auto sink = tapSink(ctx, layer, quantizedKind(role));
    const float amax =
        t.packed()
            ? ctx.backend->quantize16ToCodes(op, t.storage(), t.bits16(), out.codes.data(), t.size(), sink.stats,
                                             sink.hist)
            : ctx.backend->quantizeToCodes(op, t.data(), out.codes.data(), t.size(), sink.stats, sink.hist);
    out.operand = recordQuantized(ctx, p, op, amax, sink, scaler);
    return out;
}

void quantizedValuesInto(StepContext& ctx, const StepPrecision& p, const Tensor& t, Tensor& values,
                         std::string_view layer, OperandRole role, OperandScaler& scaler)
{
    if (values.shape() != t.shape() || values.packed())
        throw std::logic_error("quantizedValuesInto needs an fp32 buffer shaped as the operand.");
    const QuantizeOp op = scaledOpOf(ctx, p, t, role, scaler);
    const auto sink = tapSink(ctx, layer, quantizedKind(role));
    const float amax = t.packed() ? ctx.backend->quantize16(op, t.storage(), t.bits16(), values.data(), t.size(),
                                                            sink.stats, sink.hist)
                                  : ctx.backend->quantize(op, t.data(), values.data(), t.size(), sink.stats, sink.hist,
                                                          nullptr);
    recordQuantized(ctx, p, op, amax, sink, scaler);
}

bool mxInBlocks(const StepContext& ctx, const StepPrecision& p)
{
    return p.quant.blockScaled() && ctx.backend->holdsFp8Codes() && packsStorageOn(*ctx.backend);
}

bool packsAroundQuantized(const StepContext& ctx, const StepPrecision& p)
{
    return (holdsCodes(ctx, p) || mxInBlocks(ctx, p)) && packableStorage(p.storage, false);
}

void decodeRows(StepContext& ctx, const Fp8Codes& codes, std::int64_t at, std::int64_t ld, float* dst,
                std::int64_t dstLd, std::int64_t rows, std::int64_t cols)
{
    ctx.backend->decodeFp8(codes.operand.element, codes.operand.scaleInv, codes.data() + at, ld, dst, dstLd, rows,
                           cols);
}

const Tensor& decodedInto(StepContext& ctx, int slot, const Fp8Codes& codes, Tensor& own)
{
    Tensor& values = workBuffer(ctx, slot, codes.shape, own);
    decodeRows(ctx, codes, 0, codes.size(), values.data(), codes.size(), 1, codes.size());
    return values;
}

GemmPrecision layerGemm(const StepPrecision& p, const OperandScalers& scalers, OperandRole a, OperandRole b)
{
    GemmPrecision g = p.gemm();
    if (p.quantizes() && !p.quant.blockScaled() && g.fp32Accumulate) {
        g.a = scalers.of(a).operand();
        g.b = scalers.of(b).operand();
    }
    return g;
}

const Tensor& layerOperand(StepContext& ctx, const StepPrecision& p, const Tensor& t, Tensor& workspace,
                           std::string_view layer, OperandRole role, OperandScalers& scalers)
{
    if (p.quant.blockScaled())
        throw std::logic_error("Layer " + std::string(layer) + ": MX operands are quantised by blockOperand.");
    if (p.quantizes()) return quantizedOperand(ctx, p, t, workspace, layer, role, scalers.of(role));
    const bool tap = role != OperandRole::weight && p.compute == Format::tf32;
    const TensorKind kind = role == OperandRole::gradOutput ? TensorKind::activationGrad : TensorKind::activation;
    return operandIn(ctx, p, t, workspace, layer, kind, tap);
}

float nvfp4TensorAmax(StepContext& ctx, const StepPrecision& p, const Tensor& t)
{
    if (p.quant.info().scale != QuantScale::blockE4M3) return 0.0f;   // no tensor scale over the blocks'
    return t.packed() ? ctx.backend->amax16(t.storage(), t.bits16(), t.size()) : ctx.backend->amax(t.data(), t.size());
}

namespace {

QuantizeOp blockOp(const StepPrecision& p, OperandRole role, std::int64_t rows, std::int64_t cols, std::int64_t ld,
                   bool alongRows, float tensorAmax)
{
    QuantizeOp op;
    op.element = quantizedFormat(p.quant, role);
    op.blocks = true;
    op.blockScaling = p.quant.info().scale == QuantScale::blockE4M3 ? BlockScaling::nvfp4 : BlockScaling::mx;
    op.mxScale = p.quant.mxScale;
    op.tensorAmax = tensorAmax;
    op.rows = rows;
    op.cols = cols;
    op.ld = ld;
    op.alongRows = alongRows;
    return op;
}

// Runs `quantize(stats, hist, blockScales)` into the tap of (layer, role) and marks its
// scaling: block scales on histogram steps only, like the histograms.
template <typename Quantize>
void tappedBlocks(StepContext& ctx, const QuantizeOp& op, std::string_view layer, OperandRole role,
                  const Quantize& quantize)
{
    const auto sink = tapSink(ctx, layer, quantizedKind(role));
    quantize(sink.stats, sink.hist, sink.hist && sink.scaling ? &sink.scaling->blockScales : nullptr);
    if (!sink.scaling) return;
    sink.scaling->present = sink.scaling->blocks = true;
    if (op.blockScaling == BlockScaling::nvfp4) {   // the tensor's scale beside the blocks'
        sink.scaling->tensorScale = true;
        sink.scaling->scale = nvfp4TensorScale(op.tensorAmax);
        sink.scaling->amax = op.tensorAmax;
    }
}

}  // namespace

void quantizeBlocks(StepContext& ctx, const StepPrecision& p, const float* src, float* dst, std::int64_t rows,
                    std::int64_t cols, std::int64_t ld, bool alongRows, std::string_view layer, OperandRole role,
                    float tensorAmax)
{
    const QuantizeOp op = blockOp(p, role, rows, cols, ld, alongRows, tensorAmax);
    tappedBlocks(ctx, op, layer, role, [&](RoundingStats* stats, GradientHistogram* hist, GradientHistogram* scales) {
        ctx.backend->quantize(op, src, dst, rows * cols, stats, hist, scales);
    });
}

void lowerInBlocks(StepContext& ctx, const StepPrecision& p, const ConvGeometry& g, const Tensor& src,
                   std::int64_t n0, std::int64_t count, float* cols, bool alongRows, std::string_view layer,
                   float tensorAmax)
{
    const std::int64_t K = g.patchSize(), columns = count * g.planeSize();
    const QuantizeOp op = blockOp(p, OperandRole::input, K, columns, columns, alongRows, tensorAmax);
    tappedBlocks(ctx, op, layer, OperandRole::input,
                 [&](RoundingStats* stats, GradientHistogram* hist, GradientHistogram* scales) {
        if (src.packed())
            ctx.backend->im2colPacked(g, src.storage(), src.bits16(), n0, count, cols);
        else if (ctx.backend->im2colQuantize(g, src.data(), n0, count, cols, op, stats, hist, scales))
            return;
        else
            ctx.backend->im2col(g, src.data(), n0, count, cols);
        ctx.backend->quantize(op, cols, cols, K * columns, stats, hist, scales);
    });
}

const Tensor& blockOperand(StepContext& ctx, const StepPrecision& p, const Tensor& t, std::int64_t rows,
                           std::int64_t cols, bool alongRows, Tensor& workspace, std::string_view layer,
                           OperandRole role)
{
    if (rows * cols != t.size())
        throw std::invalid_argument("Layer " + std::string(layer) + " quantises a tensor of " +
                                    std::to_string(t.size()) + " values as " + std::to_string(rows) + " x " +
                                    std::to_string(cols) + ".");
    // Held as the fp32 values the GEMM reads; counted so where whole copies are not the
    // rule (mxInBlocks: these are the weights' and a linear layer's small dY), else as the
    // format stores them (a device's MX copy).
    if (mxInBlocks(ctx, p))
        prepareTensor(workspace, t.shape(), Format::fp32, ctx, MemoryCategory::workspace, false, NewElements::undefined);
    else
        prepareQuantized(workspace, t.shape(), quantizedStorageOf(p, role), ctx, MemoryCategory::workspace);
    quantizeBlocks(ctx, p, t.data(), workspace.data(), rows, cols, cols, alongRows, layer, role,
                   nvfp4TensorAmax(ctx, p, t));
    return workspace;
}

const Tensor& blockOperandInto(StepContext& ctx, const StepPrecision& p, const Tensor& t, std::int64_t rows,
                               std::int64_t cols, bool alongRows, int slot, Tensor& own, std::string_view layer,
                               OperandRole role)
{
    if (rows * cols != t.size() || t.packed())
        throw std::invalid_argument("Layer " + std::string(layer) + " quantises a tensor of " +
                                    std::to_string(t.size()) + " values as " + std::to_string(rows) + " x " +
                                    std::to_string(cols) + (t.packed() ? " from its 16-bit patterns." : "."));
    Tensor& values = workBuffer(ctx, slot, t.shape(), own);
    quantizeBlocks(ctx, p, t.data(), values.data(), rows, cols, cols, alongRows, layer, role,
                   nvfp4TensorAmax(ctx, p, t));
    return values;
}

}  // namespace plab
