// What cuDNN's graph API offers for the seed CNN's convolutions on 16-bit data (issue 31
// part 2), measured before the backend is written against it: for each pass (forward,
// backward data, backward filter), 16-bit type (HALF, BFLOAT16), output type (the same,
// or FLOAT: the lab rounds its convolution results itself, where its telemetry counts
// them) and layout (NHWC, NCHW, and the lab's own (C, N, H, W) through strides), whether
// cuDNN's heuristics offer engines, how many of the first few finalize, their numerical
// notes, and the fastest one's time; FLOAT outputs also as a convolution into a virtual
// FLOAT tensor followed by an identity pointwise op (the runtime fusion engines' shape).
// Beside them, the lowering's GEMM as the CUDA backend runs it today (cublasGemmEx,
// 16-bit operands, fp32 result and sums) for the same forward product.
//
// Not part of the build (it needs a GPU and only answers a question). Built by hand,
// `g++ -O2 -std=c++20 -I/usr/local/cuda/include bench/cudnn_probe.cpp -o .gpuprobe/cudnn_probe
// -L/usr/local/cuda/lib64 -lcudnn -lcublas -lcudart`, and run by bench/gpu_session.sh's `cudnnprobe` phase, carrying .gpuprobe.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

#define CHECK_CUDA(x)                                                                          \
    do {                                                                                       \
        cudaError_t e_ = (x);                                                                  \
        if (e_ != cudaSuccess) {                                                               \
            std::printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e_), __FILE__, __LINE__); \
            std::exit(1);                                                                      \
        }                                                                                      \
    } while (0)

cudnnHandle_t gHandle;
cudaStream_t gStream;

std::string lastError()
{
    char text[512] = {};
    cudnnGetLastErrorString(text, sizeof text);
    std::string s = text;
    if (s.size() > 160) s.resize(160);
    return s;
}

struct Desc {
    cudnnBackendDescriptor_t d = nullptr;
    explicit Desc(cudnnBackendDescriptorType_t type)
    {
        if (cudnnBackendCreateDescriptor(type, &d) != CUDNN_STATUS_SUCCESS) d = nullptr;
    }
    ~Desc()
    {
        if (d) cudnnBackendDestroyDescriptor(d);
    }
    Desc(const Desc&) = delete;
    Desc& operator=(const Desc&) = delete;
    Desc(Desc&& o) noexcept : d(o.d) { o.d = nullptr; }
};

bool set(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
         std::int64_t count, const void* value)
{
    return cudnnBackendSetAttribute(d, name, type, count, value) == CUDNN_STATUS_SUCCESS;
}

enum class Layout { nhwc, nchw, cnhw };
const char* layoutName(Layout l) { return l == Layout::nhwc ? "NHWC" : l == Layout::nchw ? "NCHW" : "CNHW"; }

// Logical [N, C, H, W] strides of an activation; the filter [K, C, R, S] is KRSC beside
// NHWC, KCRS otherwise.
std::vector<std::int64_t> strides(Layout l, std::int64_t N, std::int64_t C, std::int64_t H, std::int64_t W)
{
    switch (l) {
    case Layout::nhwc: return {H * W * C, 1, W * C, C};
    case Layout::nchw: return {C * H * W, H * W, W, 1};
    case Layout::cnhw: return {H * W, N * H * W, W, 1};
    }
    return {};
}

Desc tensor(std::int64_t id, cudnnDataType_t type, std::vector<std::int64_t> dims, std::vector<std::int64_t> str,
            bool isVirtual, bool& ok)
{
    Desc t(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    const std::int64_t alignment = 16;
    ok = ok && t.d && set(t.d, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type) &&
         set(t.d, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims.data()) &&
         set(t.d, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, str.data()) &&
         set(t.d, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &id) &&
         set(t.d, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment) &&
         set(t.d, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &isVirtual) &&
         cudnnBackendFinalize(t.d) == CUDNN_STATUS_SUCCESS;
    return t;
}

enum class Pass { forward, data, filter };
const char* passName(Pass p) { return p == Pass::forward ? "fprop" : p == Pass::data ? "dgrad" : "wgrad"; }

struct Shape {
    const char* name;
    std::int64_t N, C, K, H, W;
};

double elapsedMs(std::chrono::steady_clock::time_point t0)
{
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// One graph: builds it, asks the heuristics (mode A, then the fallback list), finalizes up
// to `tries` of the configurations, times each that finalizes, prints one line.
void probe(const Shape& s, Pass pass, cudnnDataType_t type, bool floatOut, bool viaIdentity, Layout layout,
           void* x, void* w, void* y, void* workspace, std::size_t workspaceBytes)
{
    const auto t0 = std::chrono::steady_clock::now();
    bool ok = true;
    const auto act = [&](std::int64_t C) { return std::vector<std::int64_t>{s.N, C, s.H, s.W}; };
    const std::vector<std::int64_t> fdims{s.K, s.C, 3, 3};
    const std::vector<std::int64_t> fstr =
        layout == Layout::nhwc ? std::vector<std::int64_t>{9 * s.C, 1, 3 * s.C, s.C}
                               : std::vector<std::int64_t>{9 * s.C, 9, 3, 1};
    // The pass's output: y (forward), dx (data), dw (filter); its type is FLOAT when asked.
    const cudnnDataType_t outType = floatOut ? CUDNN_DATA_FLOAT : type;
    const bool outIsFilter = pass == Pass::filter;
    const std::int64_t outC = pass == Pass::forward ? s.K : s.C;
    Desc tx = tensor(1, type, pass == Pass::data ? act(s.K) : act(s.C),
                     strides(layout, s.N, pass == Pass::data ? s.K : s.C, s.H, s.W), false, ok);   // x or dy
    Desc tw = tensor(2, type, pass == Pass::filter ? act(s.K) : fdims,
                     pass == Pass::filter ? strides(layout, s.N, s.K, s.H, s.W) : fstr, false, ok);   // w or dy
    const std::vector<std::int64_t> odims = outIsFilter ? fdims : act(outC);
    const std::vector<std::int64_t> ostr = outIsFilter ? fstr : strides(layout, s.N, outC, s.H, s.W);
    Desc to = tensor(3, viaIdentity ? CUDNN_DATA_FLOAT : outType, odims, ostr, viaIdentity, ok);
    Desc tfinal = viaIdentity ? tensor(4, CUDNN_DATA_FLOAT, odims, ostr, false, ok) : Desc(CUDNN_BACKEND_TENSOR_DESCRIPTOR);

    Desc conv(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
    const cudnnDataType_t compute = CUDNN_DATA_FLOAT;
    const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
    const std::int64_t dims = 2, one[2] = {1, 1}, pad[2] = {1, 1};
    ok = ok && set(conv.d, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute) &&
         set(conv.d, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode) &&
         set(conv.d, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &dims) &&
         set(conv.d, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, one) &&
         set(conv.d, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, one) &&
         set(conv.d, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pad) &&
         set(conv.d, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, pad) &&
         cudnnBackendFinalize(conv.d) == CUDNN_STATUS_SUCCESS;

    const float alpha = 1.0f, beta = 0.0f;
    Desc op(pass == Pass::forward ? CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR
            : pass == Pass::data  ? CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR
                                  : CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR);
    const auto desc = CUDNN_TYPE_BACKEND_DESCRIPTOR;
    if (ok) {
        switch (pass) {
        case Pass::forward:
            ok = set(op.d, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, desc, 1, &tx.d) &&
                 set(op.d, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, desc, 1, &tw.d) &&
                 set(op.d, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, desc, 1, &to.d) &&
                 set(op.d, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, desc, 1, &conv.d) &&
                 set(op.d, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha) &&
                 set(op.d, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1, &beta);
            break;
        case Pass::data:   // tx holds dy, tw the filter, to dx
            ok = set(op.d, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY, desc, 1, &tx.d) &&
                 set(op.d, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W, desc, 1, &tw.d) &&
                 set(op.d, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX, desc, 1, &to.d) &&
                 set(op.d, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC, desc, 1, &conv.d) &&
                 set(op.d, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha) &&
                 set(op.d, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA, CUDNN_TYPE_FLOAT, 1, &beta);
            break;
        case Pass::filter:   // tx holds x, tw dy, to dw
            ok = set(op.d, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X, desc, 1, &tx.d) &&
                 set(op.d, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY, desc, 1, &tw.d) &&
                 set(op.d, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW, desc, 1, &to.d) &&
                 set(op.d, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC, desc, 1, &conv.d) &&
                 set(op.d, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha) &&
                 set(op.d, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA, CUDNN_TYPE_FLOAT, 1, &beta);
            break;
        }
        ok = ok && cudnnBackendFinalize(op.d) == CUDNN_STATUS_SUCCESS;
    }
    Desc pw(CUDNN_BACKEND_POINTWISE_DESCRIPTOR), pwOp(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
    if (ok && viaIdentity) {
        const cudnnPointwiseMode_t identity = CUDNN_POINTWISE_IDENTITY;
        ok = set(pw.d, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &identity) &&
             set(pw.d, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &compute) &&
             cudnnBackendFinalize(pw.d) == CUDNN_STATUS_SUCCESS &&
             set(pwOp.d, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, desc, 1, &pw.d) &&
             set(pwOp.d, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, desc, 1, &to.d) &&
             set(pwOp.d, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, desc, 1, &tfinal.d) &&
             cudnnBackendFinalize(pwOp.d) == CUDNN_STATUS_SUCCESS;
    }
    const char* typeName = type == CUDNN_DATA_HALF ? "HALF" : "BF16";
    char head[160];
    std::snprintf(head, sizeof head, "%-5s %s %-4s -> %-5s%s %s", s.name, passName(pass), typeName,
                  floatOut ? "FLOAT" : typeName, viaIdentity ? " via identity" : "", layoutName(layout));
    if (!ok) {
        std::printf("%s: graph not built (%s)\n", head, lastError().c_str());
        std::fflush(stdout);
        return;
    }
    Desc graph(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    cudnnBackendDescriptor_t ops[2] = {op.d, pwOp.d};
    ok = set(graph.d, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &gHandle) &&
         set(graph.d, CUDNN_ATTR_OPERATIONGRAPH_OPS, desc, viaIdentity ? 2 : 1, ops) &&
         cudnnBackendFinalize(graph.d) == CUDNN_STATUS_SUCCESS;
    if (!ok) {
        std::printf("%s: graph refused (%s)\n", head, lastError().c_str());
        std::fflush(stdout);
        return;
    }

    int offered = 0, finalized = 0, tried = 0;
    double best = -1;
    std::string bestNotes, bestMode;
    std::int64_t bestEngine = -1, bestWorkspace = 0;
    for (cudnnBackendHeurMode_t hm : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
        Desc heur(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
        if (!(set(heur.d, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, desc, 1, &graph.d) &&
              set(heur.d, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &hm) &&
              cudnnBackendFinalize(heur.d) == CUDNN_STATUS_SUCCESS))
            continue;
        std::int64_t count = 0;
        cudnnBackendGetAttribute(heur.d, CUDNN_ATTR_ENGINEHEUR_RESULTS, desc, 0, &count, nullptr);
        if (count <= 0) continue;
        const std::int64_t take = std::min<std::int64_t>(count, 4);
        std::vector<Desc> cfgs;
        std::vector<cudnnBackendDescriptor_t> raw;
        for (std::int64_t i = 0; i < take; ++i) {
            cfgs.emplace_back(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
            raw.push_back(cfgs.back().d);
        }
        std::int64_t got = 0;
        if (cudnnBackendGetAttribute(heur.d, CUDNN_ATTR_ENGINEHEUR_RESULTS, desc, take, &got, raw.data()) !=
            CUDNN_STATUS_SUCCESS)
            continue;
        offered += static_cast<int>(count);
        for (std::int64_t i = 0; i < got; ++i) {
            ++tried;
            Desc plan(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
            if (!(set(plan.d, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &gHandle) &&
                  set(plan.d, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, desc, 1, &raw[i]) &&
                  cudnnBackendFinalize(plan.d) == CUDNN_STATUS_SUCCESS))
                continue;
            std::int64_t ws = 0, wsCount = 0;
            cudnnBackendGetAttribute(plan.d, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &wsCount,
                                     &ws);
            if (ws > static_cast<std::int64_t>(workspaceBytes)) continue;
            ++finalized;
            // The engine's index and notes.
            Desc engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
            std::int64_t engineCount = 0, index = -1, noteCount = 0;
            cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
            std::string noteText;
            if (cudnnBackendGetAttribute(raw[i], CUDNN_ATTR_ENGINECFG_ENGINE, desc, 1, &engineCount, &engine.d) ==
                CUDNN_STATUS_SUCCESS) {
                std::int64_t c = 0;
                cudnnBackendGetAttribute(engine.d, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &c, &index);
                cudnnBackendGetAttribute(engine.d, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                                         CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &noteCount, notes);
                static const char* kNotes[] = {"tensor-core", "down-convert", "reduced-precision-sum", "FFT",
                                               "nondeterministic", "winograd", "wino4", "wino6", "wino13",
                                               "strict-nan"};
                for (std::int64_t n = 0; n < noteCount; ++n)
                    if (notes[n] >= 0 && notes[n] < CUDNN_NUMERICAL_NOTE_TYPE_COUNT)
                        noteText += std::string(noteText.empty() ? "" : ",") + kNotes[notes[n]];
            }
            std::int64_t ids[3] = {1, 2, viaIdentity ? 4 : 3};
            void* ptrs[3] = {x, w, y};
            Desc pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
            if (!(set(pack.d, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, ids) &&
                  set(pack.d, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, ptrs) &&
                  set(pack.d, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace) &&
                  cudnnBackendFinalize(pack.d) == CUDNN_STATUS_SUCCESS))
                continue;
            if (cudnnBackendExecute(gHandle, plan.d, pack.d) != CUDNN_STATUS_SUCCESS) {
                std::printf("%s: engine %ld execute failed (%s)\n", head, static_cast<long>(index),
                            lastError().c_str());
                continue;
            }
            CHECK_CUDA(cudaStreamSynchronize(gStream));
            cudaEvent_t a, b;
            CHECK_CUDA(cudaEventCreate(&a));
            CHECK_CUDA(cudaEventCreate(&b));
            const int reps = 5;
            CHECK_CUDA(cudaEventRecord(a, gStream));
            for (int r = 0; r < reps; ++r) cudnnBackendExecute(gHandle, plan.d, pack.d);
            CHECK_CUDA(cudaEventRecord(b, gStream));
            CHECK_CUDA(cudaEventSynchronize(b));
            float ms = 0;
            CHECK_CUDA(cudaEventElapsedTime(&ms, a, b));
            cudaEventDestroy(a);
            cudaEventDestroy(b);
            const double each = ms / reps;
            std::printf("%s:   engine %ld (%s) %s %.3f ms, workspace %ld MiB\n", head, static_cast<long>(index),
                        noteText.c_str(), hm == CUDNN_HEUR_MODE_A ? "A" : "fallback", each,
                        static_cast<long>(ws >> 20));
            if (best < 0 || each < best) {
                best = each;
                bestNotes = noteText;
                bestEngine = index;
                bestWorkspace = ws;
                bestMode = hm == CUDNN_HEUR_MODE_A ? "A" : "fallback";
            }
        }
        if (finalized > 0) break;   // the fallback list only when mode A gave nothing that runs
    }
    if (best < 0)
        std::printf("%s: NOTHING RUNS (%d offered, %d tried, %d finalized; %s) [%.0f ms]\n", head, offered, tried,
                    finalized, lastError().c_str(), elapsedMs(t0));
    else
        std::printf("%s: BEST %.3f ms engine %ld (%s, heuristics %s, workspace %ld MiB) of %d finalized [%.0f ms]\n",
                    head, best, static_cast<long>(bestEngine), bestNotes.c_str(), bestMode.c_str(),
                    static_cast<long>(bestWorkspace >> 20), finalized, elapsedMs(t0));
    std::fflush(stdout);
}

// The lowering's forward GEMM as cuda_gemm.cpp's gemm16 runs it: C (Cout, N*H*W) fp32 =
// W (Cout, C*9) 16-bit times the lowered columns (C*9, N*H*W) 16-bit, fp32 sums.
void loweringGemm(const Shape& s, cudaDataType_t type, void* a, void* b, void* c, cublasHandle_t blas)
{
    const int M = static_cast<int>(s.K), N = static_cast<int>(s.N * s.H * s.W), K = static_cast<int>(s.C * 9);
    const float alpha = 1, beta = 0;
    // Row-major C (M, N) = A (M, K) B (K, N) is column-major C^T = B^T A^T.
    const auto run = [&] {
        return cublasGemmEx(blas, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &alpha, b, type, N, a, type, K, &beta, c,
                            CUDA_R_32F, N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    };
    if (run() != CUBLAS_STATUS_SUCCESS) {
        std::printf("%s lowering GEMM failed\n", s.name);
        return;
    }
    cudaEvent_t e0, e1;
    CHECK_CUDA(cudaEventCreate(&e0));
    CHECK_CUDA(cudaEventCreate(&e1));
    CHECK_CUDA(cudaEventRecord(e0, gStream));
    for (int r = 0; r < 5; ++r) run();
    CHECK_CUDA(cudaEventRecord(e1, gStream));
    CHECK_CUDA(cudaEventSynchronize(e1));
    float ms = 0;
    CHECK_CUDA(cudaEventElapsedTime(&ms, e0, e1));
    std::printf("%-5s lowering GEMM %s -> FLOAT (%d x %d x %d, cublasGemmEx, 32F sums): %.3f ms (the im2col "
                "before it not counted)\n",
                s.name, type == CUDA_R_16F ? "HALF" : "BF16", M, N, K, ms / 5);
    std::fflush(stdout);
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
}

}  // namespace

int main(int argc, char** argv)
{
    const std::int64_t batch = argc > 1 ? std::atoll(argv[1]) : 1000;
    std::printf("cuDNN %zu (built with %d), batch %ld\n", cudnnGetVersion(), CUDNN_VERSION, static_cast<long>(batch));
    CHECK_CUDA(cudaStreamCreate(&gStream));
    if (cudnnCreate(&gHandle) != CUDNN_STATUS_SUCCESS) {
        std::printf("cudnnCreate failed\n");
        return 1;
    }
    cudnnSetStream(gHandle, gStream);
    cublasHandle_t blas;
    cublasCreate(&blas);
    cublasSetStream(blas, gStream);

    const Shape shapes[] = {{"conv2", batch, 420, 1000, 14, 14}, {"conv1", batch, 1, 420, 28, 28}};
    std::size_t most = 0;
    for (const Shape& s : shapes) {
        most = std::max<std::size_t>(most, s.N * std::max(s.C, s.K) * s.H * s.W * 4);
        most = std::max<std::size_t>(most, s.C * 9 * s.N * s.H * s.W * 2);   // lowered columns
    }
    const std::size_t workspaceBytes = std::size_t{1} << 30;
    void *x, *w, *y, *ws;
    CHECK_CUDA(cudaMalloc(&x, most));
    CHECK_CUDA(cudaMalloc(&w, most));
    CHECK_CUDA(cudaMalloc(&y, most));
    CHECK_CUDA(cudaMalloc(&ws, workspaceBytes));
    CHECK_CUDA(cudaMemset(x, 0, most));   // zeros: finite in every type, the time is the same
    CHECK_CUDA(cudaMemset(w, 0, most));

    for (const Shape& s : shapes) {
        loweringGemm(s, CUDA_R_16F, w, x, y, blas);
        loweringGemm(s, CUDA_R_16BF, w, x, y, blas);
        for (Pass pass : {Pass::forward, Pass::data, Pass::filter}) {
            if (s.C == 1 && pass == Pass::data) continue;   // conv1's input gradient is never needed
            for (Layout layout : {Layout::nhwc, Layout::cnhw, Layout::nchw}) {
                for (cudnnDataType_t type : {CUDNN_DATA_HALF, CUDNN_DATA_BFLOAT16}) {
                    if (type == CUDNN_DATA_BFLOAT16 && layout != Layout::nhwc) continue;
                    probe(s, pass, type, false, false, layout, x, w, y, ws, workspaceBytes);
                    probe(s, pass, type, true, false, layout, x, w, y, ws, workspaceBytes);
                    probe(s, pass, type, true, true, layout, x, w, y, ws, workspaceBytes);
                }
            }
        }
    }
    std::printf("done\n");
    return 0;
}
