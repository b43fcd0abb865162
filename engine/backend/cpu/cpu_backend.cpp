// Over 500 lines: the ComputeBackend interface is one class; most operations hand off to cpu_ops, im2col, gemm_emulated, native_gemm or update_math in a line or two, and the rest is the cut of a product into pieces for the thread pool and the block quantiser.
// The CPU backend: OpenBLAS sgemm for fp32-accumulated products (exact emulation of
// fp16/bf16/tf32 tensor-core products, whose products are exact in fp32), the exact
// reduced-format accumulation of gemm_emulated.cpp, oneDNN on native bf16/fp16 units for
// the hardware arithmetic (native_gemm.h), and parallel elementwise helpers.
#include "backend/backend.h"
#include "backend/cpu/blas_cuts.h"
#include "backend/cpu/gemm_emulated.h"
#include "backend/cpu/gemm_sparse.h"
#include "backend/cpu/im2col.h"
#include "backend/cpu/packed_ops.h"
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/native_gemm.h"
#include "backend/cpu/thread_pool.h"
#include "backend/cpu/transformer_ops.h"
#include "backend/cpu/update_ops.h"
#include "numerics/bulk_round.h"
#include "numerics/quantize.h"
#include "numerics/simd_level.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <string_view>
#include <thread>
#include <vector>

namespace plab {

namespace {

// The chunks of one parallel quantisation merged under one lock: counts are sums and the
// amax a maximum (NaN when a chunk saw one), so the result is exactly the serial one.
struct ChunkMerge {
    RoundingStats* stats;
    GradientHistogram* hist;
    GradientHistogram* blockScales;
    std::mutex mutex{};
    float largest = 0.0f;
    bool nan = false;

    // A chunk's counts (each may be null) and amax.
    void add(const RoundingStats* s, const GradientHistogram* h, const GradientHistogram* b, float chunkAmax)
    {
        std::lock_guard lock(mutex);
        if (stats && s) *stats += *s;
        if (hist && h) *hist += *h;
        if (blockScales && b) *blockScales += *b;
        nan |= std::isnan(chunkAmax);
        largest = chunkAmax > largest ? chunkAmax : largest;
    }
    float amax() const { return nan ? std::numeric_limits<float>::quiet_NaN() : largest; }
};

void checkBlocks(const QuantizeOp& op)
{
    if (op.blockScaling == BlockScaling::nvfp4 && op.element != MiniFormat::e2m1)
        throw std::invalid_argument("NVFP4 blocks hold FP4 E2M1 elements only.");
}

// The blocks of op over the (rows, cols) part at src (row stride op.stride()), into dst,
// with its counts merged.
void quantizeBlockPart(const QuantizeOp& op, const float* src, float* dst, std::int64_t rows, std::int64_t cols,
                       ChunkMerge& merge)
{
    RoundingStats s;
    GradientHistogram h, scales;
    GradientHistogram* hist = merge.hist ? &h : nullptr;
    GradientHistogram* blockScales = merge.blockScales ? &scales : nullptr;
    if (op.blockScaling == BlockScaling::nvfp4)
        quantizeNvfp4Blocks(src, dst, rows, cols, op.stride(), op.alongRows, op.tensorAmax, &s, hist, blockScales);
    else
        quantizeMxBlocks(op.element, src, dst, rows, cols, op.stride(), op.alongRows, &s, hist, blockScales, op.mxScale);
    merge.add(&s, hist, blockScales, 0.0f);
}

class CpuBackend final : public ComputeBackend {
public:
    CpuBackend(int threads, Arithmetic arithmetic) : pool_(threads), arithmetic_(arithmetic)
    {
        threads_ = threads;
        if (arithmetic_ == Arithmetic::hardware && (cpu::nativelySupported(Format::bf16) || cpu::nativelySupported(Format::fp16)))
            native_ = std::make_unique<cpu::NativeGemm>(pool_);
        openblas_set_num_threads(1);   // see sgemm(): the pool parallelises the GEMMs
        info_.name = "cpu";
        info_.available = true;
        info_.reason = "CPU reference backend, " + std::to_string(threads_) + " thread(s)";
        const char* config = openblas_get_config();
        info_.versions.push_back(config ? std::string(config) : std::string(OPENBLAS_VERSION));
        info_.versions.push_back("SIMD level: " + simdLevelDescription());
        info_.versions.push_back(std::string("bulk rounding: ") + bulkRoundPath());
        info_.versions.push_back(std::string("FP8/MX quantisers: ") + quantizePath());
        const std::string emulatedSums =
            simdLevel() >= SimdLevel::avx2
                ? std::string(simdLevelName(simdLevel())) +
                      " (exact emulation in lanes; steps with a zero product skipped where an operand is mostly zeros)"
                : "scalar (exact emulation)";
        info_.versions.push_back("fp16 accumulation: " + (cpu::cpuHasAvx512Fp16() ? std::string("avx512fp16") : emulatedSums));
        info_.versions.push_back("bf16/tf32 accumulation: " + emulatedSums);
        const std::string core = openblas_get_corename();
        info_.versions.push_back(
            "16-bit activations and gradients: held in 2 bytes (" +
            std::string(cutsSumAlike() ? "OpenBLAS's " + core +
                                             " kernels sum a product cut into blocks as the whole, so the packed layers' "
                                             "blocks give the same bits"
                                       : "OpenBLAS's " + core +
                                             " kernels sum a product cut into blocks in another order, so the packed "
                                             "layers compute in the pieces the unpacked layers' products are cut into") +
            "); per-tensor FP8 copies: held as 1-byte codes; MX and NVFP4: quantised a block of the lowering at a "
            "time, no whole copy kept; PLAB_PACKED_STORAGE=off holds all of them in fp32");
        info_.versions.push_back("native bf16: " + cpu::nativeSupportText(Format::bf16));
        info_.versions.push_back("native fp16: " + cpu::nativeSupportText(Format::fp16));
        // Every format, and sums in each of them: the CPU emulates what it lacks.
        info_.capabilities.compute = {Format::fp32, Format::tf32, Format::fp16, Format::bf16};
        info_.capabilities.sumsInCompute = {Format::tf32, Format::fp16, Format::bf16};
        info_.capabilities.quantizes = info_.capabilities.quantizesBlocks = true;
    }

    const BackendInfo& info() const override { return info_; }
    // FP8 codes, packed tensors (packed by default), the transformer's ops and the packed
    // updates; gemm16 where the hardware arithmetic multiplies the precision on native units,
    // no convolution library. The packed layers give the unpacked ones' bits on every kernel
    // family: where OpenBLAS sums cuts alike (cutsSumAlike) in their own blocks, elsewhere in
    // the pieces of this backend's cut of the unpacked products (gemmCut, gemmPieces). The
    // packed step measured as fast as the unpacked one on the seed CNN and 1.15-1.22 times
    // as long on small-cnn's 16-bit recipes on an AMD EPYC, with either kind of cut
    // (bench/RESULTS.md).
    bool supports(BackendOp op, const GemmPrecision& precision = {}) const override
    {
        switch (op) {
        case BackendOp::fp8Codes:
        case BackendOp::packedTensors:
        case BackendOp::packsByDefault:
        case BackendOp::transformer:
        case BackendOp::packedUpdates: return true;
        case BackendOp::gemm16: return runsNatively(precision) && !precision.fp8();
        case BackendOp::convolution16:
        case BackendOp::convolutionData16:
        case BackendOp::convolutionFilter16: return false;
        }
        return false;
    }
    int threads() const override { return threads_; }

    std::string arithmeticFor(const GemmPrecision& precision) const override
    {
        return cpuArithmeticFor(arithmetic_, precision);
    }

    std::int64_t scratchBytes() const override
    {
        return native_ ? static_cast<std::int64_t>(native_->workspaceBytes()) : 0;
    }

    void gemm(Transpose transA, Transpose transB, std::int64_t M, std::int64_t N, std::int64_t K,
              const float* A, std::int64_t lda, const float* B, std::int64_t ldb, float beta,
              float* C, std::int64_t ldc, GemmPrecision precision) override
    {
        if (M < 0 || N < 0 || K < 0) throw std::invalid_argument("gemm got a negative dimension.");
        if (M == 0 || N == 0) return;
        if (runsNatively(precision)) {
            // False when oneDNN has no primitive for this shape: the exact arithmetic then,
            // within the same bound (docs/ARITHMETIC.md).
            if (native_->run(precision.compute, transA, transB, M, N, K, A, lda, B, ldb, beta, C, ldc)) return;
        }
        if (precision.fp32Accumulate || precision.compute == Format::fp32) {
            sgemm(transA, transB, M, N, K, A, lda, B, ldb, beta, C, ldc);
        } else {
            gemmInFormat(transA, transB, M, N, K, A, lda, B, ldb, beta, C, ldc, precision.compute);
        }
    }

    std::int64_t gemmReductionCut(const GemmPrecision& precision, std::int64_t M, std::int64_t N) const override
    {
        // Only OpenBLAS's products (fp32 sums): oneDNN's and the emulated sums have no
        // such blocks.
        if (!sumsInBlas(precision)) return 0;
        return cpu::blasReductionCut(mostPieces(), M, N);
    }

    // Where OpenBLAS sums a cut in its own order (its Haswell and Zen kernels), sgemm's cut
    // by the product's shape; elsewhere (its SkylakeX kernels, oneDNN, the emulated sums,
    // which sum each element alone) any block sums as the whole.
    GemmCut gemmCut(const GemmPrecision& precision, std::int64_t M, std::int64_t N, std::int64_t K) const override
    {
        if (cutsSumAlike() || !sumsInBlas(precision) || M <= 0 || N <= 0) return {};
        const cpu::SgemmCut cut = cpu::sgemmCut(M, N, cpu::sgemmPieces(mostPieces(), M, N, K));
        return {cut.columns, cut.extent, cut.block, cut.blocks};
    }

    void gemmPieces(const GemmCut& cut, std::int64_t first, std::int64_t last, Transpose transA, Transpose transB,
                    std::int64_t M, std::int64_t N, std::int64_t K, const float* A, std::int64_t lda, const float* B,
                    std::int64_t ldb, float beta, float* C, std::int64_t ldc, GemmPrecision precision) override
    {
        if (M < 0 || N < 0 || K < 0) throw std::invalid_argument("gemmPieces got a negative dimension.");
        if (cut.count == 0 || !sumsInBlas(precision) || cutsSumAlike()) {
            gemm(transA, transB, M, N, K, A, lda, B, ldb, beta, C, ldc, precision);
            return;
        }
        // Only this backend's cut of the whole product gives its sums.
        const GemmCut own = gemmCut(precision, cut.columns ? M : cut.extent, cut.columns ? cut.extent : N, K);
        const std::int64_t base = cut.begin(first);
        if (own.columns != cut.columns || own.extent != cut.extent || own.width != cut.width ||
            own.count != cut.count || first < 0 || last > cut.count || first >= last ||
            (cut.columns ? N : M) != cut.begin(last) - base)
            throw std::invalid_argument("gemmPieces got pieces that are not this backend's cut of the product.");
        if (M == 0 || N == 0) return;
        if (K == 0) {
            sgemm(transA, transB, M, N, K, A, lda, B, ldb, beta, C, ldc);
            return;
        }
        if (openblas_get_num_threads() != 1) openblas_set_num_threads(1);
        pool_.parallelFor(last - first, 1, [&](std::int64_t b0, std::int64_t b1) {
            for (std::int64_t piece = first + b0; piece < first + b1; ++piece) {
                const std::int64_t start = cut.begin(piece) - base, len = cut.begin(piece + 1) - cut.begin(piece);
                if (cut.columns) sgemmCall(transA, transB, 0, M, start, len, K, A, lda, B, ldb, beta, C, ldc);
                else sgemmCall(transA, transB, start, len, 0, N, K, A, lda, B, ldb, beta, C, ldc);
            }
        });
    }

    void im2col(const ConvGeometry& g, const float* src, std::int64_t n0, std::int64_t count,
                float* cols) override
    {
        cpu::im2colBatch(pool_, g, src, n0, count, cols);
    }

    void col2im(const ConvGeometry& g, const float* cols, std::int64_t n0, std::int64_t count, float* dst,
                std::int64_t colsLd) override
    {
        cpu::col2imBatch(pool_, g, cols, n0, count, dst, colsLd);
    }

    void roundArray(Format f, const float* src, float* dst, std::size_t n, RoundingStats* stats,
                    GradientHistogram* hist) override
    {
        cpu::parallelForCounted(pool_, static_cast<std::int64_t>(n), kRoundGrain, stats, hist,
                                [&](std::int64_t b, std::int64_t e, RoundingStats* s, GradientHistogram* h) {
                                    plab::roundArray(f, src + b, dst + b, static_cast<std::size_t>(e - b), s, h);
                                });
    }

    float quantize(const QuantizeOp& op, const float* src, float* dst, std::int64_t n, RoundingStats* stats,
                   GradientHistogram* hist, GradientHistogram* blockScales) override
    {
        if (op.blocks && op.rows * op.cols != n)
            throw std::invalid_argument("quantize got " + std::to_string(n) + " values for a " +
                                        std::to_string(op.rows) + " x " + std::to_string(op.cols) + " matrix.");
        if (!op.blocks) {
            return perTensorInParts(n, stats, hist, [&](std::int64_t b, std::size_t m, RoundingStats* s, GradientHistogram* h) {
                return quantizeScaled(op.element, src + b, dst + b, m, op.scale, op.scaleInv, s, h);
            });
        }
        ChunkMerge merge{stats, hist, blockScales};
        checkBlocks(op);
        // Blocks along rows: split the rows; along columns: split the columns (each task
        // takes whole bands of blocks down its columns).
        const std::int64_t lines = op.alongRows ? op.rows : op.cols;
        const std::int64_t grain = std::max<std::int64_t>(1, kRoundGrain / std::max<std::int64_t>(1, n / std::max<std::int64_t>(1, lines)));
        pool_.parallelFor(lines, grain, [&](std::int64_t b, std::int64_t e) {
            const std::int64_t ld = op.stride();
            const std::int64_t at = op.alongRows ? b * ld : b;
            quantizeBlockPart(op, src + at, dst + at, op.alongRows ? e - b : op.rows, op.alongRows ? op.cols : e - b,
                              merge);
        });
        return 0.0f;
    }

    float quantizeToCodes(const QuantizeOp& op, const float* src, std::uint8_t* codes, std::int64_t n,
                          RoundingStats* stats, GradientHistogram* hist) override
    {
        if (op.blocks) throw std::invalid_argument("quantizeToCodes quantises per tensor, not in blocks.");
        return perTensorInParts(n, stats, hist, [&](std::int64_t b, std::size_t m, RoundingStats* s, GradientHistogram* h) {
            return plab::quantizeToCodes(op.element, src + b, codes + b, m, op.scale, s, h);
        });
    }
    float quantize16(const QuantizeOp& op, Format from, const std::uint16_t* src, float* dst, std::int64_t n,
                     RoundingStats* stats, GradientHistogram* hist) override
    {
        if (op.blocks) throw std::invalid_argument("quantize16 quantises per tensor, not in blocks.");
        return perTensorInParts(n, stats, hist, [&](std::int64_t b, std::size_t m, RoundingStats* s, GradientHistogram* h) {
            return quantizeScaled(op.element, from, src + b, dst + b, m, op.scale, op.scaleInv, s, h);
        });
    }
    float quantize16ToCodes(const QuantizeOp& op, Format from, const std::uint16_t* src, std::uint8_t* codes,
                            std::int64_t n, RoundingStats* stats, GradientHistogram* hist) override
    {
        if (op.blocks) throw std::invalid_argument("quantize16ToCodes quantises per tensor, not in blocks.");
        return perTensorInParts(n, stats, hist, [&](std::int64_t b, std::size_t m, RoundingStats* s, GradientHistogram* h) {
            return plab::quantizeToCodes(op.element, from, src + b, codes + b, m, op.scale, s, h);
        });
    }
    float amax16(Format from, const std::uint16_t* src, std::int64_t n) override
    {
        ChunkMerge merge{nullptr, nullptr, nullptr};
        pool_.parallelFor(n, kRoundGrain, [&](std::int64_t b, std::int64_t e) {
            merge.add(nullptr, nullptr, nullptr, amaxOf(from, src + b, static_cast<std::size_t>(e - b)));
        });
        return merge.amax();
    }
    void decodeFp8(MiniFormat element, float scaleInv, const std::uint8_t* codes, std::int64_t codesLd, float* dst,
                   std::int64_t dstLd, std::int64_t rows, std::int64_t cols) override
    {
        if (rows <= 0 || cols <= 0) return;
        // Whole rows, or parts of one row when there are fewer rows than threads' worth.
        const std::int64_t parts = std::max<std::int64_t>(1, (cols + kRoundGrain - 1) / kRoundGrain);
        pool_.parallelFor(rows * parts, 1, [&](std::int64_t b, std::int64_t e) {
            for (std::int64_t item = b; item < e; ++item) {
                const std::int64_t r = item / parts, c0 = item % parts * kRoundGrain;
                const std::int64_t width = std::min(kRoundGrain, cols - c0);
                decodeScaled(element, codes + r * codesLd + c0, dst + r * dstLd + c0, static_cast<std::size_t>(width),
                             scaleInv);
            }
        });
    }
    void im2colFp8(const ConvGeometry& g, MiniFormat element, float scaleInv, const std::uint8_t* src,
                   std::int64_t n0, std::int64_t count, float* cols) override
    {
        cpu::im2colBatchDecoded(pool_, element, scaleInv, g, src, n0, count, cols);
    }

    bool im2colQuantize(const ConvGeometry& g, const float* src, std::int64_t n0, std::int64_t count, float* cols,
                        const QuantizeOp& op, RoundingStats* stats, GradientHistogram* hist,
                        GradientHistogram* blockScales) override
    {
        const std::int64_t columns = count * g.planeSize();
        if (!op.blocks || op.rows != g.patchSize() || op.cols != columns || op.stride() != columns)
            throw std::invalid_argument("im2colQuantize needs blocks over the (" + std::to_string(g.patchSize()) +
                                        ", " + std::to_string(columns) + ") lowered matrix.");
        checkBlocks(op);
        ChunkMerge merge{stats, hist, blockScales};
        // Along rows: a whole row at a time; down the columns: a band of blocks for one
        // sample at a time. Either way a block lies inside one part.
        const std::int64_t band =
            op.alongRows ? 0 : op.blockScaling == BlockScaling::nvfp4 ? kNvfp4BlockSize : kMxBlockSize;
        cpu::im2colInParts(pool_, g, src, n0, count, cols, band,
                           [&](std::int64_t row0, std::int64_t rows, std::int64_t column0, std::int64_t width) {
            float* at = cols + row0 * columns + column0;
            quantizeBlockPart(op, at, at, rows, width, merge);
        });
        return true;
    }

    float amax(const float* src, std::int64_t n) override
    {
        ChunkMerge merge{nullptr, nullptr, nullptr};
        pool_.parallelFor(n, kRoundGrain, [&](std::int64_t b, std::int64_t e) {
            merge.add(nullptr, nullptr, nullptr, amaxOf(src + b, static_cast<std::size_t>(e - b)));
        });
        return merge.amax();
    }

    void addBiasRound(Format f, float* x, std::int64_t n, const float* bias, std::int64_t period,
                      std::int64_t repeat, RoundingStats* stats, GradientHistogram* hist) override
    {
        cpu::addBiasRound(pool_, f, x, n, bias, period, repeat, stats, hist);
    }
    void relu(float* x, std::int64_t n) override { cpu::relu(pool_, x, n); }
    void reluBackward(const float* y, float* g, std::int64_t n) override { cpu::reluBackward(pool_, y, g, n); }
    void maxPool2x2(const float* in, std::int64_t planes, std::int64_t H, std::int64_t W, float* out,
                    std::uint8_t* argmax) override
    {
        cpu::maxPool2x2(pool_, in, planes, H, W, out, argmax);
    }
    void maxPool2x2Backward(const float* g, const std::uint8_t* argmax, std::int64_t planes, std::int64_t H,
                            std::int64_t W, float* dx) override
    {
        cpu::maxPool2x2Backward(pool_, g, argmax, planes, H, W, dx);
    }
    void transposeBlocks(const float* in, std::int64_t A, std::int64_t B, std::int64_t inner, float* out) override
    {
        cpu::transposeBlocks(pool_, in, A, B, inner, out);
    }
    void widen16(Format f, const std::uint16_t* src, std::int64_t srcLd, float* dst, std::int64_t dstLd,
                 std::int64_t rows, std::int64_t cols) override
    {
        cpu::widen16(pool_, f, {src, srcLd}, {dst, dstLd}, rows, cols);
    }
    void roundTo16(Format f, const float* src, std::int64_t srcLd, std::uint16_t* dst, std::int64_t dstLd,
                   std::int64_t rows, std::int64_t cols, RoundingStats* stats, GradientHistogram* hist) override
    {
        cpu::roundTo16(pool_, f, {src, srcLd}, {dst, dstLd}, rows, cols, stats, hist);
    }
    void addBiasRoundTo16(Format f, const float* x, std::int64_t xLd, const float* bias, std::uint16_t* out,
                          std::int64_t outLd, std::int64_t rows, std::int64_t cols, RoundingStats* stats,
                          GradientHistogram* hist) override
    {
        cpu::addBiasRoundTo16(pool_, f, {x, xLd}, bias, {out, outLd}, rows, cols, stats, hist);
    }
    void sumRows16(Format f, const std::uint16_t* x, std::int64_t rows, std::int64_t cols, float* out) override
    {
        cpu::sumRows16(pool_, f, x, rows, cols, out);
    }
    void relu16(Format f, std::uint16_t* x, std::int64_t n) override { cpu::relu16(pool_, f, x, n); }
    void reluBackward16(Format f, const std::uint16_t* y, std::uint16_t* g, std::int64_t n) override
    {
        cpu::reluBackward16(pool_, f, y, g, n);
    }
    void maxPool2x2Packed(Format f, const std::uint16_t* in, std::int64_t planes, std::int64_t H, std::int64_t W,
                          std::uint16_t* out, std::uint8_t* argmax) override
    {
        cpu::maxPool2x2Packed(pool_, f, in, planes, H, W, out, argmax);
    }
    void maxPool2x2BackwardPacked(const std::uint16_t* g, const std::uint8_t* argmax, std::int64_t planes,
                                  std::int64_t H, std::int64_t W, std::uint16_t* dx) override
    {
        cpu::maxPool2x2Backward(pool_, g, argmax, planes, H, W, dx);
    }
    void transposeBlocksPacked(const std::uint16_t* in, std::int64_t A, std::int64_t B, std::int64_t inner,
                               std::uint16_t* out) override
    {
        cpu::transposeBlocks(pool_, in, A, B, inner, out);
    }
    void im2colPacked(const ConvGeometry& g, Format f, const std::uint16_t* src, std::int64_t n0, std::int64_t count,
                      float* cols) override
    {
        cpu::im2colBatchWidened(pool_, f, g, src, n0, count, cols);
    }
    void im2col16(const ConvGeometry& g, const std::uint16_t* src, std::int64_t n0, std::int64_t count,
                  std::uint16_t* cols) override
    {
        cpu::im2colBatch16(pool_, g, src, n0, count, cols);
    }
    void gemm16(Transpose transA, Transpose transB, std::int64_t M, std::int64_t N, std::int64_t K,
                const std::uint16_t* A, std::int64_t lda, const std::uint16_t* B, std::int64_t ldb, float beta,
                float* C, std::int64_t ldc, GemmPrecision precision) override
    {
        if (!supports(BackendOp::gemm16, precision)) refusePackedOp("gemm16 (this precision is not multiplied natively)");
        if (M < 0 || N < 0 || K < 0) throw std::invalid_argument("gemm got a negative dimension.");
        if (M == 0 || N == 0) return;
        if (native_->run16(precision.compute, transA, transB, M, N, K, A, lda, B, ldb, beta, C, ldc)) return;
        // oneDNN has no primitive for this shape (or K is 0): the operands widened, and
        // gemm's own fallback, the exact arithmetic. Rare; these buffers are not counted.
        const auto widened = [&](Transpose t, std::int64_t rows, std::int64_t cols, const std::uint16_t* X,
                                 std::int64_t ld) {
            const std::int64_t outer = t == Transpose::no ? rows : cols, inner = t == Transpose::no ? cols : rows;
            std::vector<float> wide(static_cast<std::size_t>(outer * inner));
            cpu::widen16(pool_, precision.compute, {X, ld}, {wide.data(), inner}, outer, inner);
            return wide;
        };
        const std::vector<float> a = widened(transA, M, K, A, lda), b = widened(transB, K, N, B, ldb);
        sgemm(transA, transB, M, N, K, a.data(), transA == Transpose::no ? K : M, b.data(),
              transB == Transpose::no ? N : K, beta, C, ldc);
    }

    void sumRows(const float* x, std::int64_t rows, std::int64_t cols, float* out) override
    {
        cpu::sumRows(pool_, x, rows, cols, out);
    }
    void sumColumns(const float* x, std::int64_t rows, std::int64_t cols, float* out) override
    {
        cpu::sumColumns(x, rows, cols, out);
    }
    LossResult softmaxCrossEntropy(const float* logits, const std::uint8_t* labels, std::int64_t N,
                                   std::int64_t classes, Format emulate, float* probabilities) override
    {
        return cpu::softmaxCrossEntropy(logits, labels, N, classes, emulate, probabilities);
    }
    void softmaxCrossEntropyBackward(const float* probabilities, const std::uint8_t* labels, std::int64_t N,
                                     std::int64_t classes, float lossScale, float* grad) override
    {
        cpu::softmaxCrossEntropyBackward(probabilities, labels, N, classes, lossScale, grad);
    }
    void patchify(const float* images, std::int64_t N, std::int64_t side, std::int64_t patch, float* out) override
    {
        cpu::patchify(pool_, images, N, side, patch, out);
    }
    void addPeriodic(float* x, std::int64_t n, const float* add, std::int64_t period) override
    {
        cpu::addPeriodic(pool_, x, n, add, period);
    }
    void sumPeriodic(const float* x, std::int64_t n, std::int64_t period, float* out) override
    {
        cpu::sumPeriodic(pool_, x, n, period, out);
    }
    void layerNorm(Format emulate, const float* x, std::int64_t rows, std::int64_t D, const float* gamma,
                   const float* beta, float eps, float* y, float* xhat, float* rstd, float* sumOfSquares) override
    {
        cpu::layerNorm(pool_, emulate, x, rows, D, gamma, beta, eps, y, xhat, rstd, sumOfSquares);
    }
    void layerNormBackward(const float* g, const float* xhat, const float* rstd, const float* gamma,
                           std::int64_t rows, std::int64_t D, float* dx, float* dgamma, float* dbeta) override
    {
        cpu::layerNormBackward(pool_, g, xhat, rstd, gamma, rows, D, dx, dgamma, dbeta);
    }
    void softmaxRows(Format emulate, const float* s, std::int64_t rows, std::int64_t T, float* p) override
    {
        cpu::softmaxRows(pool_, emulate, s, rows, T, p);
    }
    void softmaxRowsBackward(const float* p, float* g, std::int64_t rows, std::int64_t T) override
    {
        cpu::softmaxRowsBackward(pool_, p, g, rows, T);
    }
    void gelu(const float* x, float* y, std::int64_t n) override { cpu::gelu(pool_, x, y, n); }
    void geluBackward(const float* x, float* g, std::int64_t n) override { cpu::geluBackward(pool_, x, g, n); }
    void add(const float* a, const float* b, float* y, std::int64_t n) override { cpu::add(pool_, a, b, y, n); }
    void scale(float* x, std::int64_t n, float factor) override { cpu::scale(pool_, x, n, factor); }
    void meanTokens(const float* x, std::int64_t N, std::int64_t T, std::int64_t D, float* y) override
    {
        cpu::meanTokens(pool_, x, N, T, D, y);
    }
    void meanTokensBackward(const float* g, std::int64_t N, std::int64_t T, std::int64_t D, float* dx) override
    {
        cpu::meanTokensBackward(pool_, g, N, T, D, dx);
    }
    SweepResult gradientSweep(const std::vector<GradientView>& views, float multiplier, SweepSquares squares) override
    {
        return plab::gradientSweep(views.data(), views.size(), multiplier, squares);
    }
    void sgdUpdate(const SgdScalars& s, UpdateFormats f, float* weights, const float* grad, float* buffer, std::int64_t n,
                   UpdateCounts* counts) override
    {
        cpu::sgdUpdate(pool_, s, f, UpdateTensors::held(weights, grad, s.useMomentum ? buffer : nullptr, nullptr), n,
                       counts);
    }
    void adamUpdate(const AdamScalars& s, UpdateFormats f, float* weights, const float* grad, float* m, float* v,
                    std::int64_t n, UpdateCounts* counts) override
    {
        cpu::adamUpdate(pool_, s, f, UpdateTensors::held(weights, grad, m, v), n, counts);
    }
    void sgdUpdatePacked(const SgdScalars& s, UpdateFormats f, const UpdateTensors& t, std::int64_t n,
                         UpdateCounts* counts) override
    {
        cpu::sgdUpdate(pool_, s, f, t, n, counts);
    }
    void adamUpdatePacked(const AdamScalars& s, UpdateFormats f, const UpdateTensors& t, std::int64_t n,
                          UpdateCounts* counts) override
    {
        cpu::adamUpdate(pool_, s, f, t, n, counts);
    }

private:
    static constexpr std::int64_t kRoundGrain = 1 << 15;

    // A per-tensor quantisation of n values on the pool's threads: part(first, count, stats,
    // hist) quantises values [first, first + count) into its own counters (null where the
    // caller asks for none) and returns their amax; the counts are merged and the amax is
    // the whole's (NaN where a part saw one).
    template <class Part>
    float perTensorInParts(std::int64_t n, RoundingStats* stats, GradientHistogram* hist, const Part& part)
    {
        ChunkMerge merge{stats, hist, nullptr};
        pool_.parallelFor(n, kRoundGrain, [&](std::int64_t b, std::int64_t e) {
            RoundingStats s;
            GradientHistogram h;
            const float a = part(b, static_cast<std::size_t>(e - b), stats ? &s : nullptr, hist ? &h : nullptr);
            merge.add(&s, &h, nullptr, a);
        });
        return merge.amax();
    }
    static constexpr std::int64_t kMostPieces = 8;   // a GEMM's blocks: up to 8 threads share one

    // Whether gemm hands this precision to oneDNN: the hardware arithmetic, fp32 sums, and a
    // compute format this CPU has native units for.
    bool runsNatively(const GemmPrecision& precision) const
    {
        return native_ && precision.fp32Accumulate && cpu::nativelySupported(precision.compute);
    }

    static bool cutsSumAlike() { return cpu::blasCutsSumAlike(); }
    // Whether gemm sums a product of this precision in OpenBLAS (fp32 sums).
    bool sumsInBlas(const GemmPrecision& precision) const
    {
        return !runsNatively(precision) && (precision.fp32Accumulate || precision.compute == Format::fp32);
    }
    // One OpenBLAS call (single-threaded once the caller has said so): rows [i0, i0 + m)
    // and columns [j0, j0 + n) of C = op(A) op(B) + beta C.
    static void sgemmCall(Transpose transA, Transpose transB, std::int64_t i0, std::int64_t m, std::int64_t j0,
                          std::int64_t n, std::int64_t K, const float* A, std::int64_t lda, const float* B,
                          std::int64_t ldb, float beta, float* C, std::int64_t ldc)
    {
        const float* a = A + (transA == Transpose::yes ? i0 : i0 * lda);
        const float* b = B + (transB == Transpose::yes ? j0 * ldb : j0);
        cblas_sgemm(CblasRowMajor, transA == Transpose::yes ? CblasTrans : CblasNoTrans,
                    transB == Transpose::yes ? CblasTrans : CblasNoTrans, static_cast<blasint>(m),
                    static_cast<blasint>(n), static_cast<blasint>(K), 1.0f, a, static_cast<blasint>(lda), b,
                    static_cast<blasint>(ldb), beta, C + i0 * ldc + j0, static_cast<blasint>(ldc));
    }
    // The most pieces sgemm cuts a product into (see there).
    std::int64_t mostPieces() const { return cutsSumAlike() ? 2 * std::int64_t{threads_} : kMostPieces; }

    void sgemm(Transpose transA, Transpose transB, std::int64_t M, std::int64_t N, std::int64_t K,
               const float* A, std::int64_t lda, const float* B, std::int64_t ldb, float beta,
               float* C, std::int64_t ldc)
    {
        if (K == 0) {   // an empty sum: C = beta * C, which BLAS implementations treat unevenly
            for (std::int64_t i = 0; i < M; ++i)
                for (std::int64_t j = 0; j < N; ++j) C[i * ldc + j] = beta == 0.0f ? 0.0f : beta * C[i * ldc + j];
            return;
        }
        // OpenBLAS runs single-threaded inside our pool: its own pthreads spin in
        // sched_yield() between calls and took a quarter of a 2-core step from the
        // elementwise work; our workers spin at most 50 microseconds (thread_pool.h), then
        // sleep, and a busy core only slows the blocks it would have taken. Blocks split M or N (never K), so every element is
        // the same sum as in one call, whichever thread computes it.
        if (openblas_get_num_threads() != 1) openblas_set_num_threads(1);
        auto call = [&](std::int64_t i0, std::int64_t m, std::int64_t j0, std::int64_t n) {
            sgemmCall(transA, transB, i0, m, j0, n, K, A, lda, B, ldb, beta, C, ldc);
        };
        // Results never depend on the thread count. OpenBLAS's Haswell and Zen kernels (what
        // AVX2-only CPUs get) sum an element in another order when a product is cut
        // otherwise, so there the cut depends on the product's shape alone: every thread
        // count makes the same calls, at most kMostPieces pieces. Its SkylakeX kernels (and
        // Cooperlake's, which are SkylakeX's for sgemm) sum a cut at least 32 wide and 2^21
        // multiply-adds as one call (leastGemmBlock, docs/ARITHMETIC.md), so there the cut
        // is twice as many pieces as threads, as wide as that allows: each call packs its
        // operands again, and pieces 270 columns wide took 12% longer a column than 1,100.
        const cpu::SgemmCut cut = cpu::sgemmCut(M, N, cpu::sgemmPieces(mostPieces(), M, N, K));
        if (cut.blocks < 2) {
            call(0, M, 0, N);
            return;
        }
        pool_.parallelFor(cut.blocks, 1, [&](std::int64_t b0, std::int64_t b1) {
            for (std::int64_t blk = b0; blk < b1; ++blk) {
                const std::int64_t start = blk * cut.block, len = std::min(cut.block, cut.extent - start);
                if (cut.columns) call(0, M, start, len);
                else call(start, len, 0, N);
            }
        });
    }

    // Dense copy of op(X): rows x cols, from X stored with leading dimension ld.
    static const float* dense(Transpose t, std::int64_t rows, std::int64_t cols, const float* X,
                              std::int64_t ld, std::vector<float>& scratch, std::int64_t& denseLd)
    {
        if (t == Transpose::no) {
            denseLd = ld;
            return X;
        }
        scratch.resize(static_cast<std::size_t>(rows * cols));
        for (std::int64_t r = 0; r < rows; ++r)
            for (std::int64_t c = 0; c < cols; ++c) scratch[static_cast<std::size_t>(r * cols + c)] = X[c * ld + r];
        denseLd = cols;
        return scratch.data();
    }

    void gemmInFormat(Transpose transA, Transpose transB, std::int64_t M, std::int64_t N,
                      std::int64_t K, const float* A, std::int64_t lda, const float* B,
                      std::int64_t ldb, float beta, float* C, std::int64_t ldc, Format f)
    {
        if (!(f == Format::fp16 && cpu::cpuHasAvx512Fp16()) && cpu::skipsZeroSteps() &&
            sumSkippingZeros(transA, transB, M, N, K, A, lda, B, ldb, beta, C, ldc, f))
            return;
        std::int64_t aLd = 0, bLd = 0;
        const float* a = dense(transA, M, K, A, lda, scratchA_, aLd);   // (M, K)
        const float* b = dense(transB, K, N, B, ldb, scratchB_, bLd);   // (K, N)
        if (f == Format::fp16 && cpu::cpuHasAvx512Fp16()) {
            packedA_.resize(static_cast<std::size_t>(M * K));   // (M, K) fp16 bits
            packedB_.resize(static_cast<std::size_t>(K * N));   // (K, N) fp16 bits
            for (std::int64_t i = 0; i < M; ++i) cpu::packFp16(a + i * aLd, packedA_.data() + i * K, K);
            for (std::int64_t k = 0; k < K; ++k) cpu::packFp16(b + k * bLd, packedB_.data() + k * N, N);
            pool_.parallelFor(M, std::max<std::int64_t>(4, (1 << 16) / std::max<std::int64_t>(1, N * K)),
                              [&](std::int64_t r0, std::int64_t r1) {
                cpu::gemmAccumulateFp16Avx512(r0, r1, N, K, packedA_.data(), packedB_.data(), beta, C, ldc);
            });
            return;
        }
        pool_.parallelFor(M, 1, [&](std::int64_t r0, std::int64_t r1) {
            cpu::gemmAccumulateVector(f, r0, r1, N, K, a, aLd, b, bLd, beta, C, ldc);
        });
    }

    // Sums in the format where one operand is mostly zeros (gradients after ReLU and max
    // pooling): only the steps with a nonzero product (gemm_sparse.h), the same bits. The
    // sparse operand is A, or B, as the rows of the transposed product C^T = B^T A^T (each
    // element keeps its order of k; a * b = b * a exactly). False where neither operand is.
    bool sumSkippingZeros(Transpose transA, Transpose transB, std::int64_t M, std::int64_t N, std::int64_t K,
                          const float* A, std::int64_t lda, const float* B, std::int64_t ldb, float beta,
                          float* C, std::int64_t ldc, Format f)
    {
        if (K > INT32_MAX) return false;   // the steps are listed as 32-bit k
        const bool aT = transA == Transpose::yes, bT = transB == Transpose::yes;
        const double zerosA = aT ? cpu::zeroShare(A, K, M, lda) : cpu::zeroShare(A, M, K, lda);
        const double zerosB = bT ? cpu::zeroShare(B, N, K, ldb) : cpu::zeroShare(B, K, N, ldb);
        // Skipping pays where the steps skipped per row outweigh the row's fixed cost (its
        // sums loaded and stored, in the transposed case one element at a time): a
        // convolution over 9 taps of a mostly blank image is faster dense.
        const bool useA = zerosA >= zerosB;
        const double zeros = useA ? zerosA : zerosB;
        if (zeros < kSkipZerosShare || zeros * static_cast<double>(K) < (useA ? kLeastSkippedA : kLeastSkippedB))
            return false;
        if (useA) {
            const cpu::StridedMatrix a{A, aT ? 1 : lda, aT ? lda : 1};   // op(A), (M, K)
            std::int64_t bLd = 0;
            const float* b = dense(transB, K, N, B, ldb, scratchB_, bLd);   // (K, N)
            const auto nonFinite = cpu::nonFiniteRows(b, K, N, bLd);
            pool_.parallelFor(M, 1, [&](std::int64_t r0, std::int64_t r1) {
                const cpu::SumSteps steps = cpu::sumSteps(a, r0, r1, K, nonFinite);
                cpu::gemmAccumulateSkippingZeros(f, steps, N, K, a, b, bLd, beta, C, ldc, 1);
            });
        } else {
            const cpu::StridedMatrix bt{B, bT ? ldb : 1, bT ? 1 : ldb};   // op(B)^T, (N, K)
            std::int64_t atLd = 0;
            const float* at = dense(aT ? Transpose::no : Transpose::yes, K, M, A, lda, scratchA_, atLd);   // op(A)^T, (K, M)
            const auto nonFinite = cpu::nonFiniteRows(at, K, M, atLd);
            pool_.parallelFor(N, 1, [&](std::int64_t r0, std::int64_t r1) {
                const cpu::SumSteps steps = cpu::sumSteps(bt, r0, r1, K, nonFinite);
                cpu::gemmAccumulateSkippingZeros(f, steps, M, K, bt, at, atLd, beta, C, 1, ldc);
            });
        }
        return true;
    }
    static constexpr double kSkipZerosShare = 0.75;
    static constexpr double kLeastSkippedA = 4.0, kLeastSkippedB = 16.0;   // zero steps a row skips, on average

    cpu::ThreadPool pool_;
    Arithmetic arithmetic_ = Arithmetic::exact;
    std::unique_ptr<cpu::NativeGemm> native_;   // hardware arithmetic on a CPU with native units
    int threads_ = 1;
    BackendInfo info_;
    std::vector<float> scratchA_, scratchB_;
    std::vector<std::uint16_t> packedA_, packedB_;
};

}  // namespace

std::string cpuArithmeticFor(Arithmetic arithmetic, const GemmPrecision& precision)
{
    const Format f = precision.compute;
    const std::string name(formatName(f));
    if (f == Format::fp32) return "fp32: OpenBLAS sgemm";
    if (!precision.fp32Accumulate)
        return "exact: sums in " + name + " emulated one rounding at a time (no hardware sums in " + name + ")";
    if (arithmetic == Arithmetic::exact)
        return "exact: " + name + " operands on fp32 arithmetic (the reference, the same bits on every CPU)";
    // The backend runs natively exactly where this holds (CpuBackend::gemm).
    if (cpu::nativelySupported(f)) return "hardware: " + cpu::nativeSupportText(f);
    if (f == Format::tf32) return "exact: no CPU has tf32 units; tf32 operands on fp32 arithmetic";
    return "exact: " + cpu::nativeSupportText(f);
}

int usableCpuThreads(int requested)
{
    const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    // More threads than logical cores only wait for each other, and hundreds of them ran
    // OpenBLAS out of its per-thread buffers (a hang): at most one per logical core.
    return requested <= 0 ? cores : std::min(requested, cores);
}

std::unique_ptr<ComputeBackend> createCpuBackend(int threads, Arithmetic arithmetic)
{
    return std::make_unique<CpuBackend>(usableCpuThreads(threads), arithmetic);
}

}  // namespace plab
