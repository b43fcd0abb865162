// The FP8 recipes on the CUDA backend: per-tensor quantisation and the amax on
// the device (fp8_kernels.cu, element arithmetic in kernel_fp8.h), and GEMMs on the FP8
// codes through cuBLASLt on devices of compute capability 8.9 or newer.
//
// The layers hand every GEMM fp32 operands: under an FP8 recipe those hold q * scaleInv,
// the dequantised values the quantiser wrote, and GemmPrecision says which format and
// scale each came from (Fp8Operand). fp8Gemm turns them back into codes (x * scale rounds
// to q again, see kernel_fp8.h), in the one layout cuBLASLt's FP8 kernels take: both
// operands K-major ("TN": the column-major A transposed, B not), every dimension padded
// with zeros to a multiple of 16 (pointers and leading dimensions 16-byte aligned). In
// cuBLASLt's column-major view the row-major C (M, N) is C^T (N, M) = op(B)^T op(A)^T, so
// its A is our B (N rows of K codes) and its B our A (M rows of K codes). It multiplies
// the codes with fp32 accumulation (fast accumulation off: the partial sums are promoted
// to fp32 as they go), multiplies by alpha = scaleInv(A) * scaleInv(B) (rounded once from
// their exact double product), and writes an fp32 result (M padded, N padded), which is
// then added into C (with beta * C). The two scales are not handed over as cuBLASLt's A
// and B scale pointers: cuBLASLt 13.1 on an H200 refused every such GEMM with an fp32 D
// (CUBLAS_STATUS_NOT_SUPPORTED at cublasLtMatmul after its heuristic had offered
// algorithms; the same GEMMs ran without the scale pointers: docs/CUDA.md).
//
// Against the CPU's emulation (fp32 sgemm on the dequantised values) the products are
// the same up to one fp32 rounding of each operand (the emulation's q * scaleInv) and the
// order and width of the additions (tensor cores, as cuda_gemm.cpp says): tests compare
// within a bound from the sum of |products|. Block-scaled formats (MX, NVFP4) are not run
// here: their GEMMs need compute capability 10.0, and the backend refuses those recipes.
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/kernels.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>

namespace plab::cuda {

namespace ck = cudakernels;

static_assert(static_cast<int>(MiniFormat::e4m3) == ck::kE4m3);
static_assert(static_cast<int>(MiniFormat::e5m2) == ck::kE5m2);

namespace {

bool isFp8(MiniFormat f) { return f == MiniFormat::e4m3 || f == MiniFormat::e5m2; }

std::int64_t padded16(std::int64_t v) { return (v + 15) / 16 * 16; }

int asLtInt(std::int64_t v, const char* what)
{
    if (v > INT_MAX) throw std::invalid_argument(std::string("FP8 gemm: ") + what + " exceeds 32 bits");
    return static_cast<int>(v);
}

cudaDataType fp8Type(MiniFormat f) { return f == MiniFormat::e5m2 ? CUDA_R_8F_E5M2 : CUDA_R_8F_E4M3; }

std::string fp8Name(MiniFormat f) { return f == MiniFormat::e5m2 ? "E5M2" : "E4M3"; }

// cuBLASLt descriptors, destroyed with the plan that holds them.
struct MatmulDescDeleter {
    void operator()(cublasLtMatmulDescOpaque_t* d) const { (void)cublasLtMatmulDescDestroy(d); }
};
struct LayoutDeleter {
    void operator()(cublasLtMatrixLayoutOpaque_t* l) const { (void)cublasLtMatrixLayoutDestroy(l); }
};
struct PreferenceDeleter {
    void operator()(cublasLtMatmulPreferenceOpaque_t* p) const { (void)cublasLtMatmulPreferenceDestroy(p); }
};
using MatmulDesc = std::unique_ptr<cublasLtMatmulDescOpaque_t, MatmulDescDeleter>;
using Layout = std::unique_ptr<cublasLtMatrixLayoutOpaque_t, LayoutDeleter>;
using Preference = std::unique_ptr<cublasLtMatmulPreferenceOpaque_t, PreferenceDeleter>;

// A column-major (rows, cols) layout with leading dimension ld.
Layout layout(cudaDataType type, std::int64_t rows, std::int64_t cols, std::int64_t ld)
{
    cublasLtMatrixLayout_t l = nullptr;
    PLAB_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&l, type, static_cast<std::uint64_t>(rows),
                                                 static_cast<std::uint64_t>(cols), ld));
    return Layout(l);
}

template <typename T>
void setAttribute(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attribute, const T& value)
{
    PLAB_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, attribute, &value, sizeof value));
}

// A pointer's alignment in bytes, up to the 256 cuBLASLt assumes by default: told to the
// heuristic so that it offers no kernel that needs more than the buffers have.
std::uint32_t alignmentOf(const void* p)
{
    const auto v = reinterpret_cast<std::uintptr_t>(p);
    return static_cast<std::uint32_t>(std::min<std::uintptr_t>(256, v & (~v + 1)));
}

template <typename T>
void setPreference(cublasLtMatmulPreference_t preference, cublasLtMatmulPreferenceAttributes_t attribute,
                   const T& value)
{
    PLAB_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(preference, attribute, &value, sizeof value));
}

// The workspace cuBLASLt may use (its documentation suggests 32 MiB on Hopper).
constexpr std::size_t kLtWorkspaceBytes = std::size_t{32} << 20;

}  // namespace

// One FP8 GEMM shape's cuBLASLt descriptors and the algorithm its heuristic chose, made at
// the shape's first GEMM and kept for the backend's life (a step runs the same few shapes
// every time). Keyed by everything the descriptors and the heuristic were given: the
// padded sizes, the two code formats and the buffers' alignments.
struct CudaBackend::Fp8Plans {
    struct Plan {
        MatmulDesc desc;
        Layout layoutA, layoutB, layoutD;
        cublasLtMatmulAlgo_t algo{};
    };
    using Key = std::tuple<std::int64_t, std::int64_t, std::int64_t, int, int, std::uint32_t, std::uint32_t,
                           std::uint32_t>;
    std::map<Key, Plan> plans;

    const Plan& get(cublasLtHandle_t handle, std::int64_t M, std::int64_t N, std::int64_t K, MiniFormat aFormat,
                    MiniFormat bFormat, const void* a8, const void* b8, const void* d)
    {
        const std::int64_t Mp = padded16(M), Np = padded16(N), Kp = padded16(K);
        const Key key{Mp, Np, Kp, static_cast<int>(aFormat), static_cast<int>(bFormat), alignmentOf(a8),
                      alignmentOf(b8), alignmentOf(d)};
        if (const auto found = plans.find(key); found != plans.end()) return found->second;

        cublasLtMatmulDesc_t rawDesc = nullptr;
        PLAB_CUBLAS_CHECK(cublasLtMatmulDescCreate(&rawDesc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
        Plan plan{MatmulDesc(rawDesc), {}, {}, {}, {}};
        setAttribute(plan.desc.get(), CUBLASLT_MATMUL_DESC_TRANSA, CUBLAS_OP_T);
        setAttribute(plan.desc.get(), CUBLASLT_MATMUL_DESC_TRANSB, CUBLAS_OP_N);
        setAttribute(plan.desc.get(), CUBLASLT_MATMUL_DESC_FAST_ACCUM, std::int8_t{0});
        // cuBLASLt's A: our op(B)^T, Np columns of Kp codes; its B: our op(A)^T, Mp columns of
        // Kp codes; C and D: (Np, Mp) column-major, our (Mp, Np) row-major scratch.
        plan.layoutA = layout(fp8Type(bFormat), Kp, Np, Kp);
        plan.layoutB = layout(fp8Type(aFormat), Kp, Mp, Kp);
        plan.layoutD = layout(CUDA_R_32F, Np, Mp, Np);

        cublasLtMatmulPreference_t rawPreference = nullptr;
        PLAB_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&rawPreference));
        const Preference preference(rawPreference);
        setPreference(preference.get(), CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, std::uint64_t{kLtWorkspaceBytes});
        setPreference(preference.get(), CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, alignmentOf(b8));
        setPreference(preference.get(), CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, alignmentOf(a8));
        setPreference(preference.get(), CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, alignmentOf(d));
        setPreference(preference.get(), CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, alignmentOf(d));
        cublasLtMatmulHeuristicResult_t heuristic{};
        int found = 0;
        // NOT_SUPPORTED: no heuristic for this configuration; on success the result's own
        // state says whether its algorithm can run. Either way the run stops with the shape
        // rather than multiplying in another arithmetic than arithmeticFor named (nothing
        // is kept, so the next GEMM of the shape asks again and stops the same way).
        const cublasStatus_t status =
            cublasLtMatmulAlgoGetHeuristic(handle, plan.desc.get(), plan.layoutA.get(), plan.layoutB.get(),
                                           plan.layoutD.get(), plan.layoutD.get(), preference.get(), 1, &heuristic,
                                           &found);
        if (status == CUBLAS_STATUS_NOT_SUPPORTED ||
            (status == CUBLAS_STATUS_SUCCESS && (found == 0 || heuristic.state != CUBLAS_STATUS_SUCCESS)))
            throw std::runtime_error("cuBLASLt has no FP8 GEMM for " + std::to_string(M) + " x " + std::to_string(N) +
                                     " x " + std::to_string(K) + " (" + fp8Name(aFormat) + " x " + fp8Name(bFormat) +
                                     ") on this device");
        PLAB_CUBLAS_CHECK(status);
        plan.algo = heuristic.algo;
        return plans.emplace(key, std::move(plan)).first->second;
    }
};

void CudaBackend::Fp8PlansDeleter::operator()(Fp8Plans* plans) const { delete plans; }

bool runsFp8(const GemmPrecision& p, DeviceCapability cap)
{
    return p.fp8() && p.fp32Accumulate && p.compute == Format::fp32 && cap.fp8() && isFp8(p.a.element) &&
           isFp8(p.b.element) && !(p.a.element == MiniFormat::e5m2 && p.b.element == MiniFormat::e5m2);
}

namespace {

// The per-tensor FP8 quantisations' contract (the CPU's too).
void checkPerTensor(const QuantizeOp& op, std::int64_t n, const char* what)
{
    if (op.blocks)
        throw std::logic_error(std::string("The CUDA backend quantises per tensor only (") + what +
                               "); block-scaled formats (MX, NVFP4) need compute capability 10.0 and are emulated "
                               "on the CPU backend.");
    if (!isFp8(op.element))
        throw std::logic_error("The CUDA backend quantises per tensor to FP8 E4M3 or E5M2 only.");
    if (n < 0) throw std::invalid_argument(std::string(what) + " got a negative size.");
}

}  // namespace

int fp8Format(MiniFormat f, const char* what)
{
    if (!isFp8(f)) throw std::invalid_argument(std::string(what) + " decodes FP8 E4M3 or E5M2 codes only.");
    return static_cast<int>(f);
}

template <typename Launch>
float CudaBackend::quantizedPerTensor(std::int64_t n, RoundingStats* stats, GradientHistogram* hist, Launch&& launch)
{
    if (n == 0) return 0.0f;
    activate();
    auto* amax = quantizeScratch_.reserveFor<unsigned>(1);
    PLAB_CUDA_CHECK(cudaMemsetAsync(amax, 0, sizeof(unsigned), stream()));
    const bool counted = stats || hist;
    const ck::Fp8Counting counting{counted ? counters_.roundingSlots(stats, hist) : nullptr, stats != nullptr,
                                   hist != nullptr, amax};
    PLAB_CUDA_CHECK(launch(counting));
    if (counted) counters_.addElements(stats, hist, static_cast<std::size_t>(n));
    return readAmax(amax);
}

template <typename Launch>
float CudaBackend::amaxOf(std::int64_t n, Launch&& launch)
{
    if (n < 0) throw std::invalid_argument("amax got a negative size.");
    if (n == 0) return 0.0f;
    activate();
    auto* amax = quantizeScratch_.reserveFor<unsigned>(1);
    PLAB_CUDA_CHECK(cudaMemsetAsync(amax, 0, sizeof(unsigned), stream()));
    PLAB_CUDA_CHECK(launch(amax));
    return readAmax(amax);
}

float CudaBackend::quantize(const QuantizeOp& op, const float* src, float* dst, std::int64_t n, RoundingStats* stats,
                            GradientHistogram* hist, GradientHistogram* blockScales)
{
    (void)blockScales;   // no blocks here
    checkPerTensor(op, n, "quantize");
    return quantizedPerTensor(n, stats, hist, [&](const ck::Fp8Counting& c) {
        return ck::launchQuantizeFp8(static_cast<int>(op.element), src, dst, n, op.scale, op.scaleInv, c, stream());
    });
}

float CudaBackend::quantize16(const QuantizeOp& op, Format from, const std::uint16_t* src, float* dst, std::int64_t n,
                              RoundingStats* stats, GradientHistogram* hist)
{
    checkPerTensor(op, n, "quantize16");
    const int f = format16(from, "quantize16");
    return quantizedPerTensor(n, stats, hist, [&](const ck::Fp8Counting& c) {
        return ck::launchQuantizeFp8From16(static_cast<int>(op.element), f, src, dst, n, op.scale, op.scaleInv, c,
                                           stream());
    });
}

float CudaBackend::quantizeToCodes(const QuantizeOp& op, const float* src, std::uint8_t* codes, std::int64_t n,
                                   RoundingStats* stats, GradientHistogram* hist)
{
    checkPerTensor(op, n, "quantizeToCodes");
    return quantizedPerTensor(n, stats, hist, [&](const ck::Fp8Counting& c) {
        return ck::launchQuantizeFp8Codes(static_cast<int>(op.element), src, codes, n, op.scale, c, stream());
    });
}

float CudaBackend::quantize16ToCodes(const QuantizeOp& op, Format from, const std::uint16_t* src, std::uint8_t* codes,
                                     std::int64_t n, RoundingStats* stats, GradientHistogram* hist)
{
    checkPerTensor(op, n, "quantize16ToCodes");
    const int f = format16(from, "quantize16ToCodes");
    return quantizedPerTensor(n, stats, hist, [&](const ck::Fp8Counting& c) {
        return ck::launchQuantizeFp8CodesFrom16(static_cast<int>(op.element), f, src, codes, n, op.scale, c,
                                                stream());
    });
}

float CudaBackend::amax(const float* src, std::int64_t n)
{
    return amaxOf(n, [&](unsigned* key) { return ck::launchAmax(src, n, key, stream()); });
}

float CudaBackend::amax16(Format from, const std::uint16_t* src, std::int64_t n)
{
    const int f = format16(from, "amax16");
    return amaxOf(n, [&](unsigned* key) { return ck::launchAmax16(f, src, n, key, stream()); });
}

void CudaBackend::decodeFp8(MiniFormat element, float scaleInv, const std::uint8_t* codes, std::int64_t codesLd,
                            float* dst, std::int64_t dstLd, std::int64_t rows, std::int64_t cols)
{
    const int f = fp8Format(element, "decodeFp8");
    if (rows <= 0 || cols <= 0) return;
    if (rows > 1 && (codesLd < cols || dstLd < cols))
        throw std::invalid_argument("decodeFp8: a leading dimension is shorter than a row.");
    activate();
    PLAB_CUDA_CHECK(ck::launchDecodeFp8(f, scaleInv, codes, codesLd, dst, dstLd, rows, cols, stream()));
}

float CudaBackend::readAmax(const unsigned* deviceKey)
{
    auto* host = results_.reserveFor<unsigned>(1);
    PLAB_CUDA_CHECK(cudaMemcpyAsync(host, deviceKey, sizeof(unsigned), cudaMemcpyDeviceToHost, stream()));
    synchronize();
    return ck::amaxFromKey(*host);
}

void CudaBackend::fp8Gemm(Transpose transA, Transpose transB, std::int64_t M, std::int64_t N, std::int64_t K,
                          const float* A, std::int64_t lda, const float* B, std::int64_t ldb, float beta, float* C,
                          std::int64_t ldc, const GemmPrecision& precision)
{
    const std::int64_t Mp = padded16(M), Np = padded16(N), Kp = padded16(K);
    asLtInt(Mp, "M");
    asLtInt(Np, "N");
    asLtInt(Kp, "K");
    // op(A) (M, K): element (i, k) is A[i * lda + k] untransposed, A[k * lda + i] transposed;
    // op(B) (K, N): element (k, j) is B[k * ldb + j] untransposed, B[j * ldb + k] transposed.
    const ck::Fp8OperandShape shapeA{M, K, lda, transA == Transpose::no, Mp, Kp};
    const ck::Fp8OperandShape shapeB{N, K, ldb, transB == Transpose::yes, Np, Kp};
    auto* a8 = a16_.reserveFor<std::uint8_t>(static_cast<std::size_t>(Mp * Kp));
    auto* b8 = b16_.reserveFor<std::uint8_t>(static_cast<std::size_t>(Np * Kp));
    auto* d = c16_.reserveFor<float>(static_cast<std::size_t>(Mp * Np));
    void* workspace = ltWorkspace_.reserve(kLtWorkspaceBytes);
    PLAB_CUDA_CHECK(ck::launchEncodeFp8(static_cast<int>(precision.a.element), A, shapeA, precision.a.scale, a8,
                                        stream()));
    PLAB_CUDA_CHECK(ck::launchEncodeFp8(static_cast<int>(precision.b.element), B, shapeB, precision.b.scale, b8,
                                        stream()));

    if (!fp8Plans_) fp8Plans_.reset(new Fp8Plans);
    const Fp8Plans::Plan& plan = fp8Plans_->get(cublasLt_.get(), M, N, K, precision.a.element, precision.b.element,
                                                a8, b8, d);
    const float alpha = static_cast<float>(double(precision.a.scaleInv) * double(precision.b.scaleInv));
    const float zero = 0.0f;
    PLAB_CUBLAS_CHECK(cublasLtMatmul(cublasLt_.get(), plan.desc.get(), &alpha, b8, plan.layoutA.get(), a8,
                                     plan.layoutB.get(), &zero, d, plan.layoutD.get(), d, plan.layoutD.get(),
                                     &plan.algo, workspace, kLtWorkspaceBytes, stream()));
    PLAB_CUDA_CHECK(ck::launchAddScaled(d, Np, M, N, beta, C, ldc, stream()));
}

}  // namespace plab::cuda
