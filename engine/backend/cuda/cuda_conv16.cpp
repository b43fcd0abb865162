// CudnnConvolutions16 (cuda_conv16.h): convolutions on 16-bit NHWC data through cuDNN's
// graph (backend) API, compute FLOAT, cross-correlation, padding k/2, stride and dilation
// 1. The forward pass is one convolution operation with x, w and y in HALF or BFLOAT16,
// and so is the input gradient (backward data: dy, w and dx); the filter gradient is a backward-filter convolution into a virtual FLOAT tensor that an
// identity pointwise op writes out as FLOAT (the shape in which cuDNN keeps an fp32 output
// at full speed). Per (count, C, Cout, H, W, k, type, pass) the heuristics (mode A, then
// the fallback list) rank engine configurations; the first that finalizes with at most
// kWorkspaceLimit of workspace and is acceptable (deterministic, fp32 sums: see there) is
// kept as an execution plan and run from then on. Built as bench/cudnn_probe.cpp builds
// its graphs, which ran on an H200; the forward pass ran here on an H100 (docs/CUDA.md),
// the input and filter gradients not yet.
#include "backend/cuda/cuda_conv16.h"

#include "backend/cuda/cuda_resources.h"
#include "backend/cuda/cuda_status.h"

#include <cstdlib>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

namespace plab::cuda {

#if PLAB_CUDA_HAVE_CUDNN

namespace {

constexpr std::size_t kWorkspaceLimit = std::size_t{512} << 20;

// One backend descriptor, destroyed with its owner.
class Descriptor {
public:
    explicit Descriptor(cudnnBackendDescriptorType_t type)
    {
        PLAB_CUDNN_CHECK(cudnnBackendCreateDescriptor(type, &d_));
    }
    ~Descriptor()
    {
        if (d_) (void)cudnnBackendDestroyDescriptor(d_);
    }
    Descriptor(Descriptor&& other) noexcept : d_(other.d_) { other.d_ = nullptr; }
    Descriptor(const Descriptor&) = delete;
    Descriptor& operator=(const Descriptor&) = delete;
    cudnnBackendDescriptor_t get() const { return d_; }
    const cudnnBackendDescriptor_t* address() const { return &d_; }

    template <typename T>
    void set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, const T* values,
             std::int64_t count = 1)
    {
        PLAB_CUDNN_CHECK(cudnnBackendSetAttribute(d_, name, type, count, values));
    }
    void finalize() { PLAB_CUDNN_CHECK(cudnnBackendFinalize(d_)); }

private:
    cudnnBackendDescriptor_t d_ = nullptr;
};

// A 4-d tensor of logical shape dims with strides (activations (N, C, H, W) stored NHWC,
// filters (K, C, k, k) stored (K, k, k, C)); a virtual one lives only inside the graph.
Descriptor tensor(std::int64_t id, cudnnDataType_t type, const std::int64_t (&dims)[4],
                  const std::int64_t (&strides)[4], bool isVirtual = false)
{
    Descriptor t(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    const std::int64_t alignment = 16;
    t.set(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, &type);
    t.set(CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, dims, 4);
    t.set(CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, strides, 4);
    t.set(CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, &id);
    t.set(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, &alignment);
    t.set(CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, &isVirtual);
    t.finalize();
    return t;
}

Descriptor nhwcTensor(std::int64_t id, cudnnDataType_t type, std::int64_t N, std::int64_t C, std::int64_t H,
                      std::int64_t W)
{
    return tensor(id, type, {N, C, H, W}, {H * W * C, 1, W * C, C});
}

Descriptor krscTensor(std::int64_t id, cudnnDataType_t type, std::int64_t K, std::int64_t C, std::int64_t k,
                      bool isVirtual = false)
{
    return tensor(id, type, {K, C, k, k}, {k * k * C, 1, k * C, C}, isVirtual);
}

// (count, C, Cout, H, W, k, data type, pass: 0 forward, 1 filter gradient, 2 input gradient)
using Key = std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t, int, int>;

// Each pass's operation and the attribute names of its two inputs (unique ids 1 and 2), its
// output (3), the convolution, alpha and beta, indexed by the pass.
struct ConvolutionOp {
    cudnnBackendDescriptorType_t type;
    cudnnBackendAttributeName_t first, second, out, conv, alpha, beta;
};
constexpr ConvolutionOp kConvolutionOps[3] = {
    {CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
     CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
     CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
     CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA},
    {CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X,
     CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW,
     CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA,
     CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA},
    {CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY,
     CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX,
     CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
     CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA},
};

struct Plan {
    Descriptor plan{CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR};
    std::int64_t workspace = 0;
};

// Whether an engine configuration computes what these passes promise: deterministic, with
// fp32 sums of the 16-bit products (not marked non-deterministic, reduced-precision
// reduction or down-converting inputs). An engine whose notes cannot be read is not kept.
bool acceptable(cudnnBackendDescriptor_t config)
{
    Descriptor engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
    std::int64_t count = 0;
    cudnnBackendDescriptor_t raw = engine.get();
    if (cudnnBackendGetAttribute(config, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &count,
                                 &raw) != CUDNN_STATUS_SUCCESS)
        return false;
    cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
    std::int64_t noteCount = 0;
    if (cudnnBackendGetAttribute(raw, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                                 CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &noteCount, notes) != CUDNN_STATUS_SUCCESS)
        return false;
    for (std::int64_t i = 0; i < noteCount; ++i)
        if (notes[i] == CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC ||
            notes[i] == CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION ||
            notes[i] == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS)
            return false;
    return true;
}

}  // namespace

struct CudnnConvolutions16::State {
    State(cudaStream_t stream, cudaMemPool_t pool) : workspace(stream, pool)
    {
        PLAB_CUDNN_CHECK(cudnnCreate(&handle));
        if (const cudnnStatus_t status = cudnnSetStream(handle, stream); status != CUDNN_STATUS_SUCCESS) {
            (void)cudnnDestroy(handle);
            throwCudnnError(status, "cudnnSetStream");
        }
    }
    ~State()
    {
        plans.clear();
        (void)cudnnDestroy(handle);
    }
    State(const State&) = delete;
    State& operator=(const State&) = delete;

    const Plan& planFor(const Key& key, cudnnDataType_t type);

    cudnnHandle_t handle = nullptr;
    DeviceBuffer workspace;
    std::map<Key, Plan> plans;
};

const Plan& CudnnConvolutions16::State::planFor(const Key& key, cudnnDataType_t type)
{
    if (const auto found = plans.find(key); found != plans.end()) return found->second;
    const auto [N, C, K, H, W, k, ignored, pass] = key;
    (void)ignored;
    const bool filter = pass == 1, data = pass == 2;
    // Forward: x (1), w (2) -> y (3), all 16-bit. Filter gradient: x (1), dy (2) -> dw, an
    // fp32 virtual tensor (3) that an identity op writes out as fp32 (4): the shape whose
    // fp32 output cuDNN runs at full speed (bench/cudnn_probe.cpp). Input gradient: dy (1),
    // w (2) -> dx (3), all 16-bit.
    Descriptor x = data ? nhwcTensor(1, type, N, K, H, W) : nhwcTensor(1, type, N, C, H, W);
    Descriptor second = filter ? nhwcTensor(2, type, N, K, H, W) : krscTensor(2, type, K, C, k);
    Descriptor out = filter ? krscTensor(3, CUDNN_DATA_FLOAT, K, C, k, true)
                            : nhwcTensor(3, type, N, data ? C : K, H, W);
    Descriptor conv(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
    {
        const cudnnDataType_t compute = CUDNN_DATA_FLOAT;
        const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
        const std::int64_t dims = 2, one[2] = {1, 1}, pad[2] = {k / 2, k / 2};
        conv.set(CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, &compute);
        conv.set(CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, &mode);
        conv.set(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, &dims);
        conv.set(CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, one, 2);
        conv.set(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, one, 2);
        conv.set(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, pad, 2);
        conv.set(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, pad, 2);
        conv.finalize();
    }
    const float alpha = 1.0f, beta = 0.0f;
    const auto desc = CUDNN_TYPE_BACKEND_DESCRIPTOR;
    const ConvolutionOp& names = kConvolutionOps[pass];
    Descriptor op(names.type);
    op.set(names.first, desc, x.address());
    op.set(names.second, desc, second.address());
    op.set(names.out, desc, out.address());
    op.set(names.conv, desc, conv.address());
    op.set(names.alpha, CUDNN_TYPE_FLOAT, &alpha);
    op.set(names.beta, CUDNN_TYPE_FLOAT, &beta);
    op.finalize();
    std::vector<Descriptor> identity;   // the filter gradient's copy out: the pointwise op, its output
    std::vector<cudnnBackendDescriptor_t> ops{op.get()};
    if (filter) {
        Descriptor pointwise(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
        const cudnnPointwiseMode_t copy = CUDNN_POINTWISE_IDENTITY;
        const cudnnDataType_t precision = CUDNN_DATA_FLOAT;
        pointwise.set(CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, &copy);
        pointwise.set(CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, &precision);
        pointwise.finalize();
        Descriptor written = krscTensor(4, CUDNN_DATA_FLOAT, K, C, k);
        Descriptor copyOp(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
        copyOp.set(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, desc, pointwise.address());
        copyOp.set(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, desc, out.address());
        copyOp.set(CUDNN_ATTR_OPERATION_POINTWISE_YDESC, desc, written.address());
        copyOp.finalize();
        ops.push_back(copyOp.get());
        identity.push_back(std::move(pointwise));
        identity.push_back(std::move(written));
        identity.push_back(std::move(copyOp));
    }
    Descriptor graph(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    graph.set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, &handle);
    graph.set(CUDNN_ATTR_OPERATIONGRAPH_OPS, desc, ops.data(), static_cast<std::int64_t>(ops.size()));
    graph.finalize();

    std::string refusals;
    for (cudnnBackendHeurMode_t mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
        Descriptor heuristics(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
        heuristics.set(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, desc, graph.address());
        heuristics.set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, &mode);
        if (cudnnBackendFinalize(heuristics.get()) != CUDNN_STATUS_SUCCESS) continue;
        std::int64_t offered = 0;
        (void)cudnnBackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, desc, 0, &offered, nullptr);
        if (offered <= 0) continue;
        std::vector<Descriptor> configs;
        std::vector<cudnnBackendDescriptor_t> raw;
        for (std::int64_t i = 0; i < offered; ++i) {
            configs.emplace_back(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
            raw.push_back(configs.back().get());
        }
        std::int64_t got = 0;
        if (cudnnBackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, desc, offered, &got,
                                     raw.data()) != CUDNN_STATUS_SUCCESS)
            continue;
        for (std::int64_t i = 0; i < got; ++i) {
            if (!acceptable(raw[i])) continue;
            Plan candidate;
            cudnnBackendDescriptor_t p = candidate.plan.get();
            if (cudnnBackendSetAttribute(p, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle) !=
                    CUDNN_STATUS_SUCCESS ||
                cudnnBackendSetAttribute(p, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, desc, 1, &raw[i]) !=
                    CUDNN_STATUS_SUCCESS)
                continue;
            if (const cudnnStatus_t status = cudnnBackendFinalize(p); status != CUDNN_STATUS_SUCCESS) {
                char detail[256] = {};
                cudnnGetLastErrorString(detail, sizeof detail);
                if (refusals.empty()) refusals = detail;
                continue;
            }
            std::int64_t count = 0;
            if (cudnnBackendGetAttribute(p, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &count,
                                         &candidate.workspace) != CUDNN_STATUS_SUCCESS ||
                candidate.workspace > static_cast<std::int64_t>(kWorkspaceLimit))
                continue;
            return plans.emplace(key, std::move(candidate)).first->second;
        }
    }
    throw std::runtime_error(std::string("cuDNN offers no deterministic 16-bit ") +
                             (filter ? "filter-gradient" : data ? "input-gradient" : "forward") + " convolution for " + std::to_string(N) +
                             " x " + std::to_string(C) + " x " + std::to_string(H) + " x " + std::to_string(W) +
                             " -> " + std::to_string(K) + " channels (" + std::to_string(k) + "x" +
                             std::to_string(k) + ")" + (refusals.empty() ? "" : ": " + refusals) +
                             "; unset PLAB_CUDNN_16 (and telemetry sampled) to lower the convolutions instead");
}

CudnnConvolutions16::CudnnConvolutions16(cudaStream_t stream, cudaMemPool_t pool) : stream_(stream), pool_(pool) {}
CudnnConvolutions16::~CudnnConvolutions16() = default;

CudnnConvolutions16::Passes CudnnConvolutions16::asked() { return cudnn16Passes(std::getenv(kCudnn16Variable)); }

namespace {

void run(cudnnHandle_t handle, const Plan& plan, void* workspace, std::int64_t outId, const void* a, const void* b,
         void* out)
{
    std::int64_t ids[3] = {1, 2, outId};
    void* pointers[3] = {const_cast<void*>(a), const_cast<void*>(b), out};
    Descriptor pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
    pack.set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, ids, 3);
    pack.set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, pointers, 3);
    pack.set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, &workspace);
    pack.finalize();
    PLAB_CUDNN_CHECK(cudnnBackendExecute(handle, plan.plan.get(), pack.get()));
}

cudnnDataType_t dataType(Format format)
{
    if (format != Format::fp16 && format != Format::bf16)
        throw std::logic_error("cuDNN's 16-bit convolutions take fp16 or bf16 data");
    return format == Format::fp16 ? CUDNN_DATA_HALF : CUDNN_DATA_BFLOAT16;
}

}  // namespace

void CudnnConvolutions16::execute(int pass, Format format, std::int64_t count, std::int64_t C, std::int64_t Cout,
                                  std::int64_t H, std::int64_t W, std::int64_t k, const void* a, const void* b,
                                  void* out)
{
    const cudnnDataType_t type = dataType(format);
    if (count <= 0) return;
    if (!state_) state_ = std::make_unique<State>(stream_, pool_);
    const Plan& plan = state_->planFor(Key{count, C, Cout, H, W, k, static_cast<int>(type), pass}, type);
    void* workspace = plan.workspace > 0 ? state_->workspace.reserve(static_cast<std::size_t>(plan.workspace)) : nullptr;
    // The output's unique id: y (3) forward; the identity op's fp32 copy (4) of the filter gradient.
    run(state_->handle, plan, workspace, pass == 1 ? 4 : 3, a, b, out);
}

std::size_t CudnnConvolutions16::scratchBytes() const { return state_ ? state_->workspace.capacity() : 0; }

#else   // no cuDNN

struct CudnnConvolutions16::State {};
CudnnConvolutions16::CudnnConvolutions16(cudaStream_t stream, cudaMemPool_t pool) : stream_(stream), pool_(pool) {}
CudnnConvolutions16::~CudnnConvolutions16() = default;
CudnnConvolutions16::Passes CudnnConvolutions16::asked() { return {}; }
void CudnnConvolutions16::execute(int, Format, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t,
                                  std::int64_t, const void*, const void*, void*)
{
    throw std::logic_error("cuDNN is not built into this plugin");
}
std::size_t CudnnConvolutions16::scratchBytes() const { return 0; }

#endif

void CudnnConvolutions16::forward(Format format, std::int64_t count, std::int64_t C, std::int64_t Cout,
                                  std::int64_t H, std::int64_t W, std::int64_t k, const std::uint16_t* x,
                                  const std::uint16_t* w, std::uint16_t* y)
{
    execute(0, format, count, C, Cout, H, W, k, x, w, y);
}

void CudnnConvolutions16::data(Format format, std::int64_t count, std::int64_t C, std::int64_t Cout,
                               std::int64_t H, std::int64_t W, std::int64_t k, const std::uint16_t* dy,
                               const std::uint16_t* w, std::uint16_t* dx)
{
    execute(2, format, count, C, Cout, H, W, k, dy, w, dx);
}

void CudnnConvolutions16::filter(Format format, std::int64_t count, std::int64_t C, std::int64_t Cout,
                                 std::int64_t H, std::int64_t W, std::int64_t k, const std::uint16_t* x,
                                 const std::uint16_t* dy, float* dw)
{
    execute(1, format, count, C, Cout, H, W, k, x, dy, dw);
}

}  // namespace plab::cuda
