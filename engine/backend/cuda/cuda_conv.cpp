// CudnnConvolutions (cuda_conv.h): the three convolution passes through cuDNN's legacy API.
//
// Layout. Activations are (C, N, H, W), channel-major over the batch; cuDNN gets them as
// they are, through strided 4-d descriptors of logical shape (N, C, H, W):
//   n stride H*W, c stride N*H*W, h stride W, w stride 1
// (the same for y / dy with Cout channels). Weights are dense (Cout, C, k, k): a KCRS
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
//   - run in a math type the path allows (strict fp32: FMA only, or default math on a
//     device without TF32; fp16 sums: FMA only; never TENSOR_OP_MATH_ALLOW_CONVERSION,
//     which rounds fp32 to fp16),
//   - report CUDNN_STATUS_SUCCESS for the shape,
//   - need at most kWorkspaceLimit of workspace.
// cuDNN's statuses count by their kind (cudnnStatusKind, cuda_status.h). Only a
// shape-class "not supported" (the shape, layout, data type, padding or this algorithm's
// launch) drops an algorithm, or the pass when the heuristics refuse it whole. An
// environment status (driver, CUDA runtime, architecture, a missing prerequisite or
// sub-library) is an error naming the call and the status whenever it costs a pass its
// last acceptable algorithm: lowering would hide a broken installation. Every other
// failure is an error at once.
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
#include <map>
#include <stdexcept>
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

// Whether an algorithm of math type m computes what `path` means.
bool mathAllowed(GemmPath path, cudnnMathType_t m, DeviceCapability cap)
{
    if (m == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION) return false;   // would round fp32 operands to fp16
    switch (path) {
    case GemmPath::fp32Strict: return m == CUDNN_FMA_MATH || (m == CUDNN_DEFAULT_MATH && !cap.tf32());
    case GemmPath::fp16Accumulate: return m == CUDNN_FMA_MATH;   // tensor cores round per block, not per addition
    case GemmPath::tf32:
    case GemmPath::bits16Fp32Accumulate: return true;
    }
    return false;
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
};

struct Plan {
    Arithmetic arithmetic{};
    Descriptor<TensorTraits> x, y;            // (C, N, H, W) and (Cout, N, H, W) as (N, C, H, W) with strides
    Descriptor<FilterTraits> w;               // (Cout, C, k, k)
    Descriptor<ConvolutionTraits> conv;       // math type set per run
    std::vector<Candidate> forward, backwardData, backwardFilter;   // best first
    bool usable() const { return !forward.empty() && !backwardData.empty() && !backwardFilter.empty(); }
};

// The kept algorithms of one pass (see the top of the file), from the heuristics' list
// `list(requested, &returned, perf)`; workspaceOf(algo, &bytes) asks the size for the math
// type set on the descriptor.
template <typename Perf, typename List, typename WorkspaceOf>
std::vector<Candidate> keptAlgorithms(Pass pass, GemmPath path, DeviceCapability cap, const Plan& plan, int maxCount,
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
        if (!sumsProducts(pass, algo) || !mathAllowed(path, p.mathType, cap)) continue;
        if (p.status != CUDNN_STATUS_SUCCESS) {
            if (cudnnStatusKind(p.status) == CudnnStatusKind::environment && environment == CUDNN_STATUS_SUCCESS)
                environment = p.status;
            continue;
        }
        PLAB_CUDNN_CHECK(cudnnSetConvolutionMathType(plan.conv.get(), p.mathType));
        std::size_t bytes = 0;
        if (const cudnnStatus_t sized = workspaceOf(algo, &bytes); sized != CUDNN_STATUS_SUCCESS) {
            if (!refusesShape(sized)) throwCudnnError(sized, workspaceCall);
            discardCudnnMessage();
            continue;
        }
        if (bytes > kWorkspaceLimit) continue;
        (p.determinism == CUDNN_DETERMINISTIC ? deterministic : other).push_back({algo, p.mathType, bytes});
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

std::unique_ptr<Plan> makePlan(cudnnHandle_t handle, const ConvKey& key, DeviceCapability cap)
{
    auto plan = std::make_unique<Plan>();
    plan->arithmetic = arithmeticOf(key.path);
    const cudnnDataType_t type = plan->arithmetic.data;
    const int N = asInt(key.batch), C = asInt(key.channels), H = asInt(key.height), W = asInt(key.width);
    const int K = asInt(key.outChannels), k = key.kernel, pad = key.kernel / 2;
    // (C, N, H, W) storage seen as (N, C, H, W): n stride H*W, c stride N*H*W.
    PLAB_CUDNN_CHECK(cudnnSetTensor4dDescriptorEx(plan->x.get(), type, N, C, H, W, H * W, N * H * W, W, 1));
    PLAB_CUDNN_CHECK(cudnnSetTensor4dDescriptorEx(plan->y.get(), type, N, K, H, W, H * W, N * H * W, W, 1));
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
        Pass::forward, key.path, cap, p, count, "cudnnGetConvolutionForwardAlgorithm_v7",
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
        Pass::backwardData, key.path, cap, p, count, "cudnnGetConvolutionBackwardDataAlgorithm_v7",
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
        Pass::backwardFilter, key.path, cap, p, count, "cudnnGetConvolutionBackwardFilterAlgorithm_v7",
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
          result(stream, pool)
    {
    }

    cudaStream_t stream;
    CudnnHandle handle;
    DeviceBuffer workspace;            // the running algorithm's
    DeviceBuffer operandA, operandB;   // 16-bit copies of the two inputs of a pass
    DeviceBuffer result;               // the 16-bit output of a pass
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
    bool run(Plan& plan, std::vector<Candidate>& candidates, const char* call, Launch launch)
    {
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
};

bool CudnnConvolutions::builtIn() { return true; }

CudnnConvolutions::State& CudnnConvolutions::state()
{
    if (!state_) state_ = std::make_unique<State>(stream_, pool_);
    return *state_;
}

namespace {

// The plan of a call, made on its first use; null when cuDNN cannot take the shape.
Plan* planFor(std::map<ConvKey, std::unique_ptr<Plan>>& plans, cudnnHandle_t handle, const ConvGeometry& g,
              std::int64_t outChannels, GemmPath path, Format compute, DeviceCapability cap)
{
    if (!fitsCudnn(g, outChannels)) return nullptr;
    const ConvKey key{g.channels, g.batch, g.height, g.width, outChannels, g.kernel, path, compute};
    auto it = plans.find(key);
    if (it == plans.end()) it = plans.emplace(key, makePlan(handle, key, cap)).first;
    return it->second->usable() ? it->second.get() : nullptr;
}

}  // namespace

bool CudnnConvolutions::forward(const ConvGeometry& g, std::int64_t outChannels, const float* x, const float* w,
                                float* y, GemmPrecision precision)
{
    checkConvGeometry(g, outChannels);
    const GemmPath path = choosePath(precision, capability_, "convolutions");
    if (g.batch == 0) return true;   // nothing to write
    State& s = state();
    Plan* plan = planFor(s.plans, s.handle.get(), g, outChannels, path, precision.compute, capability_);
    if (!plan) return false;
    const std::int64_t xSize = g.channels * g.batch * g.planeSize(), ySize = outChannels * g.batch * g.planeSize();
    const std::int64_t wSize = outChannels * g.patchSize();
    const int f16 = plan->arithmetic.format16;
    const void* xIn = x;
    const void* wIn = w;
    void* yOut = y;
    if (f16 >= 0) {
        xIn = s.narrowed(f16, x, xSize, s.operandA);
        wIn = s.narrowed(f16, w, wSize, s.operandB);
        yOut = s.result.reserveFor<std::uint16_t>(static_cast<std::size_t>(ySize));
    }
    const float alpha = 1.0f, beta = 0.0f;   // beta 0: y is written, never read
    const bool ran = s.run(*plan, plan->forward, "cudnnConvolutionForward",
                           [&](int algo, void* space, std::size_t bytes) {
        return cudnnConvolutionForward(s.handle.get(), &alpha, plan->x.get(), xIn, plan->w.get(), wIn, plan->conv.get(),
                                       static_cast<cudnnConvolutionFwdAlgo_t>(algo), space, bytes, &beta,
                                       plan->y.get(), yOut);
    });
    if (!ran) return false;   // y untouched; the layer lowers this shape from now on
    if (f16 >= 0) s.widen(f16, static_cast<const std::uint16_t*>(yOut), ySize, y);
    return true;
}

bool CudnnConvolutions::backwardData(const ConvGeometry& g, std::int64_t outChannels, const float* w, const float* dy,
                                     float* dx, GemmPrecision precision)
{
    checkConvGeometry(g, outChannels);
    const GemmPath path = choosePath(precision, capability_, "convolutions");
    if (g.batch == 0) return true;
    State& s = state();
    Plan* plan = planFor(s.plans, s.handle.get(), g, outChannels, path, precision.compute, capability_);
    if (!plan) return false;
    const std::int64_t xSize = g.channels * g.batch * g.planeSize(), ySize = outChannels * g.batch * g.planeSize();
    const std::int64_t wSize = outChannels * g.patchSize();
    const int f16 = plan->arithmetic.format16;
    const void* wIn = w;
    const void* dyIn = dy;
    void* dxOut = dx;
    if (f16 >= 0) {
        wIn = s.narrowed(f16, w, wSize, s.operandA);
        dyIn = s.narrowed(f16, dy, ySize, s.operandB);
        dxOut = s.result.reserveFor<std::uint16_t>(static_cast<std::size_t>(xSize));
    }
    const float alpha = 1.0f, beta = 0.0f;
    const bool ran = s.run(*plan, plan->backwardData, "cudnnConvolutionBackwardData",
                           [&](int algo, void* space, std::size_t bytes) {
        return cudnnConvolutionBackwardData(s.handle.get(), &alpha, plan->w.get(), wIn, plan->y.get(), dyIn,
                                            plan->conv.get(), static_cast<cudnnConvolutionBwdDataAlgo_t>(algo), space,
                                            bytes, &beta, plan->x.get(), dxOut);
    });
    if (!ran) return false;   // dx untouched; the layer lowers it from the input it kept
    if (f16 >= 0) s.widen(f16, static_cast<const std::uint16_t*>(dxOut), xSize, dx);
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
    State& s = state();
    Plan* plan = planFor(s.plans, s.handle.get(), g, outChannels, path, precision.compute, capability_);
    if (!plan) return false;
    const std::int64_t xSize = g.channels * g.batch * g.planeSize(), ySize = outChannels * g.batch * g.planeSize();
    const int f16 = plan->arithmetic.format16;
    const void* xIn = x;
    const void* dyIn = dy;
    void* dwOut = dw;
    if (f16 >= 0) {
        xIn = s.narrowed(f16, x, xSize, s.operandA);
        dyIn = s.narrowed(f16, dy, ySize, s.operandB);
        dwOut = s.result.reserveFor<std::uint16_t>(static_cast<std::size_t>(wSize));
    }
    const float alpha = 1.0f, beta = 0.0f;
    const bool ran = s.run(*plan, plan->backwardFilter, "cudnnConvolutionBackwardFilter",
                           [&](int algo, void* space, std::size_t bytes) {
        return cudnnConvolutionBackwardFilter(s.handle.get(), &alpha, plan->x.get(), xIn, plan->y.get(), dyIn,
                                              plan->conv.get(), static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo),
                                              space, bytes, &beta, plan->w.get(), dwOut);
    });
    if (!ran) return false;   // dw untouched; the layer lowers it from the input it kept
    if (f16 >= 0) s.widen(f16, static_cast<const std::uint16_t*>(dwOut), wSize, dw);
    return true;
}

#else  // no cuDNN: the layer lowers every convolution through im2col + gemm

struct CudnnConvolutions::State {};

bool CudnnConvolutions::builtIn() { return false; }

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
