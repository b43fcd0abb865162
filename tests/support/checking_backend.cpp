// Over 500 lines: one checked forward per ComputeBackend op, a few lines each.
// The checking backend of checking_backend.h: tracked "device" blocks mapped without
// access between ops, pointer checks before every op, counts held until flush().
#include "checking_backend.h"

#include "numerics/minifloat.h"
#include "numerics/storage_convert.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <new>
#include <stdexcept>

namespace plab::testing {

// ---- TrackingAllocator --------------------------------------------------------------

TrackingAllocator::~TrackingAllocator()
{
    for (const auto& [p, b] : blocks_) munmap(p, b.mapped);
}

void* TrackingAllocator::allocate(std::size_t bytes)
{
    if (failAllocations_) throw std::runtime_error("cudaMallocFromPoolAsync failed: out of memory");
    // A mapping of its own (zeroed, page-aligned, and unique even for 0 bytes), so that
    // its access can be switched on and off.
    const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    const std::size_t mapped = (std::max<std::size_t>(bytes, 1) + page - 1) / page * page;
    void* p = mmap(nullptr, mapped, accessDepth_ > 0 ? PROT_READ | PROT_WRITE : PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    blocks_[p] = {bytes, mapped};
    ++allocations_;
    return p;
}

void TrackingAllocator::release(void* p) noexcept
{
    if (!p) return;
    auto it = blocks_.find(p);
    if (it == blocks_.end()) {
        violations_.push_back("release of an unknown pointer");
        return;
    }
    munmap(p, it->second.mapped);
    blocks_.erase(it);
}

void TrackingAllocator::copy(void* dst, const void* src, std::size_t bytes)
{
    require(dst, bytes, "copy dst");
    require(src, bytes, "copy src");
    const HostAccess access(*this);
    std::memmove(dst, src, bytes);
}

void TrackingAllocator::upload(void* dst, const void* host, std::size_t bytes)
{
    if (failUploads_) throw std::runtime_error("cudaMemcpyAsync failed: unspecified launch failure");
    require(dst, bytes, "upload dst");
    forbid(host, "upload source");
    ++uploads_;
    uploadedBytes_ += bytes;
    const HostAccess access(*this);
    std::memcpy(dst, host, bytes);
}

void TrackingAllocator::download(void* host, const void* src, std::size_t bytes)
{
    require(src, bytes, "download src");
    forbid(host, "download target");
    const HostAccess access(*this);
    std::memcpy(host, src, bytes);
}

void TrackingAllocator::fill(float* dst, std::size_t count, float value)
{
    require(dst, count * sizeof(float), "fill");
    // A GPU's kernel faults on a float store at an address that is not 4-byte aligned.
    if (reinterpret_cast<std::uintptr_t>(dst) % alignof(float) != 0)
        violations_.push_back("fill: misaligned float target");
    const HostAccess access(*this);
    std::fill(dst, dst + count, value);
}

void TrackingAllocator::require(const void* p, std::size_t bytes, const char* what)
{
    if (bytes == 0) return;
    if (!owns(p, bytes)) violations_.push_back(std::string(what) + ": not device memory");
}

void TrackingAllocator::forbid(const void* p, const char* what)
{
    if (p && owns(p, 1)) violations_.push_back(std::string(what) + ": device memory where host memory belongs");
}

bool TrackingAllocator::owns(const void* p, std::size_t bytes) const
{
    auto it = blocks_.upper_bound(const_cast<void*>(p));
    if (it == blocks_.begin()) return false;
    --it;
    const auto* base = static_cast<const std::byte*>(it->first);
    const auto* q = static_cast<const std::byte*>(p);
    return q >= base && q + bytes <= base + it->second.size;
}

std::size_t TrackingAllocator::liveBytes() const
{
    std::size_t sum = 0;
    for (const auto& [p, b] : blocks_) sum += b.size;
    return sum;
}

void TrackingAllocator::protect(void* p, const Block& b, bool accessible)
{
    if (mprotect(p, b.mapped, accessible ? PROT_READ | PROT_WRITE : PROT_NONE) != 0)
        violations_.push_back("mprotect failed on a tracked block");
}

TrackingAllocator::HostAccess::HostAccess(TrackingAllocator& device) : device_(device)
{
    if (device_.accessDepth_++ == 0)
        for (const auto& [p, b] : device_.blocks_) device_.protect(p, b, true);
}

TrackingAllocator::HostAccess::~HostAccess()
{
    if (--device_.accessDepth_ == 0)
        for (const auto& [p, b] : device_.blocks_) device_.protect(p, b, false);
}

// ---- CheckingBackend ----------------------------------------------------------------

using HostAccess = TrackingAllocator::HostAccess;

CheckingBackend::CheckingBackend(ConvolutionLibrary library, TrackingAllocator* device)
    : cpu_(createCpuBackend(2)),
      library_(library),
      ownDevice_(device ? nullptr : std::make_unique<TrackingAllocator>()),
      device_(device ? *device : *ownDevice_)
{
    info_.name = "checking";
    info_.available = true;
    info_.capabilities = cpu_->info().capabilities;
}

CheckingBackend::~CheckingBackend()
{
    if (countsPending()) device_.report("counts still owed when the backend was destroyed (never flushed)");
    if (device_.live() > 0)
        device_.report(std::to_string(device_.live()) + " blocks still allocated when the backend was destroyed");
}

void CheckingBackend::flush()
{
    ++flushes_;
    deliver(stats_, "RoundingStats");
    deliver(hists_, "GradientHistogram");
    deliver(updates_, "UpdateCounts");
}

std::optional<DeviceMemoryInfo> CheckingBackend::deviceMemory() const
{
    return DeviceMemoryInfo{device_.liveBytes(), std::uint64_t{1} << 30};
}

void CheckingBackend::gemm(Transpose ta, Transpose tb, std::int64_t M, std::int64_t N, std::int64_t K, const float* A,
                           std::int64_t lda, const float* B, std::int64_t ldb, float beta, float* C, std::int64_t ldc,
                           GemmPrecision p)
{
    need(A, 1, "gemm A");
    need(B, 1, "gemm B");
    need(C, ((M - 1) * ldc + N), "gemm C");
    const HostAccess access(device_);
    checkFp8(p, {A, ta == Transpose::yes ? K : M, ta == Transpose::yes ? M : K, lda},
             {B, tb == Transpose::yes ? N : K, tb == Transpose::yes ? K : N, ldb}, "gemm");
    cpu_->gemm(ta, tb, M, N, K, A, lda, B, ldb, beta, C, ldc, p);
}

void CheckingBackend::gemmPieces(const GemmCut& cut, std::int64_t first, std::int64_t last, Transpose ta, Transpose tb,
                                 std::int64_t M, std::int64_t N, std::int64_t K, const float* A, std::int64_t lda,
                                 const float* B, std::int64_t ldb, float beta, float* C, std::int64_t ldc,
                                 GemmPrecision p)
{
    need(A, 1, "gemmPieces A");
    need(B, 1, "gemmPieces B");
    need(C, ((M - 1) * ldc + N), "gemmPieces C");
    const HostAccess access(device_);
    cpu_->gemmPieces(cut, first, last, ta, tb, M, N, K, A, lda, B, ldb, beta, C, ldc, p);
}

void CheckingBackend::checkFp8(const GemmPrecision& p, Stored a, Stored b, const char* op)
{
    if (p.a.on != p.b.on) device_.report(std::string(op) + ": one FP8 operand without the other");
    if (!p.fp8()) return;
    ++fp8Products_;
    const auto check = [&](const Fp8Operand& o, const Stored& m, const char* which) {
        for (std::int64_t r = 0; r < m.rows; ++r)
            for (std::int64_t c = 0; c < m.cols; ++c) {
                const float x = m.data[r * m.ld + c];
                if (std::isnan(x)) continue;
                const float q = roundToMini(o.element, x * o.scale, Overflow::saturate);
                if (q * o.scaleInv != x) {
                    device_.report(std::string(op) + " " + which + ": " + std::to_string(x) +
                                   " is no code of its FP8 format times its scaleInv " + std::to_string(o.scaleInv));
                    return;
                }
            }
    };
    check(p.a, a, "A");
    check(p.b, b, "B");
}

float CheckingBackend::quantize(const QuantizeOp& op, const float* src, float* dst, std::int64_t n,
                                RoundingStats* stats, GradientHistogram* hist, GradientHistogram* blockScales)
{
    const std::int64_t span = op.blocks ? (op.rows - 1) * op.stride() + op.cols : n;
    need(src, span, "quantize src");
    need(dst, span, "quantize dst");
    const HostAccess access(device_);
    return cpu_->quantize(op, src, dst, n, held(stats_, stats), held(hists_, hist), held(hists_, blockScales));
}

float CheckingBackend::amax(const float* src, std::int64_t n)
{
    need(src, n, "amax src");
    const HostAccess access(device_);
    return cpu_->amax(src, n);
}

void CheckingBackend::im2col(const ConvGeometry& g, const float* src, std::int64_t n0, std::int64_t count, float* cols)
{
    need(src, g.channels * g.batch * g.planeSize(), "im2col src");
    need(cols, g.patchSize() * count * g.planeSize(), "im2col cols");
    const HostAccess access(device_);
    cpu_->im2col(g, src, n0, count, cols);
}

void CheckingBackend::col2im(const ConvGeometry& g, const float* cols, std::int64_t n0, std::int64_t count, float* dst,
                             std::int64_t colsLd)
{
    const std::int64_t columns = count * g.planeSize(), ld = colsLd != 0 ? colsLd : columns;
    if (g.patchSize() > 0 && columns > 0) need(cols, (g.patchSize() - 1) * ld + columns, "col2im cols");
    need(dst, g.channels * g.batch * g.planeSize(), "col2im dst");
    const HostAccess access(device_);
    cpu_->col2im(g, cols, n0, count, dst, colsLd);
}

void CheckingBackend::roundArray(Format f, const float* src, float* dst, std::size_t n, RoundingStats* stats,
                                 GradientHistogram* hist)
{
    need(src, static_cast<std::int64_t>(n), "roundArray src");
    need(dst, static_cast<std::int64_t>(n), "roundArray dst");
    device_.forbid(stats, "roundArray stats");
    device_.forbid(hist, "roundArray hist");
    const HostAccess access(device_);
    if (observer_ && stats) observer_(f, std::vector<float>(src, src + n), stats);
    cpu_->roundArray(f, src, dst, n, held(stats_, stats), held(hists_, hist));
}

bool CheckingBackend::acceptLibraryCall(bool refuse)
{
    ++(refuse ? libraryRefusals_ : libraryCalls_);
    return !refuse;
}

bool CheckingBackend::convolutionForward(const ConvGeometry& g, std::int64_t outChannels, const float* x,
                                         const float* w, float* y, GemmPrecision p)
{
    if (library_ == ConvolutionLibrary::none) return false;
    const std::int64_t cols = g.batch * g.planeSize();
    need(x, g.channels * cols, "convForward x");
    need(w, outChannels * g.patchSize(), "convForward w");
    need(y, outChannels * cols, "convForward y");
    if (!acceptLibraryCall(false)) return false;
    const HostAccess access(device_);
    checkFp8(p, {w, outChannels, g.patchSize(), g.patchSize()}, {x, g.channels, cols, cols}, "convForward");
    lowered_.resize(static_cast<std::size_t>(g.patchSize() * cols));
    cpu_->im2col(g, x, 0, g.batch, lowered_.data());
    cpu_->gemm(Transpose::no, Transpose::no, outChannels, cols, g.patchSize(), w, g.patchSize(), lowered_.data(), cols,
               0.0f, y, cols, p);
    return true;
}

bool CheckingBackend::convolutionBackwardData(const ConvGeometry& g, std::int64_t outChannels, const float* w,
                                              const float* dy, float* dx, GemmPrecision p)
{
    if (library_ == ConvolutionLibrary::none) return false;
    const std::int64_t cols = g.batch * g.planeSize();
    need(w, outChannels * g.patchSize(), "convBackwardData w");
    need(dy, outChannels * cols, "convBackwardData dy");
    need(dx, g.channels * cols, "convBackwardData dx");
    if (!acceptLibraryCall(library_ == ConvolutionLibrary::refuseBackwardData ||
                           library_ == ConvolutionLibrary::refuseBackward))
        return false;
    const HostAccess access(device_);
    checkFp8(p, {w, outChannels, g.patchSize(), g.patchSize()}, {dy, outChannels, cols, cols}, "convBackwardData");
    lowered_.resize(static_cast<std::size_t>(g.patchSize() * cols));
    cpu_->gemm(Transpose::yes, Transpose::no, g.patchSize(), cols, outChannels, w, g.patchSize(), dy, cols, 0.0f,
               lowered_.data(), cols, p);
    cpu_->col2im(g, lowered_.data(), 0, g.batch, dx, 0);
    return true;
}

bool CheckingBackend::convolutionBackwardFilter(const ConvGeometry& g, std::int64_t outChannels, const float* x,
                                                const float* dy, float* dw, GemmPrecision p)
{
    if (library_ == ConvolutionLibrary::none) return false;
    const std::int64_t cols = g.batch * g.planeSize();
    need(x, g.channels * cols, "convBackwardFilter x");
    need(dy, outChannels * cols, "convBackwardFilter dy");
    need(dw, outChannels * g.patchSize(), "convBackwardFilter dw");
    if (!acceptLibraryCall(library_ == ConvolutionLibrary::refuseBackwardFilter ||
                           library_ == ConvolutionLibrary::refuseBackward))
        return false;
    const HostAccess access(device_);
    checkFp8(p, {dy, outChannels, cols, cols}, {x, g.channels, cols, cols}, "convBackwardFilter");
    lowered_.resize(static_cast<std::size_t>(g.patchSize() * cols));
    cpu_->im2col(g, x, 0, g.batch, lowered_.data());
    cpu_->gemm(Transpose::no, Transpose::yes, outChannels, g.patchSize(), cols, dy, cols, lowered_.data(), cols, 0.0f,
               dw, g.patchSize(), p);
    return true;
}

void CheckingBackend::addBiasRound(Format f, float* x, std::int64_t n, const float* bias, std::int64_t period,
                                   std::int64_t repeat, RoundingStats* stats, GradientHistogram* hist)
{
    need(x, n, "addBiasRound x");
    need(bias, period, "addBiasRound bias");
    device_.forbid(stats, "addBiasRound stats");
    device_.forbid(hist, "addBiasRound hist");
    const HostAccess access(device_);
    if (observer_ && stats) {
        std::vector<float> sums(static_cast<std::size_t>(n));
        for (std::int64_t i = 0; i < n; ++i) sums[static_cast<std::size_t>(i)] = x[i] + bias[(i / repeat) % period];
        observer_(f, sums, stats);
    }
    cpu_->addBiasRound(f, x, n, bias, period, repeat, held(stats_, stats), held(hists_, hist));
}

void CheckingBackend::patchify(const float* images, std::int64_t N, std::int64_t side, std::int64_t patch, float* out)
{
    need(images, N * side * side, "patchify images");
    need(out, N * side * side, "patchify out");
    const HostAccess access(device_);
    cpu_->patchify(images, N, side, patch, out);
}

void CheckingBackend::addPeriodic(float* x, std::int64_t n, const float* add, std::int64_t period)
{
    need(x, n, "addPeriodic x");
    need(add, period, "addPeriodic add");
    const HostAccess access(device_);
    cpu_->addPeriodic(x, n, add, period);
}

void CheckingBackend::sumPeriodic(const float* x, std::int64_t n, std::int64_t period, float* out)
{
    need(x, n, "sumPeriodic x");
    need(out, period, "sumPeriodic out");
    const HostAccess access(device_);
    cpu_->sumPeriodic(x, n, period, out);
}

void CheckingBackend::layerNorm(Format emulate, const float* x, std::int64_t rows, std::int64_t D, const float* gamma,
                                const float* beta, float eps, float* y, float* xhat, float* rstd, float* sumOfSquares)
{
    for (const float* p : {x, static_cast<const float*>(y), static_cast<const float*>(xhat)}) need(p, rows * D, "layerNorm rows");
    need(gamma, D, "layerNorm gamma");
    need(beta, D, "layerNorm beta");
    need(rstd, rows, "layerNorm rstd");
    need(sumOfSquares, rows, "layerNorm sumOfSquares");
    const HostAccess access(device_);
    cpu_->layerNorm(emulate, x, rows, D, gamma, beta, eps, y, xhat, rstd, sumOfSquares);
}

void CheckingBackend::layerNormBackward(const float* g, const float* xhat, const float* rstd, const float* gamma,
                                        std::int64_t rows, std::int64_t D, float* dx, float* dgamma, float* dbeta)
{
    need(g, rows * D, "layerNormBackward g");
    need(xhat, rows * D, "layerNormBackward xhat");
    need(rstd, rows, "layerNormBackward rstd");
    need(gamma, D, "layerNormBackward gamma");
    if (dx) need(dx, rows * D, "layerNormBackward dx");
    need(dgamma, D, "layerNormBackward dgamma");
    need(dbeta, D, "layerNormBackward dbeta");
    const HostAccess access(device_);
    cpu_->layerNormBackward(g, xhat, rstd, gamma, rows, D, dx, dgamma, dbeta);
}

void CheckingBackend::softmaxRows(Format emulate, const float* s, std::int64_t rows, std::int64_t T, float* p)
{
    need(s, rows * T, "softmaxRows s");
    need(p, rows * T, "softmaxRows p");
    const HostAccess access(device_);
    cpu_->softmaxRows(emulate, s, rows, T, p);
}

void CheckingBackend::softmaxRowsBackward(const float* p, float* g, std::int64_t rows, std::int64_t T)
{
    need(p, rows * T, "softmaxRowsBackward p");
    need(g, rows * T, "softmaxRowsBackward g");
    const HostAccess access(device_);
    cpu_->softmaxRowsBackward(p, g, rows, T);
}

void CheckingBackend::gelu(const float* x, float* y, std::int64_t n)
{
    need(x, n, "gelu x");
    need(y, n, "gelu y");
    const HostAccess access(device_);
    cpu_->gelu(x, y, n);
}

void CheckingBackend::geluBackward(const float* x, float* g, std::int64_t n)
{
    need(x, n, "geluBackward x");
    need(g, n, "geluBackward g");
    const HostAccess access(device_);
    cpu_->geluBackward(x, g, n);
}

void CheckingBackend::add(const float* a, const float* b, float* y, std::int64_t n)
{
    need(a, n, "add a");
    need(b, n, "add b");
    need(y, n, "add y");
    const HostAccess access(device_);
    cpu_->add(a, b, y, n);
}

void CheckingBackend::scale(float* x, std::int64_t n, float factor)
{
    need(x, n, "scale x");
    const HostAccess access(device_);
    cpu_->scale(x, n, factor);
}

void CheckingBackend::meanTokens(const float* x, std::int64_t N, std::int64_t T, std::int64_t D, float* y)
{
    need(x, N * T * D, "meanTokens x");
    need(y, N * D, "meanTokens y");
    const HostAccess access(device_);
    cpu_->meanTokens(x, N, T, D, y);
}

void CheckingBackend::meanTokensBackward(const float* g, std::int64_t N, std::int64_t T, std::int64_t D, float* dx)
{
    need(g, N * D, "meanTokensBackward g");
    need(dx, N * T * D, "meanTokensBackward dx");
    const HostAccess access(device_);
    cpu_->meanTokensBackward(g, N, T, D, dx);
}

void CheckingBackend::relu16(Format f, std::uint16_t* x, std::int64_t n)
{
    need16(x, n, "relu16");
    const HostAccess access(device_);
    cpu_->relu16(f, x, n);
}

void CheckingBackend::reluBackward16(Format f, const std::uint16_t* y, std::uint16_t* g, std::int64_t n)
{
    need16(y, n, "reluBackward16 y");
    need16(g, n, "reluBackward16 g");
    const HostAccess access(device_);
    cpu_->reluBackward16(f, y, g, n);
}

void CheckingBackend::maxPool2x2Packed(Format f, const std::uint16_t* in, std::int64_t planes, std::int64_t H,
                                       std::int64_t W, std::uint16_t* out, std::uint8_t* argmax)
{
    need16(in, planes * H * W, "maxPoolPacked in");
    need16(out, planes * (H / 2) * (W / 2), "maxPoolPacked out");
    device_.require(argmax, static_cast<std::size_t>(planes * (H / 2) * (W / 2)), "maxPoolPacked argmax");
    const HostAccess access(device_);
    cpu_->maxPool2x2Packed(f, in, planes, H, W, out, argmax);
}

void CheckingBackend::maxPool2x2BackwardPacked(const std::uint16_t* g, const std::uint8_t* argmax, std::int64_t planes,
                                               std::int64_t H, std::int64_t W, std::uint16_t* dx)
{
    need16(g, planes * (H / 2) * (W / 2), "maxPoolBackwardPacked g");
    device_.require(argmax, static_cast<std::size_t>(planes * (H / 2) * (W / 2)), "maxPoolBackwardPacked argmax");
    need16(dx, planes * H * W, "maxPoolBackwardPacked dx");
    const HostAccess access(device_);
    cpu_->maxPool2x2BackwardPacked(g, argmax, planes, H, W, dx);
}

void CheckingBackend::transposeBlocksPacked(const std::uint16_t* in, std::int64_t A, std::int64_t B,
                                            std::int64_t inner, std::uint16_t* out)
{
    need16(in, A * B * inner, "transposeBlocksPacked in");
    need16(out, A * B * inner, "transposeBlocksPacked out");
    const HostAccess access(device_);
    cpu_->transposeBlocksPacked(in, A, B, inner, out);
}

void CheckingBackend::widen16(Format f, const std::uint16_t* src, std::int64_t srcLd, float* dst, std::int64_t dstLd,
                              std::int64_t rows, std::int64_t cols)
{
    need16(src, spanOf(rows, cols, srcLd), "widen16 src");
    need(dst, spanOf(rows, cols, dstLd), "widen16 dst");
    const HostAccess access(device_);
    cpu_->widen16(f, src, srcLd, dst, dstLd, rows, cols);
}

void CheckingBackend::roundTo16(Format f, const float* src, std::int64_t srcLd, std::uint16_t* dst, std::int64_t dstLd,
                                std::int64_t rows, std::int64_t cols, RoundingStats* stats, GradientHistogram* hist)
{
    need(src, spanOf(rows, cols, srcLd), "roundTo16 src");
    need16(dst, spanOf(rows, cols, dstLd), "roundTo16 dst");
    device_.forbid(stats, "roundTo16 stats");
    device_.forbid(hist, "roundTo16 hist");
    const HostAccess access(device_);
    if (observer_ && stats) {
        std::vector<float> values;
        for (std::int64_t r = 0; r < rows; ++r) values.insert(values.end(), src + r * srcLd, src + r * srcLd + cols);
        observer_(f, values, stats);
    }
    cpu_->roundTo16(f, src, srcLd, dst, dstLd, rows, cols, held(stats_, stats), held(hists_, hist));
}

void CheckingBackend::addBiasRoundTo16(Format f, const float* x, std::int64_t xLd, const float* bias,
                                       std::uint16_t* out, std::int64_t outLd, std::int64_t rows, std::int64_t cols,
                                       RoundingStats* stats, GradientHistogram* hist)
{
    need(x, spanOf(rows, cols, xLd), "addBiasRoundTo16 x");
    need(bias, rows, "addBiasRoundTo16 bias");
    need16(out, spanOf(rows, cols, outLd), "addBiasRoundTo16 out");
    device_.forbid(stats, "addBiasRoundTo16 stats");
    device_.forbid(hist, "addBiasRoundTo16 hist");
    const HostAccess access(device_);
    if (observer_ && stats) {
        std::vector<float> sums;
        for (std::int64_t r = 0; r < rows; ++r)
            for (std::int64_t c = 0; c < cols; ++c) sums.push_back(x[r * xLd + c] + bias[r]);
        observer_(f, sums, stats);
    }
    cpu_->addBiasRoundTo16(f, x, xLd, bias, out, outLd, rows, cols, held(stats_, stats), held(hists_, hist));
}

void CheckingBackend::sumRows16(Format f, const std::uint16_t* x, std::int64_t rows, std::int64_t cols, float* out)
{
    need16(x, rows * cols, "sumRows16 x");
    need(out, rows, "sumRows16 out");
    const HostAccess access(device_);
    cpu_->sumRows16(f, x, rows, cols, out);
}

void CheckingBackend::im2colPacked(const ConvGeometry& g, Format f, const std::uint16_t* src, std::int64_t n0,
                                   std::int64_t count, float* cols)
{
    need16(src, g.channels * g.batch * g.planeSize(), "im2colPacked src");
    need(cols, g.patchSize() * count * g.planeSize(), "im2colPacked cols");
    const HostAccess access(device_);
    cpu_->im2colPacked(g, f, src, n0, count, cols);
}

void CheckingBackend::im2col16(const ConvGeometry& g, const std::uint16_t* src, std::int64_t n0, std::int64_t count,
                               std::uint16_t* cols)
{
    need16(src, g.channels * g.batch * g.planeSize(), "im2col16 src");
    need16(cols, g.patchSize() * count * g.planeSize(), "im2col16 cols");
    const HostAccess access(device_);
    cpu_->im2col16(g, src, n0, count, cols);
}

void CheckingBackend::gemm16(Transpose ta, Transpose tb, std::int64_t M, std::int64_t N, std::int64_t K,
                             const std::uint16_t* A, std::int64_t lda, const std::uint16_t* B, std::int64_t ldb,
                             float beta, float* C, std::int64_t ldc, GemmPrecision p)
{
    const bool aT = ta == Transpose::yes, bT = tb == Transpose::yes;
    need16(A, aT ? spanOf(K, M, lda) : spanOf(M, K, lda), "gemm16 A");
    need16(B, bT ? spanOf(N, K, ldb) : spanOf(K, N, ldb), "gemm16 B");
    need(C, spanOf(M, N, ldc), "gemm16 C");
    const HostAccess access(device_);
    if (cpu_->supports(BackendOp::gemm16, p)) {
        cpu_->gemm16(ta, tb, M, N, K, A, lda, B, ldb, beta, C, ldc, p);
        return;
    }
    // gemm16's contract: gemm's products and sums on the widened patterns.
    const std::int64_t aRows = aT ? K : M, aCols = aT ? M : K, bRows = bT ? N : K, bCols = bT ? K : N;
    std::vector<float> a(static_cast<std::size_t>(aRows * aCols)), b(static_cast<std::size_t>(bRows * bCols));
    for (std::int64_t r = 0; r < aRows; ++r)
        widenArray(p.compute, A + r * lda, a.data() + r * aCols, static_cast<std::size_t>(aCols));
    for (std::int64_t r = 0; r < bRows; ++r)
        widenArray(p.compute, B + r * ldb, b.data() + r * bCols, static_cast<std::size_t>(bCols));
    cpu_->gemm(ta, tb, M, N, K, a.data(), aCols, b.data(), bCols, beta, C, ldc, p);
}

void CheckingBackend::relu(float* x, std::int64_t n)
{
    need(x, n, "relu");
    const HostAccess access(device_);
    cpu_->relu(x, n);
}

void CheckingBackend::reluBackward(const float* y, float* g, std::int64_t n)
{
    need(y, n, "reluBackward y");
    need(g, n, "reluBackward g");
    const HostAccess access(device_);
    cpu_->reluBackward(y, g, n);
}

void CheckingBackend::maxPool2x2(const float* in, std::int64_t planes, std::int64_t H, std::int64_t W, float* out,
                                 std::uint8_t* argmax)
{
    need(in, planes * H * W, "maxPool in");
    need(out, planes * (H / 2) * (W / 2), "maxPool out");
    device_.require(argmax, static_cast<std::size_t>(planes * (H / 2) * (W / 2)), "maxPool argmax");
    const HostAccess access(device_);
    cpu_->maxPool2x2(in, planes, H, W, out, argmax);
}

void CheckingBackend::maxPool2x2Backward(const float* g, const std::uint8_t* argmax, std::int64_t planes,
                                         std::int64_t H, std::int64_t W, float* dx)
{
    need(g, planes * (H / 2) * (W / 2), "maxPoolBackward g");
    device_.require(argmax, static_cast<std::size_t>(planes * (H / 2) * (W / 2)), "maxPoolBackward argmax");
    need(dx, planes * H * W, "maxPoolBackward dx");
    const HostAccess access(device_);
    cpu_->maxPool2x2Backward(g, argmax, planes, H, W, dx);
}

void CheckingBackend::transposeBlocks(const float* in, std::int64_t A, std::int64_t B, std::int64_t inner, float* out)
{
    need(in, A * B * inner, "transpose in");
    need(out, A * B * inner, "transpose out");
    const HostAccess access(device_);
    cpu_->transposeBlocks(in, A, B, inner, out);
}

void CheckingBackend::sumRows(const float* x, std::int64_t rows, std::int64_t cols, float* out)
{
    need(x, rows * cols, "sumRows x");
    need(out, rows, "sumRows out");
    const HostAccess access(device_);
    cpu_->sumRows(x, rows, cols, out);
}

void CheckingBackend::sumColumns(const float* x, std::int64_t rows, std::int64_t cols, float* out)
{
    need(x, rows * cols, "sumColumns x");
    need(out, cols, "sumColumns out");
    const HostAccess access(device_);
    cpu_->sumColumns(x, rows, cols, out);
}

LossResult CheckingBackend::softmaxCrossEntropy(const float* logits, const std::uint8_t* labels, std::int64_t N,
                                                std::int64_t classes, Format emulate, float* probabilities)
{
    need(logits, N * classes, "loss logits");
    need(probabilities, N * classes, "loss probabilities");
    device_.forbid(labels, "loss labels");
    const HostAccess access(device_);
    return cpu_->softmaxCrossEntropy(logits, labels, N, classes, emulate, probabilities);
}

void CheckingBackend::softmaxCrossEntropyBackward(const float* probabilities, const std::uint8_t* labels,
                                                  std::int64_t N, std::int64_t classes, float lossScale, float* grad)
{
    need(probabilities, N * classes, "lossBackward probabilities");
    need(grad, N * classes, "lossBackward grad");
    device_.forbid(labels, "lossBackward labels");
    const HostAccess access(device_);
    cpu_->softmaxCrossEntropyBackward(probabilities, labels, N, classes, lossScale, grad);
}

SweepResult CheckingBackend::gradientSweep(const std::vector<GradientView>& views, float multiplier, SweepSquares squares)
{
    for (const auto& v : views) need(v.data, v.size, "gradientSweep");
    const HostAccess access(device_);
    return cpu_->gradientSweep(views, multiplier, squares);
}

void CheckingBackend::sgdUpdate(const SgdScalars& s, UpdateFormats f, float* w, const float* g, float* buffer, std::int64_t n,
                                UpdateCounts* counts)
{
    need(w, n, "sgd weights");
    need(g, n, "sgd grad");
    if (s.useMomentum) need(buffer, n, "sgd buffer");
    if (f.write.rounding == UpdateRounding::kahan) need(f.write.compensation, n, "sgd kahan compensation");
    device_.forbid(counts, "sgd counts");
    const HostAccess access(device_);
    cpu_->sgdUpdate(s, f, w, g, buffer, n, held(updates_, counts));
}

void CheckingBackend::adamUpdate(const AdamScalars& s, UpdateFormats f, float* w, const float* g, float* m, float* v,
                                 std::int64_t n, UpdateCounts* counts)
{
    need(w, n, "adam weights");
    need(g, n, "adam grad");
    need(m, n, "adam m");
    need(v, n, "adam v");
    if (f.write.rounding == UpdateRounding::kahan) need(f.write.compensation, n, "adam kahan compensation");
    device_.forbid(counts, "adam counts");
    const HostAccess access(device_);
    cpu_->adamUpdate(s, f, w, g, m, v, n, held(updates_, counts));
}

template <typename Counts>
Counts* CheckingBackend::held(Pending<Counts>& pending, Counts* target)
{
    if (!target) return nullptr;
    auto [it, fresh] = pending.try_emplace(target);
    if (fresh) it->second.before = *target;
    return &it->second.owed;
}

template <typename Counts>
void CheckingBackend::deliver(Pending<Counts>& pending, const char* what)
{
    for (auto& [target, held] : pending) {
        if (!(*target == held.before)) {
            device_.report(std::string(what) + " changed between an op and flush()");
            continue;
        }
        *target += held.owed;
    }
    pending.clear();
}

}  // namespace plab::testing
