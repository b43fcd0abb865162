// Launch wrappers of the plugin's own CUDA kernels (kernels.cu, step_kernels.cu,
// fp8_kernels.cu): fused bias + rounding with statistics, fill, 16-bit operand conversion
// and scaling for cuBLAS, im2col / col2im, the layers' and optimizers' ops, and the FP8
// recipes' quantisation and cuBLASLt operands. Plain C++17 over device pointers,
// so that nvcc (C++17) and g++ (C++20, the backend's .cpp files) share it. Each wrapper only
// enqueues work on `stream` and returns the launch status; the caller checks it and turns
// failures into exceptions. Counter pointers are device slots of the backend's counter
// arena (cuda_counters.h); null means "not counted".
#pragma once

#include "backend/cuda/kernel_fp8.h"
#include "backend/cuda/kernel_math.h"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace plab::cudakernels {

// Threads per block of every kernel (a power of two: the block reductions halve it), and
// the cap on blocks of the grid-stride loops.
constexpr int kThreads = 256;
constexpr std::size_t kMaxBlocks = 4096;

// A grid of `blocks` blocks, clamped to 1 .. kMaxBlocks (the kernel loops over the rest).
unsigned gridOf(std::size_t blocks);
// Blocks a grid-stride kernel over n elements uses (1 .. kMaxBlocks).
unsigned blocksFor(std::size_t n);

// ---- Rounding, storage conversion, GEMM helpers, conv lowering (kernels.cu) -------------

// The bias addBiasRound adds before rounding: values[(i / repeat) % period]; none when null.
struct BiasTerm {
    const float* values = nullptr;
    long long period = 1;
    long long repeat = 1;
};

// dst[i] = round_format(src[i] + bias) for i < n (src may alias dst). counters (kCounterSlots
// values) get the element counts added when non-null; wantStats / wantHist pick which.
cudaError_t launchRound(int format, const float* src, float* dst, std::size_t n, BiasTerm bias,
                        unsigned long long* counters, bool wantStats, bool wantHist, cudaStream_t stream);

// dst[0..n) = value.
cudaError_t launchFill(float* dst, std::size_t n, float value, cudaStream_t stream);

// A row-major (rows, cols) fp32 matrix with leading dimension ld to dense 16-bit patterns of
// format kFp16 or kBf16, and back (only the (rows, cols) elements are read or written: the
// gaps of a padded matrix are never touched). Operands arrive already rounded, so these
// conversions are exact in practice.
cudaError_t launchTo16Bit(int format, const float* src, long long ld, long long rows, long long cols,
                          std::uint16_t* dst, cudaStream_t stream);
cudaError_t launchFrom16Bit(int format, const std::uint16_t* src, long long rows, long long cols, float* dst,
                            long long ld, cudaStream_t stream);
// launchTo16Bit of `batch` matrices, matrix b at src + b * stride, into dense dst
// (batch, rows, cols).
cudaError_t launchTo16BitBatched(int format, const float* src, long long ld, long long stride, long long rows,
                                 long long cols, long long batch, std::uint16_t* dst, cudaStream_t stream);

// C (rows, cols, leading dimension ld) = round_format(beta * C), or +0 where beta == 0: the
// GEMM of an empty sum (K == 0).
cudaError_t launchScaleMatrix(float* c, long long rows, long long cols, long long ld, float beta, int format,
                              cudaStream_t stream);

// cols (patchSize, count * H * W) from samples [n0, n0 + count) of src (C, g.batch, H, W).
cudaError_t launchIm2col(const ConvShape& g, long long n0, long long count, const float* src, float* cols,
                         cudaStream_t stream);
// dst (C, g.batch, H, W) samples [n0, n0 + count) overwritten with the col2im sums of cols,
// whose rows are colsLd apart.
cudaError_t launchCol2im(const ConvShape& g, long long n0, long long count, const float* cols, long long colsLd,
                         float* dst, cudaStream_t stream);

// ---- FP8 recipes (fp8_kernels.cu) --------------------------------------------------------

// Where a quantisation kernel counts: RoundingStats and histogram slots added to counters
// as launchRound adds them (nullptr: none), and the largest amaxKey of its source folded
// into *amax by atomicMax (the caller zeroes it first).
struct Fp8Counting {
    unsigned long long* counters;
    bool wantStats, wantHist;
    unsigned* amax;
};
// dst[i] = fp8Quantize(src[i] * scale) * scaleInv for i < n (src may alias dst), counted
// as `counting` says. From16: src holds 16-bit patterns of format `from` (kFp16 or kBf16),
// widened first. Codes: codes[i] = fp8Code(format, fp8Quantize(src[i] * scale)) instead of
// the value (a byte an element; the same counts and amax).
cudaError_t launchQuantizeFp8(int format, const float* src, float* dst, long long n, float scale, float scaleInv,
                              const Fp8Counting& counting, cudaStream_t stream);
cudaError_t launchQuantizeFp8From16(int format, int from, const std::uint16_t* src, float* dst, long long n,
                                    float scale, float scaleInv, const Fp8Counting& counting, cudaStream_t stream);
cudaError_t launchQuantizeFp8Codes(int format, const float* src, std::uint8_t* codes, long long n, float scale,
                                   const Fp8Counting& counting, cudaStream_t stream);
cudaError_t launchQuantizeFp8CodesFrom16(int format, int from, const std::uint16_t* src, std::uint8_t* codes,
                                         long long n, float scale, const Fp8Counting& counting, cudaStream_t stream);
// The largest amaxKey of src[0..n) (fp32, or 16-bit patterns of format `from` widened)
// folded into *amax (atomicMax; the caller zeroes it first).
cudaError_t launchAmax(const float* src, long long n, unsigned* amax, cudaStream_t stream);
cudaError_t launchAmax16(int from, const std::uint16_t* src, long long n, unsigned* amax, cudaStream_t stream);
// dst (rows, cols; leading dimension dstLd) = fp8Decoded of the codes (leading codesLd).
cudaError_t launchDecodeFp8(int format, float scaleInv, const std::uint8_t* codes, long long codesLd, float* dst,
                            long long dstLd, long long rows, long long cols, cudaStream_t stream);
// launchIm2col from a (C, batch, H, W) tensor held as codes: each element fp8Decoded.
cudaError_t launchIm2colFp8(int format, float scaleInv, const ConvShape& g, long long n0, long long count,
                            const std::uint8_t* codes, float* cols, cudaStream_t stream);

// An operand for cuBLASLt's FP8 GEMM: dst (outerPadded, kPadded) bytes, dense, K running
// fastest, = fp8CodeOfOperand of element (o, k) of the row-major matrix at src (leading
// dimension ld) for o < outer, k < K, and 0 in the padding. kContiguous: element (o, k) is
// src[o * ld + k]; else src[k * ld + o].
struct Fp8OperandShape {
    long long outer, K, ld;
    bool kContiguous;
    long long outerPadded, kPadded;
};
cudaError_t launchEncodeFp8(int format, const float* src, const Fp8OperandShape& s, float scale, std::uint8_t* dst,
                            cudaStream_t stream);
// C (rows, cols, leading dimension ldc) = D (rows, cols, leading dimension ldd) + beta * C,
// one fp32 rounding each (beta == 0 never reads C).
cudaError_t launchAddScaled(const float* d, long long ldd, long long rows, long long cols, float beta, float* c,
                            long long ldc, cudaStream_t stream);

// ---- Layer ops (step_kernels.cu) ----------------------------------------------------------

cudaError_t launchRelu(float* x, long long n, cudaStream_t stream);
cudaError_t launchReluBackward(const float* y, float* g, long long n, cudaStream_t stream);

// out (planes, H/2, W/2) and argmax (same shape, window position 0..3) from in (planes, H, W);
// backward overwrites dx (planes, H, W), zero outside the winning positions.
cudaError_t launchMaxPool(const PoolShape& s, const float* in, float* out, std::uint8_t* argmax,
                          cudaStream_t stream);
cudaError_t launchMaxPoolBackward(const PoolShape& s, const float* g, const std::uint8_t* argmax, float* dx,
                                  cudaStream_t stream);

// out (B, A, inner) = in (A, B, inner).
cudaError_t launchTransposeBlocks(const float* in, long long A, long long B, long long inner, float* out,
                                  cudaStream_t stream);

// out[r] = float(sum_c x[r][c]) and out[c] = float(sum_r x[r][c]), the sums in double.
// sumRows splits every row into sumRowsParts(rows, cols) parts (a function of the shape
// only) and needs rows * sumRowsParts(rows, cols) doubles of scratch in `partials`.
long long sumRowsParts(long long rows, long long cols);
cudaError_t launchSumRows(const float* x, long long rows, long long cols, double* partials, float* out,
                          cudaStream_t stream);
cudaError_t launchSumColumns(const float* x, long long rows, long long cols, float* out, cudaStream_t stream);
// launchSumRows of the widened values of packed x (format f): the same sums, bit for bit.
cudaError_t launchSumRows16(int f, const std::uint16_t* x, long long rows, long long cols, double* partials,
                            float* out, cudaStream_t stream);

// ---- Packed 16-bit tensors (packed_kernels.cu) ---------------------------------------------
// ComputeBackend's packed ops of the same names; f is kFp16 or kBf16. Each gives the fp32
// kernel's result on the widened values, narrowed again (exactly: no value is rounded
// except by launchRoundTo16).
cudaError_t launchRelu16(int f, std::uint16_t* x, long long n, cudaStream_t stream);
cudaError_t launchReluBackward16(int f, const std::uint16_t* y, std::uint16_t* g, long long n, cudaStream_t stream);
cudaError_t launchMaxPoolPacked(int f, const PoolShape& s, const std::uint16_t* in, std::uint16_t* out,
                                std::uint8_t* argmax, cudaStream_t stream);
cudaError_t launchMaxPoolBackwardPacked(const PoolShape& s, const std::uint16_t* g, const std::uint8_t* argmax,
                                        std::uint16_t* dx, cudaStream_t stream);
cudaError_t launchTransposeBlocksPacked(const std::uint16_t* in, long long A, long long B, long long inner,
                                        std::uint16_t* out, cudaStream_t stream);
// dst (rows, cols; leading dimension dstLd) = the widened values of src (leading srcLd).
cudaError_t launchWiden16(int f, const std::uint16_t* src, long long srcLd, float* dst, long long dstLd,
                          long long rows, long long cols, cudaStream_t stream);
// dst (patterns) = round_f(src + bias[row]) (bias may be null), counted as launchRound counts.
cudaError_t launchRoundTo16(int f, const float* src, long long srcLd, const float* bias, std::uint16_t* dst,
                            long long dstLd, long long rows, long long cols, unsigned long long* counters,
                            bool wantStats, bool wantHist, cudaStream_t stream);
// launchIm2col from packed src: into fp32 columns (widened), or into packed columns.
cudaError_t launchIm2colPacked(int f, const ConvShape& g, long long n0, long long count, const std::uint16_t* src,
                               float* cols, cudaStream_t stream);
cudaError_t launchIm2col16(const ConvShape& g, long long n0, long long count, const std::uint16_t* src,
                           std::uint16_t* cols, cudaStream_t stream);
// cuDNN's 16-bit convolutions in NHWC (cuda_conv16.cpp): out[b][c][r] =
// in[b * inBatch + r * inLd + c], a batch of (rows, cols) blocks of patterns transposed
// (through shared memory, 32 x 32 at a time); and out (cols, rows) fp32 = the widened
// transpose of the packed in (rows, cols).
cudaError_t launchTranspose16(const std::uint16_t* in, long long batch, long long rows, long long cols,
                              long long inLd, long long inBatch, std::uint16_t* out, cudaStream_t stream);
cudaError_t launchWidenTransposed16(int f, const std::uint16_t* in, long long rows, long long cols, float* out,
                                    cudaStream_t stream);
// dw (Cout, C, k2) = cuDNN's (Cout, k2, C) fp32 filter gradient, or dw + it when accumulate
// (one fp32 addition, rounded to nearest).
cudaError_t launchFilterFromKrsc(const float* in, long long Cout, long long C, long long k2, bool accumulate,
                                 float* dw, cudaStream_t stream);

// What the loss forward leaves on the device for the host to read. Every byte is written
// (the spare float too), so the 16 bytes the host copies back are all initialised
// (compute-sanitizer's initcheck reported the 4 bytes of padding this struct used to have).
struct LossTotals {
    long long correct;
    float loss;
    float spare;
};
static_assert(sizeof(LossTotals) == 16);

// Softmax cross-entropy of logits (N, classes) against labels (device, N values < classes):
// probabilities (N, classes), and the batch mean and count of correct argmaxes in *totals.
// emulate == kFp32: the fp32 path; else every intermediate rounded to `emulate`.
// rowResults (N doubles) and rowCorrect (N bytes) are scratch.
cudaError_t launchSoftmaxCrossEntropy(int emulate, const float* logits, const std::uint8_t* labels, long long N,
                                      long long classes, float* probabilities, double* rowResults,
                                      std::uint8_t* rowCorrect, LossTotals* totals, cudaStream_t stream);
cudaError_t launchSoftmaxCrossEntropyBackward(const float* probabilities, const std::uint8_t* labels, long long N,
                                              long long classes, float lossScale, float* grad,
                                              cudaStream_t stream);

// ---- Gradient sweep and optimizers (step_kernels.cu) --------------------------------------

// Sets *flag to 1 when some x[i] is inf or NaN (*flag is never cleared here).
cudaError_t launchFindNonFinite(const float* x, long long n, unsigned* flag, cudaStream_t stream);
// Unless *flag is set: x[i] = round_format(x[i] * multiplier) when multiplier != 1, and
// *sumOfSquares = sum of x[i]^2 in double. blockSums: blocksFor(n) doubles of scratch.
cudaError_t launchScaleAndSumSquares(int format, float* x, long long n, float multiplier, const unsigned* flag,
                                     double* blockSums, double* sumOfSquares, cudaStream_t stream);

// One optimizer update of n elements (buffer may be null without momentum); counters
// (kUpdateSlots values) get the UpdateCounts added. format: the weights' and gradient's;
// stateFormat: the buffer's or moments' (plab::UpdateFormats); rule: how the weights' write
// rounds, comp: Kahan's compensation (n values) or nullptr.
cudaError_t launchSgdUpdate(const SgdStep& s, int format, int stateFormat, const WeightWriteRule& rule, float* comp,
                            float* weights, const float* grad, float* buffer, long long n, unsigned long long* counters,
                            cudaStream_t stream);
cudaError_t launchAdamUpdate(const AdamStep& s, int format, int stateFormat, const WeightWriteRule& rule, float* comp,
                             float* weights, const float* grad, float* m, float* v, long long n,
                             unsigned long long* counters, cudaStream_t stream);

// ---- The vision transformer's ops (transformer_kernels.cu, transformer_math.h) ----------
// ComputeBackend's transformer ops of the same names, one thread per row, column or element.
cudaError_t launchPatchify(const float* images, long long N, long long side, long long patch, float* out,
                           cudaStream_t stream);
cudaError_t launchAddPeriodic(float* x, long long n, const float* add, long long period, cudaStream_t stream);
cudaError_t launchSumPeriodic(const float* x, long long n, long long period, float* out, cudaStream_t stream);
cudaError_t launchLayerNorm(int f, const float* x, long long rows, long long D, const float* gamma, const float* beta,
                            float eps, float* y, float* xhat, float* rstd, float* sumOfSquares, cudaStream_t stream);
cudaError_t launchLayerNormBackward(const float* g, const float* xhat, const float* rstd, const float* gamma,
                                    long long rows, long long D, float* dx, float* dgamma, float* dbeta,
                                    cudaStream_t stream);
cudaError_t launchSoftmaxRows(int f, const float* s, long long rows, long long T, float* p, cudaStream_t stream);
cudaError_t launchSoftmaxRowsBackward(const float* p, float* g, long long rows, long long T, cudaStream_t stream);
cudaError_t launchGelu(const float* x, float* y, long long n, cudaStream_t stream);
cudaError_t launchGeluBackward(const float* x, float* g, long long n, cudaStream_t stream);
cudaError_t launchAdd(const float* a, const float* b, float* y, long long n, cudaStream_t stream);
cudaError_t launchScale(float* x, long long n, float factor, cudaStream_t stream);
cudaError_t launchMeanTokens(const float* x, long long N, long long T, long long D, float* y, cudaStream_t stream);
cudaError_t launchMeanTokensBackward(const float* g, long long N, long long T, long long D, float* dx,
                                     cudaStream_t stream);

}  // namespace plab::cudakernels
