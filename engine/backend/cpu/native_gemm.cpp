// NativeGemm (native_gemm.h): oneDNN matmul primitives on packed 16-bit operands, one
// primitive per block shape, created once and cached; each block runs single-threaded on
// a thread of our pool with a scratchpad of its own.
#include "backend/cpu/native_gemm.h"

#include "numerics/simd_level.h"

#include "backend/cpu/gemm_emulated.h"
#include "numerics/format.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <dlfcn.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

namespace plab::cpu {

namespace {

using dnnl::memory;

memory::data_type dataType(Format f) { return f == Format::fp16 ? memory::data_type::f16 : memory::data_type::bf16; }

std::string onednnVersion()
{
    const dnnl_version_t* v = dnnl_version();
    return "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
}

std::string isaName(dnnl::cpu_isa isa)
{
    using I = dnnl::cpu_isa;
    switch (isa) {
    case I::avx512_core_amx: return "avx512_core_amx";
    case I::avx512_core_bf16: return "avx512_core_bf16";
    case I::avx512_core_vnni: return "avx512_core_vnni";
    case I::avx512_core: return "avx512_core";
    case I::avx2_vnni: return "avx2_vnni";
    case I::avx2: return "avx2";
    default: return "other";
    }
}

// A small matmul of f's type: its implementation's name ("brg:avx512_core_bf16"), or
// empty when oneDNN has none for this CPU.
std::string probe(Format f)
{
    try {
        dnnl::engine engine(dnnl::engine::kind::cpu, 0);
        const memory::dims a{64, 64}, b{64, 64};
        const memory::desc src(a, dataType(f), memory::format_tag::ab);
        const memory::desc wei(b, dataType(f), memory::format_tag::ab);
        const memory::desc dst(a, memory::data_type::f32, memory::format_tag::ab);
        const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, wei, dst), engine);
        return pd.impl_info_str();
    } catch (const dnnl::error&) {
        return {};
    }
}

// "AVX-512 BF16", "AMX-BF16": what the ISA names in words.
std::string unitName(Format f, const std::string& isa)
{
    const bool amx = isa.find("amx") != std::string::npos;
    if (f == Format::bf16) return amx ? "AMX-BF16" : "AVX-512 BF16";
    return amx ? "AMX-FP16" : "AVX-512 FP16";
}

void describe(Format f, const std::string& isa, bool& native, std::string& text)
{
    const std::string name(formatName(f));
    const std::string impl = probe(f);
    // oneDNN's reference implementations are scalar C++ loops: slower than our own exact
    // emulation, so they do not count as native.
    native = !impl.empty() && impl.rfind("ref", 0) != 0;
    if (native)
        text = unitName(f, isa) + " via " + onednnVersion() + " (" + impl + ")";
    else if (impl.empty())
        text = "this CPU has no native " + name + " matrix multiplication that " + onednnVersion() + " can use";
    else
        text = onednnVersion() + " has only its reference " + name + " code on this CPU (" + impl + ")";
}

// op(X) of rows x cols stored with leading dimension ld, as dense 16-bit values in the
// same orientation (transposed operands stay transposed: the strides say so).
void pack(Format f, Transpose t, std::int64_t rows, std::int64_t cols, const float* X, std::int64_t ld,
          std::vector<std::uint16_t>& out, ThreadPool& pool)
{
    const std::int64_t outer = t == Transpose::no ? rows : cols, inner = t == Transpose::no ? cols : rows;
    out.resize(static_cast<std::size_t>(outer * inner));
    pool.parallelFor(outer, std::max<std::int64_t>(1, 4096 / std::max<std::int64_t>(1, inner)),
                     [&](std::int64_t r0, std::int64_t r1) {
        for (std::int64_t r = r0; r < r1; ++r) {
            const float* src = X + r * ld;
            std::uint16_t* dst = out.data() + r * inner;
            if (f == Format::fp16) {
                for (std::int64_t c = 0; c < inner; ++c) dst[c] = fp32ToFp16Bits(src[c]);
                continue;
            }
            for (std::int64_t c = 0; c < inner; ++c) {
                std::uint32_t u;
                std::memcpy(&u, src + c, sizeof u);
                // A bf16 value is an fp32 whose low half is zero: its high half, exactly.
                dst[c] = (u & 0xffffu) == 0 ? static_cast<std::uint16_t>(u >> 16) : fp32ToBf16Bits(src[c]);
            }
        }
    });
}

// oneDNN (Debian's build) runs on OpenMP: one thread per call, since our pool is the
// parallelism. omp_set_num_threads is looked up in the OpenMP runtime oneDNN loaded, so
// that nothing here depends on the compiler's own OpenMP.
void oneThreadPerCall()
{
    using SetThreads = void (*)(int);
    static const auto setThreads = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
    if (setThreads) setThreads(1);
}

}  // namespace

const NativeSupport& nativeSupport()
{
    static const NativeSupport support = [] {
        NativeSupport s;
        // PLAB_SIMD_MAX (numerics/simd_level.h) caps oneDNN too, so that a capped run is the
        // run of a CPU without the higher units. oneDNN takes the cap once, before its first
        // primitive; this is the first use.
        if (simdLevel() < SimdLevel::avx512) {
            try {
                dnnl::set_max_cpu_isa(simdLevel() == SimdLevel::avx2 ? dnnl::cpu_isa::avx2 : dnnl::cpu_isa::sse41);
            } catch (const dnnl::error&) {
                // Already fixed by an earlier use (ONEDNN_MAX_CPU_ISA, or a primitive made first).
            }
        }
        s.isa = isaName(dnnl::get_effective_cpu_isa());
        describe(Format::bf16, s.isa, s.bf16, s.bf16Text);
        describe(Format::fp16, s.isa, s.fp16, s.fp16Text);
        return s;
    }();
    return support;
}

bool nativelySupported(Format f)
{
    if (f == Format::bf16) return nativeSupport().bf16;
    if (f == Format::fp16) return nativeSupport().fp16;
    return false;
}

const std::string& nativeSupportText(Format f)
{
    static const std::string none = "only bf16 and fp16 have native units";
    if (f == Format::bf16) return nativeSupport().bf16Text;
    if (f == Format::fp16) return nativeSupport().fp16Text;
    return none;
}

struct NativeGemm::Impl {
    explicit Impl(ThreadPool& p) : pool(p), engine(dnnl::engine::kind::cpu, 0) {}

    // One block's primitive: (format, transA, transB, m, n, K, lda, ldb, ldc, beta).
    using Key = std::tuple<int, int, int, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t,
                           std::int64_t, float>;
    struct Plan {
        dnnl::matmul::primitive_desc pd;
        dnnl::matmul matmul;
        std::size_t scratchpadBytes = 0;
    };

    const Plan& plan(Format f, Transpose ta, Transpose tb, std::int64_t m, std::int64_t n, std::int64_t K,
                     std::int64_t lda, std::int64_t ldb, std::int64_t ldc, float beta)
    {
        const Key key{static_cast<int>(f), static_cast<int>(ta), static_cast<int>(tb), m, n, K, lda, ldb, ldc, beta};
        if (auto it = plans.find(key); it != plans.end()) return it->second;
        const memory::desc src({m, K}, dataType(f), ta == Transpose::no ? memory::dims{lda, 1} : memory::dims{1, lda});
        const memory::desc wei({K, n}, dataType(f), tb == Transpose::no ? memory::dims{ldb, 1} : memory::dims{1, ldb});
        const memory::desc dst({m, n}, memory::data_type::f32, memory::dims{ldc, 1});
        dnnl::primitive_attr attr;
        attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
        if (beta != 0.0f) {
            dnnl::post_ops ops;
            ops.append_sum(beta);
            attr.set_post_ops(ops);
        }
        dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, wei, dst), attr, engine);
        Plan p{pd, dnnl::matmul(pd), pd.scratchpad_desc().get_size()};
        return plans.emplace(key, std::move(p)).first->second;
    }

    ThreadPool& pool;
    dnnl::engine engine;
    std::map<Key, Plan> plans;
    std::vector<std::uint16_t> packedA, packedB;
    std::vector<std::vector<std::uint8_t>> scratchpads;   // one per block
};

NativeGemm::NativeGemm(ThreadPool& pool) : impl_(std::make_unique<Impl>(pool)) {}

NativeGemm::~NativeGemm() = default;

bool NativeGemm::run(Format f, Transpose transA, Transpose transB, std::int64_t M, std::int64_t N, std::int64_t K,
                     const float* A, std::int64_t lda, const float* B, std::int64_t ldb, float beta, float* C,
                     std::int64_t ldc)
{
    if (!nativelySupported(f)) throw std::logic_error("NativeGemm::run: " + nativeSupportText(f));
    Impl& s = *impl_;
    if (K == 0) return false;   // an empty sum: the exact arithmetic's C = beta * C, nothing to multiply
    // Dense packed operands in their stored orientation: op(A) (M, K), op(B) (K, N).
    pack(f, transA, M, K, A, lda, s.packedA, s.pool);
    pack(f, transB, K, N, B, ldb, s.packedB, s.pool);
    const std::int64_t aLd = transA == Transpose::no ? K : M, bLd = transB == Transpose::no ? N : K;
    return run16(f, transA, transB, M, N, K, s.packedA.data(), aLd, s.packedB.data(), bLd, beta, C, ldc);
}

bool NativeGemm::run16(Format f, Transpose transA, Transpose transB, std::int64_t M, std::int64_t N, std::int64_t K,
                       const std::uint16_t* A, std::int64_t aLd, const std::uint16_t* B, std::int64_t bLd, float beta,
                       float* C, std::int64_t ldc)
{
    if (!nativelySupported(f)) throw std::logic_error("NativeGemm::run16: " + nativeSupportText(f));
    Impl& s = *impl_;
    if (K == 0) return false;

    // Blocks of C's columns (or rows, when taller than wide), a multiple of 16 wide.
    const int threads = s.pool.threads();
    const bool splitColumns = N >= M;
    const std::int64_t extent = splitColumns ? N : M;
    std::int64_t pieces = std::min<std::int64_t>(2 * threads, extent / 32);
    if (threads == 1 || M * N * K < (std::int64_t{1} << 18)) pieces = 1;
    pieces = std::max<std::int64_t>(pieces, 1);
    const std::int64_t block = pieces == 1 ? extent : ((extent + pieces - 1) / pieces + 15) / 16 * 16;
    const std::int64_t blocks = (extent + block - 1) / block;

    // Plans for the (at most two) block shapes, made here, not on the workers.
    auto planFor = [&](std::int64_t len) -> const Impl::Plan& {
        return splitColumns ? s.plan(f, transA, transB, M, len, K, aLd, bLd, ldc, beta)
                            : s.plan(f, transA, transB, len, N, K, aLd, bLd, ldc, beta);
    };
    std::vector<const Impl::Plan*> plans(static_cast<std::size_t>(blocks));
    try {
        for (std::int64_t b = 0; b < blocks; ++b) plans[static_cast<std::size_t>(b)] = &planFor(std::min(block, extent - b * block));
    } catch (const dnnl::error&) {
        return false;   // no primitive for this shape: nothing was written
    }
    if (s.scratchpads.size() < static_cast<std::size_t>(blocks)) s.scratchpads.resize(static_cast<std::size_t>(blocks));
    for (std::int64_t b = 0; b < blocks; ++b)
        if (s.scratchpads[static_cast<std::size_t>(b)].size() < plans[static_cast<std::size_t>(b)]->scratchpadBytes)
            s.scratchpads[static_cast<std::size_t>(b)].resize(plans[static_cast<std::size_t>(b)]->scratchpadBytes);

    s.pool.parallelFor(blocks, 1, [&](std::int64_t b0, std::int64_t b1) {
        oneThreadPerCall();
        dnnl::stream stream(s.engine);
        for (std::int64_t b = b0; b < b1; ++b) {
            const std::int64_t start = b * block;
            const Impl::Plan& p = *plans[static_cast<std::size_t>(b)];
            // The block's corner in each operand (offsets in elements, along the split dimension).
            const std::uint16_t* a = A;
            const std::uint16_t* w = B;
            float* c = C;
            if (splitColumns) {
                w += transB == Transpose::no ? start : start * bLd;
                c += start;
            } else {
                a += transA == Transpose::no ? start * aLd : start;
                c += start * ldc;
            }
            memory src(p.pd.src_desc(), s.engine, const_cast<std::uint16_t*>(a));
            memory wei(p.pd.weights_desc(), s.engine, const_cast<std::uint16_t*>(w));
            memory dst(p.pd.dst_desc(), s.engine, c);
            memory scratch(p.pd.scratchpad_desc(), s.engine, s.scratchpads[static_cast<std::size_t>(b)].data());
            p.matmul.execute(stream, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DST, dst},
                                      {DNNL_ARG_SCRATCHPAD, scratch}});
            stream.wait();
        }
    });
    return true;
}

std::size_t NativeGemm::workspaceBytes() const
{
    std::size_t bytes = (impl_->packedA.capacity() + impl_->packedB.capacity()) * sizeof(std::uint16_t);
    for (const auto& s : impl_->scratchpads) bytes += s.capacity();
    return bytes;
}

}  // namespace plab::cpu
