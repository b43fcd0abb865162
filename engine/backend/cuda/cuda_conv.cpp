// Over 500 lines: the three passes share the layouts, the descriptors and the plan cache; cuDNN's three algorithm queries differ only in their types.
// CudnnConvolutions (cuda_conv.h): the three convolution passes through cuDNN's legacy API.
//
// Layout. Activations are (C, N, H, W), channel-major over the batch; cuDNN gets them
// first as they are, through strided 4-d descriptors of logical shape (N, C, H, W):
//   n stride H*W, c stride N*H*W, h stride W, w stride 1
// (the same for y / dy with Cout channels). When cuDNN lists no algorithm for that (cuDNN
// 9.19 on an H100 listed none, for any precision), the shape is planned on dense NCHW
// descriptors instead and each call transposes its activation inputs to (N, C, H, W) and
// its activation output back (Layout below). Weights are dense (Cout, C, k, k): a KCRS
// filter, CUDNN_TENSOR_NCHW. Padding k/2 on both sides, stride 1, dilation 1,
// CUDNN_CROSS_CORRELATION (no kernel flip, as PyTorch and the im2col lowering).
//
// Arithmetic, one row per GemmPath (cuda_precision.h):
//   fp32Strict           FLOAT data, FLOAT compute, CUDNN_FMA_MATH (no TF32)
//   tf32                 FLOAT data, FLOAT compute, CUDNN_DEFAULT_MATH (TF32 tensor cores
//                        on sm >= 80; the operands already are tf32 values)
//   bits16Fp32Accumulate FLOAT data, FLOAT compute, CUDNN_DEFAULT_MATH (TF32 tensor cores)
//   fp16Accumulate       HALF data, HALF compute (TRUE_HALF_CONFIG), CUDNN_FMA_MATH
// fp16 / bf16 with fp32 sums stay FLOAT on purpose. cuDNN's legacy API wants x, w and y in
// one data type, so HALF data would give a 16-bit y: rounded inside cuDNN, where the
// lab's telemetry cannot see it (an underflowed gradient would arrive as a zero, not be
// counted as underflow). Every fp16 and bf16 value is exactly a tf32 value (10 mantissa
// bits, fp32's exponent range), so TF32 tensor cores multiply these operands exactly, and
// the fp32-wide sum is left for the layer to round with its tap. That sum is not the CPU's
// fp32 sum, though: a tensor core adds a block of products in one multi-operand step that
// aligns them to the largest exponent and truncates the bits shifted out, not an IEEE
// round-to-nearest fp32 addition per product (measured on V100, T4 and A100 by Fasi,
// Higham, Mikaitis and Pranesh, "Numerical behavior of NVIDIA tensor cores", PeerJ Computer
// Science, 2021), so the results differ from an fp32 FMA loop by more than the order of
// the additions. The cost
// is TF32's rate (half of fp16's on Hopper) and fp32 traffic; see docs/CUDA.md.
// Summing in fp16 (the teaching option) runs in HALF with CUDNN_FMA_MATH only: no tensor
// cores, whose fp16 MMA would round once per block of products, not after every addition
// as the CPU's emulation does. What FMA math still does not promise: the order of the
// additions (the algorithm's tiling, partial sums over the batch for the filter gradient,
// and the non-deterministic algorithms' atomics, none of them the CPU's sequential k
// order), nor, in cuDNN's documentation, that every kernel keeps its running sum in fp16
// rather than wider. A shape with no FMA-math algorithm is lowered by the layer, to the
// GEMM's CUBLAS_COMPUTE_16F_PEDANTIC.
//
// Algorithms. Once per (geometry, Cout, path, compute format), cuDNN's heuristics
// (cudnnGet*Algorithm_v7: no trial runs, nothing allocated) rank the algorithms of each
// pass; we keep, in that order with the deterministic ones first, those that
//   - multiply operands and sum the products (implicit / explicit GEMM, direct: not the
//     FFT or Winograd transforms, whose rounding of transformed operands is not the
//     recipe's arithmetic: the lab compares formats, so the arithmetic must be theirs),
//   - run in a math type the path allows (strict fp32 and fp16 sums: run with FMA math set,
//     which restricts an algorithm listed under FMA or default math to FMA kernels; never
//     TENSOR_OP_MATH_ALLOW_CONVERSION, which rounds fp32 to fp16),
//   - report CUDNN_STATUS_SUCCESS for the shape,
//   - need at most kWorkspaceLimit of workspace.
// cuDNN's statuses count by their kind (cudnnStatusKind, cuda_status.h). Only a
// shape-class "not supported" (the shape, layout, data type, padding or this algorithm's
// launch) drops an algorithm, or the pass when the heuristics refuse it whole. An
// environment status (driver, CUDA runtime, architecture, a missing prerequisite or
// sub-library) is an error naming the call and the status whenever it costs a pass its
// last acceptable algorithm: lowering would hide a broken installation. Every other
// failure is an error at once.
// At the first call of each pass, the kept deterministic ones are timed on that call's
// operands and the fastest goes first when it beats the heuristics' first by more than 10%
// (State::measure; cudnn.benchmark's idea, without its non-deterministic algorithms, which
// stay behind them in the heuristics' order).
// The first kept one runs; one that refuses the shape at run time is dropped for good and
// the next one runs. A shape with no algorithm left for some pass is not run here at all
// (the calls return false and the layer lowers it). When a pass's last algorithm refuses
// at run time, that call returns false the same way (nothing written) and the plan is
// unusable from then on: a refused forward pass is lowered by the layer with its backward
// passes, a refused backward pass is lowered from the input the layer kept (see State::run).
#include "backend/cuda/cuda_conv.h"

#include "backend/cuda/cuda_resources.h"
#include "backend/cuda/cuda_status.h"
#include "backend/cuda/kernels.h"

#include <algorithm>
#include <climits>
#include <compare>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace plab::cuda {

#if PLAB_CUDA_HAVE_CUDNN

namespace {

void checkConvGeometry(const ConvGeometry& g, std::int64_t outChannels)
{
    // The contract of ComputeBackend's convolutions (the layer's, and im2col's).
    if (g.kernel != 2 * g.pad + 1 || g.pad < 0 || g.channels <= 0 || g.height <= 0 || g.width <= 0 ||
        g.batch < 0 || outChannels <= 0)
        throw std::invalid_argument("a library convolution needs a same-size stride-1 convolution (kernel 2 * pad + "
                                    "1) with positive channel counts and plane size.");
}


// The most workspace one algorithm may use. The heuristics rank well-behaved algorithms
// first; this only keeps a pathological choice from taking the device's memory.
constexpr std::size_t kWorkspaceLimit = std::size_t{256} << 20;

enum class Pass { forward, backwardData, backwardFilter };

// cuDNN keeps a message for the last failure of the thread; one we handle (an algorithm that
// is not supported) must not reappear in the message of a later, unrelated failure.
void discardCudnnMessage()
{
    char unused[256];
    cudnnGetLastErrorString(unused, sizeof unused);
}

// The statuses after which another algorithm, or the layer's lowering, can do the work.
bool refusesShape(cudnnStatus_t status) { return cudnnStatusKind(status) == CudnnStatusKind::shapeNotSupported; }

// ---- RAII over cuDNN objects --------------------------------------------------------------

struct TensorTraits {
    using Handle = cudnnTensorDescriptor_t;
    static constexpr const char* kCreate = "cudnnCreateTensorDescriptor";
    static cudnnStatus_t create(Handle* d) { return cudnnCreateTensorDescriptor(d); }
    static void destroy(Handle d) { (void)cudnnDestroyTensorDescriptor(d); }
};
struct FilterTraits {
    using Handle = cudnnFilterDescriptor_t;
    static constexpr const char* kCreate = "cudnnCreateFilterDescriptor";
    static cudnnStatus_t create(Handle* d) { return cudnnCreateFilterDescriptor(d); }
    static void destroy(Handle d) { (void)cudnnDestroyFilterDescriptor(d); }
};
struct ConvolutionTraits {
    using Handle = cudnnConvolutionDescriptor_t;
    static constexpr const char* kCreate = "cudnnCreateConvolutionDescriptor";
    static cudnnStatus_t create(Handle* d) { return cudnnCreateConvolutionDescriptor(d); }
    static void destroy(Handle d) { (void)cudnnDestroyConvolutionDescriptor(d); }
};

template <typename Traits>
class Descriptor {
public:
    Descriptor() { checkCudnn(Traits::create(&d_), Traits::kCreate); }
    ~Descriptor() { Traits::destroy(d_); }
    Descriptor(const Descriptor&) = delete;
    Descriptor& operator=(const Descriptor&) = delete;
    typename Traits::Handle get() const { return d_; }

private:
    typename Traits::Handle d_ = nullptr;
};

// A CUDA event for timing (the algorithms' measurement).
class Event {
public:
    Event() { PLAB_CUDA_CHECK(cudaEventCreate(&e_)); }
    ~Event() { (void)cudaEventDestroy(e_); }
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;
    cudaEvent_t get() const { return e_; }

private:
    cudaEvent_t e_ = nullptr;
};

// A cuDNN handle issuing on the backend's stream.
class CudnnHandle {
public:
    explicit CudnnHandle(cudaStream_t stream)
    {
        PLAB_CUDNN_CHECK(cudnnCreate(&handle_));
        if (const cudnnStatus_t status = cudnnSetStream(handle_, stream); status != CUDNN_STATUS_SUCCESS) {
            (void)cudnnDestroy(handle_);   // the destructor does not run for a throwing constructor
            throwCudnnError(status, "cudnnSetStream");
        }
    }
    ~CudnnHandle() { (void)cudnnDestroy(handle_); }
    CudnnHandle(const CudnnHandle&) = delete;
    CudnnHandle& operator=(const CudnnHandle&) = delete;
    cudnnHandle_t get() const { return handle_; }

private:
    cudnnHandle_t handle_ = nullptr;
};

// ---- What a recipe asks of cuDNN ----------------------------------------------------------

struct Arithmetic {
    cudnnDataType_t data;      // x, w, y
    cudnnDataType_t compute;   // the convolution's accumulation
    cudnnMathType_t math;      // what the heuristics are asked for
    int format16;              // cudakernels::kFp16 / kBf16 for 16-bit data, else -1
};

Arithmetic arithmeticOf(GemmPath path)
{
    switch (path) {
    case GemmPath::fp32Strict: return {CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT, CUDNN_FMA_MATH, -1};
    case GemmPath::tf32: return {CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT, CUDNN_DEFAULT_MATH, -1};
    case GemmPath::bits16Fp32Accumulate: return {CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT, CUDNN_DEFAULT_MATH, -1};
    case GemmPath::fp16Accumulate: return {CUDNN_DATA_HALF, CUDNN_DATA_HALF, CUDNN_FMA_MATH, cudakernels::kFp16};
    }
    throw std::invalid_argument("convolutions: unknown arithmetic");
}

// The math type to run an algorithm the heuristics listed with math type m, so that it
// computes what `path` means; none when it cannot. The paths that must not use tensor cores
// (strict fp32 on a device with TF32, fp16 sums) run with CUDNN_FMA_MATH set on the
// descriptor whatever the entry says, since cuDNN then restricts the algorithm to FMA
// kernels (or refuses it, which drops it): cuDNN 9's heuristics may list an FMA-capable
// algorithm under CUDNN_DEFAULT_MATH. A tensor-op entry is never taken for them.
std::optional<cudnnMathType_t> mathToRun(GemmPath path, cudnnMathType_t m)
{
    if (m == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION) return std::nullopt;   // would round fp32 operands to fp16
    switch (path) {
    case GemmPath::fp32Strict:
    case GemmPath::fp16Accumulate:   // tensor cores round per block, not per addition
        if (m == CUDNN_FMA_MATH || m == CUDNN_DEFAULT_MATH) return CUDNN_FMA_MATH;
        return std::nullopt;
    case GemmPath::tf32:
    case GemmPath::bits16Fp32Accumulate: return m;
    }
    return std::nullopt;
}

// Algorithms that multiply operands and sum products (see the top of the file).
bool sumsProducts(Pass pass, int algo)
{
    switch (pass) {
    case Pass::forward:
        return algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM || algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM ||
               algo == CUDNN_CONVOLUTION_FWD_ALGO_GEMM || algo == CUDNN_CONVOLUTION_FWD_ALGO_DIRECT;
    case Pass::backwardData:
        return algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_0 || algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_1;
    case Pass::backwardFilter:
        return algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0 || algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1 ||
               algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3;
    }
    return false;
}

// ---- Plans: one per shape and arithmetic ---------------------------------------------------

struct ConvKey {
    std::int64_t channels, batch, height, width, outChannels;
    int kernel;
    GemmPath path;
    Format compute;
    auto operator<=>(const ConvKey&) const = default;
};

struct Candidate {
    int algo;                 // a cudnnConvolution{Fwd,BwdData,BwdFilter}Algo_t
    cudnnMathType_t math;     // set on the descriptor before it runs
    std::size_t workspace;    // bytes
    bool deterministic;       // cuDNN's CUDNN_DETERMINISTIC
};

// How the plan's descriptors see the activations: as they are stored, (C, N, H, W) through
// strides, or dense (N, C, H, W), which the calls make with transposes around cuDNN. The
// stored layout is tried first (no copies); cuDNN 9 on an H100 listed no algorithm for it
// (docs/CUDA.md), so a shape it refuses is planned again on the dense layout every cuDNN
// version supports before the layer has to lower it.
enum class Layout { stored, dense };

struct Plan {
    Arithmetic arithmetic{};
    Layout layout = Layout::stored;
    Descriptor<TensorTraits> x, y;            // (C, N, H, W) and (Cout, N, H, W), seen as (N, C, H, W)
    Descriptor<FilterTraits> w;               // (Cout, C, k, k)
    Descriptor<ConvolutionTraits> conv;       // math type set per run
    std::vector<Candidate> forward, backwardData, backwardFilter;   // best first
    bool measured[3] = {false, false, false};   // per Pass: its deterministic candidates timed and ordered
    bool usable() const { return !forward.empty() && !backwardData.empty() && !backwardFilter.empty(); }
};

// The kept algorithms of one pass (see the top of the file), from the heuristics' list
// `list(requested, &returned, perf)`; workspaceOf(algo, &bytes) asks the size for the math
// type set on the descriptor.
template <typename Perf, typename List, typename WorkspaceOf>
std::vector<Candidate> keptAlgorithms(Pass pass, GemmPath path, const Plan& plan, int maxCount,
                                      const char* listCall, List list, const char* workspaceCall,
                                      WorkspaceOf workspaceOf)
{
    PLAB_CUDNN_CHECK(cudnnSetConvolutionMathType(plan.conv.get(), plan.arithmetic.math));
    std::vector<Perf> perf(static_cast<std::size_t>(std::max(maxCount, 1)));
    int returned = 0;
    const cudnnStatus_t status = list(static_cast<int>(perf.size()), &returned, perf.data());
    if (refusesShape(status)) {
        discardCudnnMessage();
        return {};
    }
    checkCudnn(status, listCall);
    std::vector<Candidate> deterministic, other;
    // The first environment status of an algorithm we would have run: an error if it leaves
    // the pass with nothing (a broken installation, not a shape cuDNN cannot do). While
    // another acceptable algorithm is left, that one runs and the pass stays on cuDNN.
    cudnnStatus_t environment = CUDNN_STATUS_SUCCESS;
    for (int i = 0; i < std::min(returned, static_cast<int>(perf.size())); ++i) {
        const Perf& p = perf[static_cast<std::size_t>(i)];
        const int algo = static_cast<int>(p.algo);
        const std::optional<cudnnMathType_t> math = mathToRun(path, p.mathType);
        if (!sumsProducts(pass, algo) || !math) continue;
        if (p.status != CUDNN_STATUS_SUCCESS) {
            if (cudnnStatusKind(p.status) == CudnnStatusKind::environment && environment == CUDNN_STATUS_SUCCESS)
                environment = p.status;
            continue;
        }
        PLAB_CUDNN_CHECK(cudnnSetConvolutionMathType(plan.conv.get(), *math));
        std::size_t bytes = 0;
        if (const cudnnStatus_t sized = workspaceOf(algo, &bytes); sized != CUDNN_STATUS_SUCCESS) {
            if (!refusesShape(sized)) throwCudnnError(sized, workspaceCall);
            discardCudnnMessage();
            continue;
        }
        if (bytes > kWorkspaceLimit) continue;
        const bool isDeterministic = p.determinism == CUDNN_DETERMINISTIC;
        (isDeterministic ? deterministic : other).push_back({algo, *math, bytes, isDeterministic});
    }
    if (deterministic.empty() && other.empty() && environment != CUDNN_STATUS_SUCCESS)
        throwCudnnError(environment, listCall);
    deterministic.insert(deterministic.end(), other.begin(), other.end());
    return deterministic;
}

int asInt(std::int64_t v) { return static_cast<int>(v); }

// Whether every dimension, stride and element count fits cuDNN's int.
bool fitsCudnn(const ConvGeometry& g, std::int64_t outChannels)
{
    const std::int64_t plane = g.height * g.width, k2 = std::int64_t{g.kernel} * g.kernel;
    return std::max(g.channels, outChannels) * g.batch * plane <= INT_MAX && outChannels * g.channels * k2 <= INT_MAX;
}

std::unique_ptr<Plan> makePlan(cudnnHandle_t handle, const ConvKey& key, Layout layout)
{
    auto plan = std::make_unique<Plan>();
    plan->arithmetic = arithmeticOf(key.path);
    plan->layout = layout;
    const cudnnDataType_t type = plan->arithmetic.data;
    const int N = asInt(key.batch), C = asInt(key.channels), H = asInt(key.height), W = asInt(key.width);
    const int K = asInt(key.outChannels), k = key.kernel, pad = key.kernel / 2;
    if (layout == Layout::stored) {
        // (C, N, H, W) storage seen as (N, C, H, W): n stride H*W, c stride N*H*W.
        PLAB_CUDNN_CHECK(cudnnSetTensor4dDescriptorEx(plan->x.get(), type, N, C, H, W, H * W, N * H * W, W, 1));
        PLAB_CUDNN_CHECK(cudnnSetTensor4dDescriptorEx(plan->y.get(), type, N, K, H, W, H * W, N * H * W, W, 1));
    } else {
        PLAB_CUDNN_CHECK(cudnnSetTensor4dDescriptor(plan->x.get(), CUDNN_TENSOR_NCHW, type, N, C, H, W));
        PLAB_CUDNN_CHECK(cudnnSetTensor4dDescriptor(plan->y.get(), CUDNN_TENSOR_NCHW, type, N, K, H, W));
    }
    PLAB_CUDNN_CHECK(cudnnSetFilter4dDescriptor(plan->w.get(), type, CUDNN_TENSOR_NCHW, K, C, k, k));
    PLAB_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(plan->conv.get(), pad, pad, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION,
                                                     plan->arithmetic.compute));
    int outN = 0, outC = 0, outH = 0, outW = 0;
    PLAB_CUDNN_CHECK(
        cudnnGetConvolution2dForwardOutputDim(plan->conv.get(), plan->x.get(), plan->w.get(), &outN, &outC, &outH, &outW));
    if (outN != N || outC != K || outH != H || outW != W)
        throw std::logic_error("cuDNN describes the convolution's output otherwise than (Cout, N, H, W)");

    const Plan& p = *plan;
    int count = 0;
    PLAB_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithmMaxCount(handle, &count));
    plan->forward = keptAlgorithms<cudnnConvolutionFwdAlgoPerf_t>(
        Pass::forward, key.path, p, count, "cudnnGetConvolutionForwardAlgorithm_v7",
        [&](int requested, int* returned, cudnnConvolutionFwdAlgoPerf_t* perf) {
            return cudnnGetConvolutionForwardAlgorithm_v7(handle, p.x.get(), p.w.get(), p.conv.get(), p.y.get(),
                                                          requested, returned, perf);
        },
        "cudnnGetConvolutionForwardWorkspaceSize",
        [&](int algo, std::size_t* bytes) {
            return cudnnGetConvolutionForwardWorkspaceSize(handle, p.x.get(), p.w.get(), p.conv.get(), p.y.get(),
                                                           static_cast<cudnnConvolutionFwdAlgo_t>(algo), bytes);
        });
    PLAB_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(handle, &count));
    plan->backwardData = keptAlgorithms<cudnnConvolutionBwdDataAlgoPerf_t>(
        Pass::backwardData, key.path, p, count, "cudnnGetConvolutionBackwardDataAlgorithm_v7",
        [&](int requested, int* returned, cudnnConvolutionBwdDataAlgoPerf_t* perf) {
            return cudnnGetConvolutionBackwardDataAlgorithm_v7(handle, p.w.get(), p.y.get(), p.conv.get(), p.x.get(),
                                                               requested, returned, perf);
        },
        "cudnnGetConvolutionBackwardDataWorkspaceSize",
        [&](int algo, std::size_t* bytes) {
            return cudnnGetConvolutionBackwardDataWorkspaceSize(handle, p.w.get(), p.y.get(), p.conv.get(), p.x.get(),
                                                                static_cast<cudnnConvolutionBwdDataAlgo_t>(algo), bytes);
        });
    PLAB_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(handle, &count));
    plan->backwardFilter = keptAlgorithms<cudnnConvolutionBwdFilterAlgoPerf_t>(
        Pass::backwardFilter, key.path, p, count, "cudnnGetConvolutionBackwardFilterAlgorithm_v7",
        [&](int requested, int* returned, cudnnConvolutionBwdFilterAlgoPerf_t* perf) {
            return cudnnGetConvolutionBackwardFilterAlgorithm_v7(handle, p.x.get(), p.y.get(), p.conv.get(), p.w.get(),
                                                                 requested, returned, perf);
        },
        "cudnnGetConvolutionBackwardFilterWorkspaceSize",
        [&](int algo, std::size_t* bytes) {
            return cudnnGetConvolutionBackwardFilterWorkspaceSize(handle, p.x.get(), p.y.get(), p.conv.get(),
                                                                  p.w.get(),
                                                                  static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo),
                                                                  bytes);
        });
    return plan;
}

}  // namespace

struct CudnnConvolutions::State {
    State(cudaStream_t stream, cudaMemPool_t pool)
        : stream(stream), handle(stream), workspace(stream, pool), operandA(stream, pool), operandB(stream, pool),
          result(stream, pool), denseA(stream, pool), denseB(stream, pool), denseOut(stream, pool)
    {
    }

    cudaStream_t stream;
    CudnnHandle handle;
    DeviceBuffer workspace;            // the running algorithm's
    DeviceBuffer operandA, operandB;   // 16-bit copies of the two inputs of a pass
    DeviceBuffer result;               // the 16-bit output of a pass
    DeviceBuffer denseA, denseB;       // dense (N, C, H, W) copies of activation inputs (Layout::dense)
    DeviceBuffer denseOut;             // a dense fp32 activation output before its transpose back
    std::map<ConvKey, std::unique_ptr<Plan>> plans;

    // The dense 16-bit copy of n fp32 values (exact for values of the format).
    const std::uint16_t* narrowed(int format16, const float* src, std::int64_t n, DeviceBuffer& into)
    {
        auto* dst = into.reserveFor<std::uint16_t>(static_cast<std::size_t>(n));
        PLAB_CUDA_CHECK(cudakernels::launchTo16Bit(format16, src, n, 1, n, dst, stream));
        return dst;
    }
    void widen(int format16, const std::uint16_t* src, std::int64_t n, float* dst)
    {
        PLAB_CUDA_CHECK(cudakernels::launchFrom16Bit(format16, src, 1, n, dst, n, stream));
    }

    // What cuDNN reads for an activation (channels, N, hw) as stored: the plan's layout, in its
    // data type. `dense` and `narrow` hold the copies.
    const void* activationIn(const Plan& plan, const float* src, std::int64_t channels, std::int64_t N,
                             std::int64_t hw, DeviceBuffer& dense, DeviceBuffer& narrow)
    {
        const float* f = src;
        if (plan.layout == Layout::dense) {
            float* copy = dense.reserveFor<float>(static_cast<std::size_t>(channels * N * hw));
            PLAB_CUDA_CHECK(cudakernels::launchTransposeBlocks(src, channels, N, hw, copy, stream));
            f = copy;
        }
        const int f16 = plan.arithmetic.format16;
        if (f16 >= 0) return narrowed(f16, f, channels * N * hw, narrow);
        return f;
    }
    // What cuDNN reads for the weights (dense in every layout), in the plan's data type.
    const void* weightsIn(const Plan& plan, const float* w, std::int64_t n, DeviceBuffer& narrow)
    {
        const int f16 = plan.arithmetic.format16;
        if (f16 >= 0) return narrowed(f16, w, n, narrow);
        return w;
    }
    // Where cuDNN writes an output of n elements that belongs in dst (an activation, or the
    // weights' shape), and, once it ran, moving it there: widened from 16 bits, transposed
    // back from (N, channels, hw) for a dense activation.
    void* outputFor(const Plan& plan, bool activation, std::int64_t n, float* dst)
    {
        if (plan.arithmetic.format16 >= 0) return result.reserveFor<std::uint16_t>(static_cast<std::size_t>(n));
        if (activation && plan.layout == Layout::dense) return denseOut.reserveFor<float>(static_cast<std::size_t>(n));
        return dst;
    }
    void deliver(const Plan& plan, bool activation, void* out, std::int64_t channels, std::int64_t N,
                 std::int64_t hw, float* dst)
    {
        const std::int64_t n = channels * N * hw;
        const bool transpose = activation && plan.layout == Layout::dense;
        auto* wide = static_cast<float*>(out);
        if (const int f16 = plan.arithmetic.format16; f16 >= 0) {
            wide = transpose ? denseOut.reserveFor<float>(static_cast<std::size_t>(n)) : dst;
            widen(f16, static_cast<const std::uint16_t*>(out), n, wide);
        }
        if (transpose) PLAB_CUDA_CHECK(cudakernels::launchTransposeBlocks(wide, N, channels, hw, dst, stream));
    }

    // Runs `launch(algo, workspace, bytes)` with the first candidate of a pass; true once one
    // has run. One that cuDNN refuses for the shape (refusesShape: a refusal, decided before
    // cuDNN launches anything) is dropped for good and the next one runs; any other failure
    // throws. false when the last one refuses: nothing was written, the pass has no
    // candidate left and the plan is unusable, so every later call for the shape returns
    // false too. Conv2d lowers what the library refused: after a refused forward pass, all
    // three passes; after a refused backward pass (its forward ran here this step), the rest
    // of that step's backward, from the input it kept; and from the next step on the whole
    // shape, since forward now returns false. `call` names the pass in errors.
    template <typename Launch>
    bool run(Plan& plan, Pass pass, std::vector<Candidate>& candidates, const char* call, Launch launch)
    {
        bool& measured = plan.measured[static_cast<int>(pass)];
        if (!measured) {
            measure(plan, candidates, call, launch);
            measured = true;
        }
        while (!candidates.empty()) {
            const Candidate c = candidates.front();
            PLAB_CUDNN_CHECK(cudnnSetConvolutionMathType(plan.conv.get(), c.math));
            void* space = c.workspace > 0 ? workspace.reserve(c.workspace) : nullptr;
            const cudnnStatus_t status = launch(c.algo, space, c.workspace);
            if (status == CUDNN_STATUS_SUCCESS) return true;
            if (!refusesShape(status)) throwCudnnError(status, call);
            candidates.erase(candidates.begin());
            discardCudnnMessage();
        }
        return false;
    }

    // Puts a pass's fastest deterministic candidate first, by their measured times on this
    // call's own operands, as cudnn.benchmark does for PyTorch (which also admits the
    // non-deterministic ones; we keep them behind, in the heuristics' order), unless the
    // heuristics' first is within 10% of it. Each candidate
    // runs once to warm up, then kTimedRuns times between two events; the host waits once
    // per candidate, and only at the first call of a pass for a shape. Every run overwrites
    // the pass's output (beta 0), which the chosen candidate then writes again. A candidate
    // that refuses the shape is dropped, as in run(); any other failure throws.
    // PLAB_CUDNN_LOG=1 prints each plan's times to stderr.
    template <typename Launch>
    void measure(Plan& plan, std::vector<Candidate>& candidates, const char* call, Launch launch)
    {
        constexpr int kTimedRuns = 3;
        // PLAB_CUDNN_ALGORITHMS=fastest: the non-deterministic ones compete too (an experiment).
        const char* choice = std::getenv("PLAB_CUDNN_ALGORITHMS");
        const bool fastest = choice && std::string(choice) == "fastest";
        const auto firstOther = fastest ? candidates.end()
                                        : std::find_if(candidates.begin(), candidates.end(),
                                                       [](const Candidate& c) { return !c.deterministic; });
        const std::size_t count = static_cast<std::size_t>(firstOther - candidates.begin());
        if (count < 2) return;
        std::size_t most = 0;
        for (std::size_t i = 0; i < count; ++i) most = std::max(most, candidates[i].workspace);
        void* space = most > 0 ? workspace.reserve(most) : nullptr;
        Event start, stop;
        std::vector<std::pair<float, Candidate>> timed;
        std::vector<bool> refused(count, false);
        for (std::size_t i = 0; i < count; ++i) {
            const Candidate c = candidates[i];
            PLAB_CUDNN_CHECK(cudnnSetConvolutionMathType(plan.conv.get(), c.math));
            cudnnStatus_t status = launch(c.algo, space, c.workspace);
            if (status == CUDNN_STATUS_SUCCESS) {
                PLAB_CUDA_CHECK(cudaEventRecord(start.get(), stream));
                for (int r = 0; r < kTimedRuns && status == CUDNN_STATUS_SUCCESS; ++r)
                    status = launch(c.algo, space, c.workspace);
                PLAB_CUDA_CHECK(cudaEventRecord(stop.get(), stream));
            }
            if (status != CUDNN_STATUS_SUCCESS) {
                if (!refusesShape(status)) throwCudnnError(status, call);
                discardCudnnMessage();
                refused[i] = true;
                continue;
            }
            PLAB_CUDA_CHECK(cudaEventSynchronize(stop.get()));
            float ms = 0.0f;
            PLAB_CUDA_CHECK(cudaEventElapsedTime(&ms, start.get(), stop.get()));
            timed.emplace_back(ms / kTimedRuns, c);
        }
        // The fastest goes first only when it beats the heuristics' first by more than
        // kMargin: times that differ by noise must not swap algorithms (and with them the
        // order of the sums) from one run to the next. The rest keep the heuristics' order.
        constexpr float kMargin = 0.9f;
        const auto best = std::min_element(timed.begin(), timed.end(),
                                           [](const auto& a, const auto& b) { return a.first < b.first; });
        if (best != timed.end() && best != timed.begin() && best->first < kMargin * timed.front().first)
            std::rotate(timed.begin(), best, best + 1);
        if (std::getenv("PLAB_CUDNN_LOG")) {
            std::fprintf(stderr, "cuDNN %s (%s layout):", call, plan.layout == Layout::dense ? "dense" : "stored");
            for (const auto& [ms, c] : timed)
                std::fprintf(stderr, " algo %d%s math %d %.3f ms;", c.algo, c.deterministic ? "" : "(nd)",
                             static_cast<int>(c.math), ms);
            std::fprintf(stderr, " %zu refused\n", static_cast<std::size_t>(std::count(refused.begin(), refused.end(), true)));
        }
        std::vector<Candidate> ordered;
        for (const auto& t : timed) ordered.push_back(t.second);
        ordered.insert(ordered.end(), firstOther, candidates.end());
        candidates = std::move(ordered);
    }
};

bool CudnnConvolutions::builtIn() { return true; }

CudnnPasses cudnnPasses()
{
    const char* v = std::getenv("PLAB_CUDNN_PASSES");
    const std::string passes = v ? v : "";
    if (passes == "all") return CudnnPasses::all;
    if (passes == "forward") return CudnnPasses::forward;
    return CudnnPasses::none;
}

CudnnConvolutions::State& CudnnConvolutions::state()
{
    if (!state_) state_ = std::make_unique<State>(stream_, pool_);
    return *state_;
}

namespace {

// The plan of a call, made on its first use (the stored layout, else the dense one); null
// when cuDNN cannot take the shape in either.
Plan* planFor(std::map<ConvKey, std::unique_ptr<Plan>>& plans, cudnnHandle_t handle, const ConvGeometry& g,
              std::int64_t outChannels, GemmPath path, Format compute)
{
    if (!fitsCudnn(g, outChannels)) return nullptr;
    const ConvKey key{g.channels, g.batch, g.height, g.width, outChannels, g.kernel, path, compute};
    auto it = plans.find(key);
    if (it == plans.end()) {
        std::unique_ptr<Plan> plan = makePlan(handle, key, Layout::stored);
        if (!plan->usable()) plan = makePlan(handle, key, Layout::dense);
        it = plans.emplace(key, std::move(plan)).first;
    }
    return it->second->usable() ? it->second.get() : nullptr;
}

}  // namespace

bool CudnnConvolutions::forward(const ConvGeometry& g, std::int64_t outChannels, const float* x, const float* w,
                                float* y, GemmPrecision precision)
{
    checkConvGeometry(g, outChannels);
    const GemmPath path = choosePath(precision, capability_, "convolutions");
    if (g.batch == 0) return true;   // nothing to write
    if (cudnnPasses() == CudnnPasses::none) return false;   // the layer lowers all three passes
    State& s = state();
    Plan* plan = planFor(s.plans, s.handle.get(), g, outChannels, path, precision.compute);
    if (!plan) return false;
    const std::int64_t N = g.batch, hw = g.planeSize();
    const void* xIn = s.activationIn(*plan, x, g.channels, N, hw, s.denseA, s.operandA);
    const void* wIn = s.weightsIn(*plan, w, outChannels * g.patchSize(), s.operandB);
    void* yOut = s.outputFor(*plan, true, outChannels * N * hw, y);
    const float alpha = 1.0f, beta = 0.0f;   // beta 0: y is written, never read
    const bool ran = s.run(*plan, Pass::forward, plan->forward, "cudnnConvolutionForward",
                           [&](int algo, void* space, std::size_t bytes) {
        return cudnnConvolutionForward(s.handle.get(), &alpha, plan->x.get(), xIn, plan->w.get(), wIn, plan->conv.get(),
                                       static_cast<cudnnConvolutionFwdAlgo_t>(algo), space, bytes, &beta,
                                       plan->y.get(), yOut);
    });
    if (!ran) return false;   // y untouched; the layer lowers this shape from now on
    s.deliver(*plan, true, yOut, outChannels, N, hw, y);
    return true;
}

bool CudnnConvolutions::backwardData(const ConvGeometry& g, std::int64_t outChannels, const float* w, const float* dy,
                                     float* dx, GemmPrecision precision)
{
    checkConvGeometry(g, outChannels);
    const GemmPath path = choosePath(precision, capability_, "convolutions");
    if (g.batch == 0) return true;
    if (cudnnPasses() != CudnnPasses::all) return false;   // the layer lowers the backward passes
    State& s = state();
    Plan* plan = planFor(s.plans, s.handle.get(), g, outChannels, path, precision.compute);
    if (!plan) return false;
    const std::int64_t N = g.batch, hw = g.planeSize();
    const void* wIn = s.weightsIn(*plan, w, outChannels * g.patchSize(), s.operandA);
    const void* dyIn = s.activationIn(*plan, dy, outChannels, N, hw, s.denseB, s.operandB);
    void* dxOut = s.outputFor(*plan, true, g.channels * N * hw, dx);
    const float alpha = 1.0f, beta = 0.0f;
    const bool ran = s.run(*plan, Pass::backwardData, plan->backwardData, "cudnnConvolutionBackwardData",
                           [&](int algo, void* space, std::size_t bytes) {
        return cudnnConvolutionBackwardData(s.handle.get(), &alpha, plan->w.get(), wIn, plan->y.get(), dyIn,
                                            plan->conv.get(), static_cast<cudnnConvolutionBwdDataAlgo_t>(algo), space,
                                            bytes, &beta, plan->x.get(), dxOut);
    });
    if (!ran) return false;   // dx untouched; the layer lowers it from the input it kept
    s.deliver(*plan, true, dxOut, g.channels, N, hw, dx);
    return true;
}

bool CudnnConvolutions::backwardFilter(const ConvGeometry& g, std::int64_t outChannels, const float* x,
                                       const float* dy, float* dw, GemmPrecision precision)
{
    checkConvGeometry(g, outChannels);
    const GemmPath path = choosePath(precision, capability_, "convolutions");
    const std::int64_t wSize = outChannels * g.patchSize();
    if (g.batch == 0) {
        // An empty sum: dw is zero (overwritten, as with any batch).
        PLAB_CUDA_CHECK(cudaMemsetAsync(dw, 0, static_cast<std::size_t>(wSize) * sizeof(float), stream_));
        return true;
    }
    if (cudnnPasses() != CudnnPasses::all) return false;   // the layer lowers the backward passes
    State& s = state();
    Plan* plan = planFor(s.plans, s.handle.get(), g, outChannels, path, precision.compute);
    if (!plan) return false;
    const std::int64_t N = g.batch, hw = g.planeSize();
    const void* xIn = s.activationIn(*plan, x, g.channels, N, hw, s.denseA, s.operandA);
    const void* dyIn = s.activationIn(*plan, dy, outChannels, N, hw, s.denseB, s.operandB);
    void* dwOut = s.outputFor(*plan, false, wSize, dw);
    const float alpha = 1.0f, beta = 0.0f;
    const bool ran = s.run(*plan, Pass::backwardFilter, plan->backwardFilter, "cudnnConvolutionBackwardFilter",
                           [&](int algo, void* space, std::size_t bytes) {
        return cudnnConvolutionBackwardFilter(s.handle.get(), &alpha, plan->x.get(), xIn, plan->y.get(), dyIn,
                                              plan->conv.get(), static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo),
                                              space, bytes, &beta, plan->w.get(), dwOut);
    });
    if (!ran) return false;   // dw untouched; the layer lowers it from the input it kept
    s.deliver(*plan, false, dwOut, wSize, 1, 1, dw);
    return true;
}

std::size_t CudnnConvolutions::scratchBytes() const
{
    if (!state_) return 0;
    const State& s = *state_;
    return s.workspace.capacity() + s.operandA.capacity() + s.operandB.capacity() + s.result.capacity() +
           s.denseA.capacity() + s.denseB.capacity() + s.denseOut.capacity();
}

#else  // no cuDNN: the layer lowers every convolution through im2col + gemm

struct CudnnConvolutions::State {};

std::size_t CudnnConvolutions::scratchBytes() const { return 0; }

bool CudnnConvolutions::builtIn() { return false; }

CudnnPasses cudnnPasses() { return CudnnPasses::none; }

CudnnConvolutions::State& CudnnConvolutions::state()
{
    if (!state_) state_ = std::make_unique<State>();
    return *state_;
}

bool CudnnConvolutions::forward(const ConvGeometry&, std::int64_t, const float*, const float*, float*, GemmPrecision)
{
    return false;
}
bool CudnnConvolutions::backwardData(const ConvGeometry&, std::int64_t, const float*, const float*, float*,
                                     GemmPrecision)
{
    return false;
}
bool CudnnConvolutions::backwardFilter(const ConvGeometry&, std::int64_t, const float*, const float*, float*,
                                       GemmPrecision)
{
    return false;
}

#endif

CudnnConvolutions::CudnnConvolutions(cudaStream_t stream, cudaMemPool_t pool, DeviceCapability capability)
    : stream_(stream), pool_(pool), capability_(capability)
{
}

CudnnConvolutions::~CudnnConvolutions() = default;

}  // namespace plab::cuda
