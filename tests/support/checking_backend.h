// Device residency checked on the host: a tracked host memory that poses as a device, and
// a backend over it whose every op verifies that each tensor pointer it receives lies
// inside one of its allocations (and each label/counter pointer outside), then computes
// with the CPU backend. It also holds the counts it owes host structs until flush(), as
// the CUDA backend does, so a caller that reads them early, or resets or frees a struct
// with counts pending, is caught. The "device" blocks are mapped without access except
// while an op or a copy runs, so host code that dereferences a device pointer crashes, as
// it would on a GPU. Used by tst_placement (the layers' step), tst_trainer_placement (the
// real Trainer) and tst_layers (Conv2d when the library refuses a backward pass). A suite
// that uses it names plab_backend_cpu (or plab_engine) on its links line.
#pragma once

#include "backend/backend.h"

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace plab::testing {

// Host memory posing as a device: every allocation recorded, every access checked.
class TrackingAllocator final : public DeviceAllocator {
public:
    TrackingAllocator() = default;
    TrackingAllocator(const TrackingAllocator&) = delete;
    TrackingAllocator& operator=(const TrackingAllocator&) = delete;
    ~TrackingAllocator() override;   // unmaps what was never released

    void* allocate(std::size_t bytes) override;
    void release(void* p) noexcept override;
    void copy(void* dst, const void* src, std::size_t bytes) override;
    void upload(void* dst, const void* host, std::size_t bytes) override;
    void download(void* host, const void* src, std::size_t bytes) override;
    void fill(float* dst, std::size_t count, float value) override;

    // While one lives, the blocks may be read and written on the host: the span of one
    // op, as a GPU's kernels touch device memory and the host does not. Nests.
    class HostAccess {
    public:
        explicit HostAccess(TrackingAllocator& device);
        ~HostAccess();
        HostAccess(const HostAccess&) = delete;
        HostAccess& operator=(const HostAccess&) = delete;

    private:
        TrackingAllocator& device_;
    };

    // p[0, bytes) must lie inside one allocation.
    void require(const void* p, std::size_t bytes, const char* what);
    // p must be host memory (labels, counters).
    void forbid(const void* p, const char* what);
    bool owns(const void* p, std::size_t bytes) const;

    void report(std::string violation) { violations_.push_back(std::move(violation)); }

    // A device out of memory, or one whose copies fail.
    void failAllocations(bool on) { failAllocations_ = on; }
    void failUploads(bool on) { failUploads_ = on; }

    std::size_t live() const { return blocks_.size(); }
    std::size_t liveBytes() const;
    int allocations() const { return allocations_; }
    // Host-to-device copies (upload) so far, and the bytes they moved.
    int uploads() const { return uploads_; }
    std::size_t uploadedBytes() const { return uploadedBytes_; }
    const std::vector<std::string>& violations() const { return violations_; }

private:
    struct Block {
        std::size_t size = 0;     // as asked for
        std::size_t mapped = 0;   // whole pages
    };
    void protect(void* p, const Block& b, bool accessible);

    std::map<void*, Block> blocks_;
    int accessDepth_ = 0;   // live HostAccess objects
    int allocations_ = 0;
    int uploads_ = 0;
    std::size_t uploadedBytes_ = 0;
    bool failAllocations_ = false;
    bool failUploads_ = false;
    std::vector<std::string> violations_;
};

// Which convolution-library ops a CheckingBackend runs. Those it runs are computed by a
// whole-batch lowering on the CPU backend, so the layer's library path runs too; one it
// refuses checks its pointers and returns false, writing nothing. The refusing kinds are
// a cuDNN plan whose backward algorithms all refuse the shape at run time, after its
// forward pass ran: the layer must lower the rest of the step's backward pass itself.
enum class ConvolutionLibrary {
    none,                   // every call returns false: the layer lowers all three passes
    all,                    // all three passes run
    refuseBackwardFilter,   // forward and backward data run; backward filter returns false
    refuseBackwardData,     // forward and backward filter run; backward data returns false
    refuseBackward,         // forward runs; both backward passes return false
};

// The CPU backend behind a tracking "device": checks every pointer, then delegates.
class CheckingBackend final : public ComputeBackend {
public:
    // library: the convolution-library ops offered (above). device: the memory to place
    // tensors on, borrowed; null for the backend's own. Borrow one that outlives the
    // backend to look at it after the backend's owner (a Trainer) has destroyed it.
    explicit CheckingBackend(ConvolutionLibrary library, TrackingAllocator* device = nullptr);
    // Reports, to the device, counts still owed (never flushed, so lost) and blocks still
    // allocated (tensors must be released before their backend).
    ~CheckingBackend() override;

    TrackingAllocator& device() { return device_; }
    int flushes() const { return flushes_; }
    int libraryCalls() const { return libraryCalls_; }         // library convolutions that ran
    int libraryRefusals() const { return libraryRefusals_; }   // and those that returned false
    // GEMMs and library convolutions given FP8 operands (GemmPrecision::a / b); each such
    // operand is checked to hold exactly codes of its format times its scaleInv (what a
    // GPU multiplies as codes), a mismatch reported to the device.
    int fp8Products() const { return fp8Products_; }
    int packedCalls() const { return packedCalls_; }   // packed 16-bit operands the ops were handed
    bool countsPending() const { return !stats_.empty() || !hists_.empty() || !updates_.empty(); }

    // Called before each rounding that counts into a sink (roundArray, addBiasRound,
    // roundTo16, addBiasRoundTo16), in the order the ops run, with the format and the fp32
    // values about to be rounded (x + bias for the bias ops, as their fp32 sum): a test's
    // own look at each rounding site, independent of the counts (tst_skip_cause).
    using RoundingObserver = std::function<void(Format, const std::vector<float>& values, const RoundingStats* sink)>;
    void observeRoundings(RoundingObserver observer) { observer_ = std::move(observer); }

    // What the trainer may run on it (the CPU's capabilities unless restricted, to stand
    // for a device that lacks a format).
    void setCapabilities(BackendCapabilities c) { info_.capabilities = std::move(c); }

    // A library that convolves 16-bit patterns, as the CUDA backend's cuDNN does: run only
    // on the steps allowLibraryRounding allows (telemetry sampled), its sums in double, the
    // forward pass's and the input gradient's each rounded once into the compute format
    // before it is handed back, the filter gradient's into fp32. With
    // it, gemm16 runs on every CPU (the patterns widened where the CPU has no native units),
    // so that the packed layers reach the library on any machine.
    void offerConvolution16() { offers16_ = true; }
    void allowLibraryRounding(bool allowed) override { libraryAllowed_ = allowed; }
    int convolution16Calls() const { return convolution16Calls_; }   // of the three passes

    const BackendInfo& info() const override { return info_; }
    // Packed tensors and gemm16 as the CPU backend it checks against, the transformer's ops;
    // not FP8 codes, not packing by default, no packed updates, no convolution library.
    bool supports(BackendOp op, const GemmPrecision& p = {}) const override
    {
        switch (op) {
        case BackendOp::packedTensors: return cpu_->supports(op, p);
        case BackendOp::gemm16: return offers16_ ? sixteenBit(p) : cpu_->supports(op, p);
        case BackendOp::convolution16:
        case BackendOp::convolutionData16:
        case BackendOp::convolutionFilter16: return offers16_ && libraryAllowed_ && sixteenBit(p);
        case BackendOp::transformer: return true;
        default: return false;
        }
    }
    int threads() const override { return cpu_->threads(); }
    std::string arithmeticFor(const GemmPrecision& precision) const override { return cpu_->arithmeticFor(precision); }
    DeviceAllocator* allocator() override { return &device_; }
    void flush() override;
    // The tracked blocks' bytes as used, of a nominal 1 GiB device.
    std::optional<DeviceMemoryInfo> deviceMemory() const override;

    void gemm(Transpose ta, Transpose tb, std::int64_t M, std::int64_t N, std::int64_t K, const float* A,
              std::int64_t lda, const float* B, std::int64_t ldb, float beta, float* C, std::int64_t ldc,
              GemmPrecision p) override;
    // The CPU backend's cut and pieces (its sums on OpenBLAS's Haswell kernels depend on the
    // cut), so that the packed layers on this device take the path they take on the host.
    GemmCut gemmCut(const GemmPrecision& p, std::int64_t M, std::int64_t N, std::int64_t K) const override
    {
        return cpu_->gemmCut(p, M, N, K);
    }
    void gemmPieces(const GemmCut& cut, std::int64_t first, std::int64_t last, Transpose ta, Transpose tb,
                    std::int64_t M, std::int64_t N, std::int64_t K, const float* A, std::int64_t lda, const float* B,
                    std::int64_t ldb, float beta, float* C, std::int64_t ldc, GemmPrecision p) override;
    void im2col(const ConvGeometry& g, const float* src, std::int64_t n0, std::int64_t count, float* cols) override;
    void col2im(const ConvGeometry& g, const float* cols, std::int64_t n0, std::int64_t count, float* dst,
                std::int64_t colsLd) override;
    void roundArray(Format f, const float* src, float* dst, std::size_t n, RoundingStats* stats,
                    GradientHistogram* hist) override;
    float quantize(const QuantizeOp& op, const float* src, float* dst, std::int64_t n, RoundingStats* stats,
                   GradientHistogram* hist, GradientHistogram* blockScales) override;
    float amax(const float* src, std::int64_t n) override;
    bool convolutionForward(const ConvGeometry& g, std::int64_t outChannels, const float* x, const float* w,
                            float* y, GemmPrecision p) override;
    bool convolutionBackwardData(const ConvGeometry& g, std::int64_t outChannels, const float* w, const float* dy,
                                 float* dx, GemmPrecision p) override;
    bool convolutionBackwardFilter(const ConvGeometry& g, std::int64_t outChannels, const float* x, const float* dy,
                                   float* dw, GemmPrecision p) override;
    void addBiasRound(Format f, float* x, std::int64_t n, const float* bias, std::int64_t period, std::int64_t repeat,
                      RoundingStats* stats, GradientHistogram* hist) override;
    void relu(float* x, std::int64_t n) override;
    void reluBackward(const float* y, float* g, std::int64_t n) override;
    void maxPool2x2(const float* in, std::int64_t planes, std::int64_t H, std::int64_t W, float* out,
                    std::uint8_t* argmax) override;
    void maxPool2x2Backward(const float* g, const std::uint8_t* argmax, std::int64_t planes, std::int64_t H,
                            std::int64_t W, float* dx) override;
    void transposeBlocks(const float* in, std::int64_t A, std::int64_t B, std::int64_t inner, float* out) override;
    void sumRows(const float* x, std::int64_t rows, std::int64_t cols, float* out) override;
    void sumColumns(const float* x, std::int64_t rows, std::int64_t cols, float* out) override;
    LossResult softmaxCrossEntropy(const float* logits, const std::uint8_t* labels, std::int64_t N,
                                   std::int64_t classes, Format emulate, float* probabilities) override;
    void softmaxCrossEntropyBackward(const float* probabilities, const std::uint8_t* labels, std::int64_t N,
                                     std::int64_t classes, float lossScale, float* grad) override;
    // Packed 16-bit tensors on the "device": the CPU's ops on them, every pointer checked.
    void relu16(Format f, std::uint16_t* x, std::int64_t n) override;
    void reluBackward16(Format f, const std::uint16_t* y, std::uint16_t* g, std::int64_t n) override;
    void maxPool2x2Packed(Format f, const std::uint16_t* in, std::int64_t planes, std::int64_t H, std::int64_t W,
                          std::uint16_t* out, std::uint8_t* argmax) override;
    void maxPool2x2BackwardPacked(const std::uint16_t* g, const std::uint8_t* argmax, std::int64_t planes,
                                  std::int64_t H, std::int64_t W, std::uint16_t* dx) override;
    void transposeBlocksPacked(const std::uint16_t* in, std::int64_t A, std::int64_t B, std::int64_t inner,
                               std::uint16_t* out) override;
    void widen16(Format f, const std::uint16_t* src, std::int64_t srcLd, float* dst, std::int64_t dstLd,
                 std::int64_t rows, std::int64_t cols) override;
    void roundTo16(Format f, const float* src, std::int64_t srcLd, std::uint16_t* dst, std::int64_t dstLd,
                   std::int64_t rows, std::int64_t cols, RoundingStats* stats, GradientHistogram* hist) override;
    void addBiasRoundTo16(Format f, const float* x, std::int64_t xLd, const float* bias, std::uint16_t* out,
                          std::int64_t outLd, std::int64_t rows, std::int64_t cols, RoundingStats* stats,
                          GradientHistogram* hist) override;
    void sumRows16(Format f, const std::uint16_t* x, std::int64_t rows, std::int64_t cols, float* out) override;
    void im2colPacked(const ConvGeometry& g, Format f, const std::uint16_t* src, std::int64_t n0, std::int64_t count,
                      float* cols) override;
    void im2col16(const ConvGeometry& g, const std::uint16_t* src, std::int64_t n0, std::int64_t count,
                  std::uint16_t* cols) override;
    void gemm16(Transpose ta, Transpose tb, std::int64_t M, std::int64_t N, std::int64_t K, const std::uint16_t* A,
                std::int64_t lda, const std::uint16_t* B, std::int64_t ldb, float beta, float* C, std::int64_t ldc,
                GemmPrecision p) override;
    void convolutionForward16(const ConvGeometry& g, std::int64_t outChannels, const std::uint16_t* x, std::int64_t n0,
                              std::int64_t count, const std::uint16_t* w, float* y, GemmPrecision p) override;
    void convolutionBackwardData16(const ConvGeometry& g, std::int64_t outChannels, const std::uint16_t* dy,
                                   std::int64_t n0, std::int64_t count, const std::uint16_t* w, float* dx,
                                   GemmPrecision p) override;
    void convolutionBackwardFilter16(const ConvGeometry& g, std::int64_t outChannels, const std::uint16_t* x,
                                     const std::uint16_t* dy, std::int64_t n0, std::int64_t count, float beta, float* dw,
                                     GemmPrecision p) override;
    void patchify(const float* images, std::int64_t N, std::int64_t side, std::int64_t patch, float* out) override;
    void addPeriodic(float* x, std::int64_t n, const float* add, std::int64_t period) override;
    void sumPeriodic(const float* x, std::int64_t n, std::int64_t period, float* out) override;
    void layerNorm(Format emulate, const float* x, std::int64_t rows, std::int64_t D, const float* gamma,
                   const float* beta, float eps, float* y, float* xhat, float* rstd, float* sumOfSquares) override;
    void layerNormBackward(const float* g, const float* xhat, const float* rstd, const float* gamma,
                           std::int64_t rows, std::int64_t D, float* dx, float* dgamma, float* dbeta) override;
    void softmaxRows(Format emulate, const float* s, std::int64_t rows, std::int64_t T, float* p) override;
    void softmaxRowsBackward(const float* p, float* g, std::int64_t rows, std::int64_t T) override;
    void gelu(const float* x, float* y, std::int64_t n) override;
    void geluBackward(const float* x, float* g, std::int64_t n) override;
    void add(const float* a, const float* b, float* y, std::int64_t n) override;
    void scale(float* x, std::int64_t n, float factor) override;
    void meanTokens(const float* x, std::int64_t N, std::int64_t T, std::int64_t D, float* y) override;
    void meanTokensBackward(const float* g, std::int64_t N, std::int64_t T, std::int64_t D, float* dx) override;
    SweepResult gradientSweep(const std::vector<GradientView>& views, float multiplier, SweepSquares squares) override;
    void sgdUpdate(const SgdScalars& s, UpdateFormats f, float* w, const float* g, float* buffer, std::int64_t n,
                   UpdateCounts* counts) override;
    void adamUpdate(const AdamScalars& s, UpdateFormats f, float* w, const float* g, float* m, float* v, std::int64_t n,
                    UpdateCounts* counts) override;

private:
    // Counts the backend owes one host struct until flush(): the struct as the first op
    // saw it, and what flush() adds to it.
    template <typename Counts>
    struct HeldCounts {
        Counts before;
        Counts owed;
    };
    template <typename Counts>
    using Pending = std::map<Counts*, HeldCounts<Counts>>;

    void need(const float* p, std::int64_t count, const char* what)
    {
        device_.require(p, static_cast<std::size_t>(count) * sizeof(float), what);
    }
    void need16(const std::uint16_t* p, std::int64_t count, const char* what)
    {
        ++packedCalls_;
        device_.require(p, static_cast<std::size_t>(count) * sizeof(std::uint16_t), what);
    }
    // The elements a (rows, cols) block with leading dimension ld spans.
    static std::int64_t spanOf(std::int64_t rows, std::int64_t cols, std::int64_t ld)
    {
        return rows > 0 && cols > 0 ? (rows - 1) * ld + cols : 0;
    }
    // Where the CPU op adds the counts owed to `target` (null stays null).
    template <typename Counts>
    static Counts* held(Pending<Counts>& pending, Counts* target);
    // A struct that changed since its first op was read and reset, or freed and its memory
    // reused, while counts were owed to it: reported, and not written.
    template <typename Counts>
    void deliver(Pending<Counts>& pending, const char* what);

    static bool sixteenBit(const GemmPrecision& p) { return !p.fp8() && packable16(p.compute) && p.fp32Accumulate; }
    // Checks a 16-bit library call's pointers and that it was allowed (reported if not);
    // true when it may run.
    bool acceptConvolution16(BackendOp op, const GemmPrecision& p, const char* name);
    // Counts a library convolution as run or as refused; true when it runs.
    bool acceptLibraryCall(bool refuse);
    // For FP8 operands (p.fp8()): counts the product and checks both operands, each a
    // (rows, cols) matrix with leading dimension ld as stored. Call with host access.
    struct Stored {
        const float* data;
        std::int64_t rows, cols, ld;
    };
    void checkFp8(const GemmPrecision& p, Stored a, Stored b, const char* op);

    std::unique_ptr<ComputeBackend> cpu_;
    ConvolutionLibrary library_ = ConvolutionLibrary::none;
    int libraryCalls_ = 0;
    int libraryRefusals_ = 0;
    int fp8Products_ = 0;
    int packedCalls_ = 0;
    bool offers16_ = false, libraryAllowed_ = false;
    int convolution16Calls_ = 0;
    std::vector<float> lowered_;   // the "library's" own workspace (host memory, as cuDNN's is its own)
    std::unique_ptr<TrackingAllocator> ownDevice_;
    TrackingAllocator& device_;
    BackendInfo info_;
    int flushes_ = 0;
    Pending<RoundingStats> stats_;
    Pending<GradientHistogram> hists_;
    Pending<UpdateCounts> updates_;
    RoundingObserver observer_;
};

}  // namespace plab::testing
