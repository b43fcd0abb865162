// What the CUDA backend tests share: seeded data over every fp32 class, the kernels emulated
// on the host (element after element through kernel_math.h, so that the device arithmetic
// is checked against the CPU reference without a device), and the build tree's plugin
// opened directly (the test programs live in build/tests, where the engine's loader does
// not look).
#pragma once

#include "backend/backend.h"
#include "backend/cuda/kernel_fp8.h"
#include "backend/cuda/kernel_math.h"
#include "numerics/bulk_round.h"
#include "numerics/format.h"
#include "numerics/minifloat.h"
#include "numerics/quantize.h"
#include "numerics/update_math.h"

#include "test_support.h"

#include <QTest>

#include <dlfcn.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>


using namespace plab;
namespace ck = plab::cudakernels;


namespace {  // internal to each test program; inline, as each program uses only some of them

// splitmix64: the same data on every machine.
using Rng = plab::testing::SplitMix64;

// Values spread over the whole fp32 range plus every special class the rounding counts:
// zeros of both signs, fp32 subnormals, values that under/overflow fp16 and bf16, ties.
inline std::vector<float> telemetryData(std::size_t n, std::uint64_t seed)
{
    Rng rng{seed};
    const float specials[] = {0.0f, -0.0f, std::numeric_limits<float>::infinity(),
                              -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN(),
                              -std::numeric_limits<float>::quiet_NaN(), 1e-45f, -1e-40f, 65504.0f, 65520.0f,
                              -70000.0f, 0x1.0p-25f, 0x1.8p-25f, 0x1.0p-24f, 3.4e38f, -3.39e38f, 1.0f + 0x1.0p-11f};
    std::vector<float> v(n);
    for (std::size_t i = 0; i < n; ++i) {
        if (rng.next() % 8 == 0) {
            v[i] = specials[rng.next() % std::size(specials)];
        } else {
            const double e = -150.0 + 280.0 * rng.uniform();   // 2^-150 .. 2^130: both ends
            const double sign = (rng.next() & 1) ? -1.0 : 1.0;
            v[i] = static_cast<float>(sign * std::exp2(e));
        }
    }
    return v;
}

// The CPU's counts as the CUDA plugin's counters can hold them: those do not measure
// RoundingStats::largestFinite (0, "not measured": a skipped step then names its overflow by
// count, docs/RUN_RECORD.md), so it is compared cleared.
inline RoundingStats asDeviceCounts(RoundingStats s)
{
    s.largestFinite = 0.0f;
    return s;
}

// Counter block -> the engine's structs, the same mapping as CudaBackend::roundArray.
inline void addCounters(const std::vector<std::uint64_t>& c, std::size_t n, RoundingStats& stats, GradientHistogram& hist)
{
    stats.count += n;
    stats.zerosIn += c[ck::kZerosIn];
    stats.underflow += c[ck::kUnderflow];
    stats.subnormal += c[ck::kSubnormal];
    stats.overflow += c[ck::kOverflow];
    stats.nan += c[ck::kNan];
    stats.infIn += c[ck::kInfIn];
    for (int b = 0; b < ck::kHistBins; ++b) hist.bins[static_cast<std::size_t>(b)] += c[static_cast<std::size_t>(ck::kHistFirst + b)];
    hist.zeros += c[ck::kHistZeros];
    hist.nonFinite += c[ck::kHistNonFinite];
}

// What the rounding kernel computes, one element after the other on the host.
inline void emulateRoundKernel(Format f, const std::vector<float>& in, std::vector<float>& out, RoundingStats& stats,
                        GradientHistogram& hist)
{
    std::vector<std::uint64_t> counters(ck::kCounterSlots, 0);
    out.resize(in.size());
    for (std::size_t i = 0; i < in.size(); ++i) {
        const std::uint32_t u = std::bit_cast<std::uint32_t>(in[i]);
        const std::uint32_t r = ck::roundBits(static_cast<int>(f), u);
        out[i] = std::bit_cast<float>(r);
        for (unsigned mask = ck::statMask(static_cast<int>(f), u, r); mask != 0; mask &= mask - 1)
            ++counters[static_cast<std::size_t>(std::countr_zero(mask))];
        ++counters[static_cast<std::size_t>(ck::histogramSlot(u))];
    }
    addCounters(counters, in.size(), stats, hist);
}

// What the FP8 quantisation kernels compute (fp8_kernels.cu), element after element on the
// host: the values q * scaleInv into out, and, where codes is given, q's code into it;
// returns the amax it folds.
inline float emulateQuantizeFp8Kernel(MiniFormat f, const std::vector<float>& in, float scale, float scaleInv,
                               std::vector<float>& out, RoundingStats& stats, GradientHistogram& hist,
                               std::vector<std::uint8_t>* codes = nullptr)
{
    const ck::Fp8Rule rule = ck::fp8Rule(static_cast<int>(f));
    std::vector<std::uint64_t> counters(ck::kCounterSlots, 0);
    std::uint32_t key = 0;
    out.resize(in.size());
    if (codes) codes->resize(in.size());
    for (std::size_t i = 0; i < in.size(); ++i) {
        key = std::max(key, ck::amaxKey(in[i]));
        const ck::Fp8Element e = ck::fp8Element(rule, in[i], scale);
        out[i] = ck::mulRn(e.q, scaleInv);
        if (codes) (*codes)[i] = ck::fp8Code(static_cast<int>(f), e.q);
        for (unsigned mask = e.statMask; mask != 0; mask &= mask - 1)
            ++counters[static_cast<std::size_t>(std::countr_zero(mask))];
        ++counters[static_cast<std::size_t>(ck::histogramSlot(ck::floatBits(e.x)))];
    }
    addCounters(counters, in.size(), stats, hist);
    return ck::amaxFromKey(key);
}

// Every value of FP8 format f divided by `scale` (as quantisation sees them), with what sits
// at and next to its rounding boundaries: each value, its fp32 neighbours, the midpoint to
// the next value (a tie) and the midpoint's neighbours, both signs; then values beyond the
// largest (saturation), half the smallest subnormal (a tie to zero), infinities and NaN.
inline std::vector<float> fp8Boundaries(MiniFormat f, float scale)
{
    std::vector<float> values;
    std::vector<float> finite;
    for (unsigned c = 0; c < 128; ++c) {
        const float v = decodeMini(f, static_cast<std::uint8_t>(c));
        if (std::isfinite(v)) finite.push_back(v);
    }
    std::sort(finite.begin(), finite.end());
    const float maxFinite = finite.back();
    for (std::size_t i = 0; i < finite.size(); ++i) {
        const float v = finite[i];
        // Past the largest: the next value the format would have (E4M3 480: the tie 464).
        const float next = i + 1 < finite.size() ? finite[i + 1] : 2 * v - finite[i - 1];
        const float mid = (v + next) / 2;   // exact: both are short
        for (float x : {v, std::nextafter(v, 0.0f), std::nextafter(v, std::numeric_limits<float>::infinity()), mid, std::nextafter(mid, 0.0f),
                        std::nextafter(mid, std::numeric_limits<float>::infinity())})
            for (float sign : {1.0f, -1.0f}) values.push_back(sign * x / scale);
    }
    const float inf = std::numeric_limits<float>::infinity();
    for (float x : {maxFinite * 4.0f, 1e30f, finite[1] / 2, finite[1] / 4, inf, -inf,
                    std::numeric_limits<float>::quiet_NaN(), 0.0f, -0.0f})
        values.push_back(x / scale);
    return values;
}

// The data of a per-tensor quantisation test: every rounding boundary of the format at
// this scale, then `spread` telemetry-like values (every special class), and the op.
inline std::pair<std::vector<float>, QuantizeOp> quantizeCase(int format, float scale, std::size_t spread, std::uint64_t seed)
{
    std::vector<float> in = fp8Boundaries(static_cast<MiniFormat>(format), scale);
    const std::vector<float> more = telemetryData(spread, seed + static_cast<std::uint64_t>(format));
    in.insert(in.end(), more.begin(), more.end());
    QuantizeOp op;
    op.element = static_cast<MiniFormat>(format);
    op.scale = scale;
    op.scaleInv = 1.0f / scale;
    return {std::move(in), op};
}

// ---- The step kernels on the host (kernels.cu / step_kernels.cu, thread by thread) --------

// addBiasRound: the bias added in fp32, then rounded and counted; fp32 is no rounding site.
inline void emulateAddBiasRound(Format f, std::vector<float>& x, const std::vector<float>& bias, std::int64_t period,
                         std::int64_t repeat, RoundingStats& stats, GradientHistogram& hist)
{
    std::vector<std::uint64_t> counters(ck::kCounterSlots, 0);
    for (std::size_t i = 0; i < x.size(); ++i) {
        const float b = bias[static_cast<std::size_t>(ck::biasIndex(static_cast<std::int64_t>(i), period, repeat))];
        const std::uint32_t u = ck::floatBits(ck::addRn(x[i], b));
        const std::uint32_t r = ck::roundBits(static_cast<int>(f), u);
        x[i] = ck::floatFromBits(r);
        for (unsigned mask = ck::statMask(static_cast<int>(f), u, r); mask != 0; mask &= mask - 1)
            ++counters[static_cast<std::size_t>(std::countr_zero(mask))];
        ++counters[static_cast<std::size_t>(ck::histogramSlot(u))];
    }
    if (f != Format::fp32) addCounters(counters, x.size(), stats, hist);
}

// maxPool2x2 forward (one thread per output) and backward (one thread per input).
inline void emulateMaxPool(const ck::PoolShape& s, const std::vector<float>& in, std::vector<float>& out,
                    std::vector<std::uint8_t>& argmax)
{
    const std::int64_t total = s.planes * s.outHeight() * s.outWidth();
    out.assign(static_cast<std::size_t>(total), 0.0f);
    argmax.assign(static_cast<std::size_t>(total), 0);
    for (std::int64_t o = 0; o < total; ++o) {
        const float* w = in.data() + ck::poolWindowStart(s, o);
        const float v[4] = {w[0], w[1], w[s.width], w[s.width + 1]};
        const int best = ck::poolWinner(v);
        out[static_cast<std::size_t>(o)] = v[best];
        argmax[static_cast<std::size_t>(o)] = static_cast<std::uint8_t>(best);
    }
}

inline void emulateMaxPoolBackward(const ck::PoolShape& s, const std::vector<float>& g, const std::vector<std::uint8_t>& argmax,
                            std::vector<float>& dx)
{
    dx.assign(static_cast<std::size_t>(s.planes * s.height * s.width), 0.0f);
    for (std::size_t i = 0; i < dx.size(); ++i) {
        int position = 0;
        const std::int64_t o = ck::poolOutputOf(s, static_cast<std::int64_t>(i), &position);
        dx[i] = (o >= 0 && argmax[static_cast<std::size_t>(o)] == position) ? g[static_cast<std::size_t>(o)] : 0.0f;
    }
}

// Softmax cross-entropy: one "thread" per row, then the total in row order.
inline LossResult emulateSoftmax(Format emulate, const std::vector<float>& logits, const std::vector<std::uint8_t>& labels,
                          std::int64_t classes, std::vector<float>& prob)
{
    const auto N = static_cast<std::int64_t>(labels.size());
    prob.assign(logits.size(), 0.0f);
    std::vector<double> rowResults(labels.size());
    LossResult result;
    for (std::int64_t n = 0; n < N; ++n) {
        const float* row = logits.data() + n * classes;
        float* p = prob.data() + n * classes;
        const int label = labels[static_cast<std::size_t>(n)];
        result.correct += ck::predictsLabel(row, classes, label) ? 1 : 0;
        rowResults[static_cast<std::size_t>(n)] =
            emulate == Format::fp32 ? ck::softmaxRowFp32(row, classes, label, p)
                                    : ck::softmaxRowEmulated(static_cast<int>(emulate), row, classes, label, p);
    }
    result.loss = emulate == Format::fp32 ? ck::lossMeanFp32(rowResults.data(), N)
                                          : ck::lossMeanEmulated(static_cast<int>(emulate), rowResults.data(), N);
    return result;
}

inline void emulateSoftmaxBackward(const std::vector<float>& prob, const std::vector<std::uint8_t>& labels,
                            std::int64_t classes, float lossScale, std::vector<float>& grad)
{
    const float batch = static_cast<float>(labels.size());
    grad.resize(prob.size());
    for (std::size_t i = 0; i < prob.size(); ++i) {
        const bool isLabel = static_cast<std::int64_t>(i) % classes == labels[i / static_cast<std::size_t>(classes)];
        grad[i] = ck::softmaxGradient(prob[i], isLabel, batch, lossScale);
    }
}

inline void addUpdateMask(UpdateCounts& counts, unsigned mask)
{
    counts.nonzero += (mask >> ck::kUpdateNonzero) & 1u;
    counts.lost += (mask >> ck::kUpdateLost) & 1u;
    counts.nonFinite += (mask >> ck::kUpdateNonFinite) & 1u;
    counts.stateFlushed += ((mask >> ck::kUpdateStateFlushed) & 1u) + ((mask >> ck::kUpdateStateFlushed2) & 1u);
    counts.stateNonFinite += ((mask >> ck::kUpdateStateNonFinite) & 1u) + ((mask >> ck::kUpdateStateNonFinite2) & 1u);
}

// The kernels' rule for f's weights write (its compensation is passed apart: the kernel's own).
inline ck::WeightWriteRule ruleOf(const UpdateFormats& f)
{
    return ck::WeightWriteRule{static_cast<int>(f.write.rounding), static_cast<unsigned long long>(f.write.key)};
}

// One optimizer update, element after element (buffer may be empty without momentum;
// comp is Kahan's compensation, empty otherwise).
inline UpdateCounts emulateSgd(const SgdScalars& s, UpdateFormats f, std::vector<float>& w, const std::vector<float>& g,
                        std::vector<float>& buffer, std::vector<float>* comp = nullptr)
{
    const ck::SgdStep step{s.momentum, s.negLr, s.useMomentum, s.firstStep};
    UpdateCounts counts;
    for (std::size_t i = 0; i < w.size(); ++i) {
        float buf = buffer.empty() ? 0.0f : buffer[i];
        addUpdateMask(counts, ck::sgdElement(step, static_cast<int>(f.weights), static_cast<int>(f.state), w[i], g[i], buf,
                                             ruleOf(f), i, comp ? comp->data() + i : nullptr));
        if (!buffer.empty()) buffer[i] = buf;
    }
    return counts;
}

inline UpdateCounts emulateAdam(const AdamScalars& s, UpdateFormats f, std::vector<float>& w, const std::vector<float>& g,
                         std::vector<float>& m, std::vector<float>& v, std::vector<float>* comp = nullptr)
{
    const ck::AdamStep step{s.beta1, s.oneMinusBeta1, s.beta2, s.oneMinusBeta2, s.invBiasCorrection2Sqrt, s.eps,
                            s.negStepSize};
    UpdateCounts counts;
    for (std::size_t i = 0; i < w.size(); ++i)
        addUpdateMask(counts, ck::adamElement(step, static_cast<int>(f.weights), static_cast<int>(f.state), w[i], g[i], m[i],
                                              v[i], ruleOf(f), i, comp ? comp->data() + i : nullptr));
    return counts;
}

// The gradient sweep: the flag over every view first, then scale and square view by view
// (the device sums each view's squares in a tree; here in order, as the CPU does).
inline SweepResult emulateSweep(std::vector<std::vector<float>>& views, const std::vector<Format>& formats, float multiplier)
{
    SweepResult result;
    for (const auto& v : views)
        for (float x : v) result.nonFinite = result.nonFinite || !ck::isFiniteFloat(x);
    if (result.nonFinite) return result;
    for (std::size_t k = 0; k < views.size(); ++k) {
        double sum = 0.0;
        for (float& x : views[k]) {
            if (multiplier != 1.0f) x = ck::sweepScaled(static_cast<int>(formats[k]), x, multiplier);
            sum += ck::squareRn(static_cast<double>(x));
        }
        result.sumOfSquares += sum;
    }
    return result;
}

// Adam's scalars at step t, as engine/optim/adam.cpp computes them from Python floats.
inline AdamScalars adamScalars(int step, double lr = 1e-3, double beta1 = 0.9, double beta2 = 0.999, double eps = 1e-8)
{
    const double bc1 = 1.0 - std::pow(beta1, step), bc2 = 1.0 - std::pow(beta2, step);
    return {static_cast<float>(beta1), static_cast<float>(1.0 - beta1),   static_cast<float>(beta2),
            static_cast<float>(1.0 - beta2), 1.0f / static_cast<float>(std::sqrt(bc2)), static_cast<float>(eps),
            static_cast<float>(-(lr / bc1))};
}

// Values of format f for optimizer tests: mostly spread over [2^-30, 2^10] with both signs,
// and about one in six from `specials` (zeros, NaN, the format's edges, ...).
inline std::vector<float> valuesWithSpecials(Format f, std::size_t n, std::uint64_t seed, const std::vector<float>& specials)
{
    Rng rng{seed};
    std::vector<float> v(n);
    for (auto& x : v) {
        if (rng.next() % 6 == 0) {
            x = specials[rng.next() % specials.size()];
        } else {
            const double e = -30.0 + 40.0 * rng.uniform();
            x = static_cast<float>(((rng.next() & 1) ? -1.0 : 1.0) * std::exp2(e));
        }
        x = roundTo(f, x);   // a tensor of format f holds only its values
    }
    return v;
}

// Equal as stored values: the same bits, or NaN on both sides (a NaN's payload and sign
// are not part of any op's contract: x86 and CUDA make different default NaNs).
inline bool sameValues(const std::vector<float>& a, const std::vector<float>& b)
{
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (!(std::isnan(a[i]) && std::isnan(b[i])) && std::bit_cast<std::uint32_t>(a[i]) != std::bit_cast<std::uint32_t>(b[i]))
            return false;
    return true;
}

inline bool sameBits(const std::vector<float>& a, const std::vector<float>& b)
{
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// The plugin as the engine would load it, found next to this test or next to `plab` in
// the build tree (the test does not sit beside it). Kept open for the process's life.
struct Plugin {
    std::string path;
    std::string error;   // why it could not be loaded; empty when loaded or absent
    void* handle = nullptr;
    PlabCudaProbeFn probe = nullptr;
    PlabCudaCreateBackendFn create = nullptr;
};

inline const Plugin& plugin()
{
    static const Plugin p = [] {
        Plugin r;
        const std::filesystem::path candidates[] = {
            std::filesystem::path(QCoreApplication::applicationDirPath().toStdString()) / "libplab_cuda.so",
            std::filesystem::path(PLAB_BINARY_DIR) / "app" / "libplab_cuda.so"};
        for (const auto& c : candidates)
            if (std::filesystem::exists(c)) {
                r.path = c.string();
                break;
            }
        if (r.path.empty()) return r;
        r.handle = dlopen(r.path.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (!r.handle) {
            const char* e = dlerror();
            r.error = e ? e : "dlopen failed";
            return r;
        }
        r.probe = reinterpret_cast<PlabCudaProbeFn>(dlsym(r.handle, PLAB_CUDA_PROBE_SYMBOL));
        r.create = reinterpret_cast<PlabCudaCreateBackendFn>(dlsym(r.handle, PLAB_CUDA_CREATE_BACKEND_SYMBOL));
        return r;
    }();
    return p;
}

// Where a CUDA backend can come from: the engine's own loader, else the build tree's plugin.
inline BackendInfo probeAnyCuda()
{
    BackendInfo engine = probeCudaBackend();
    if (engine.available || !plugin().probe) return engine;
    BackendInfo direct;
    plugin().probe(&direct);
    return direct;
}

// ---- Data for the op tests (tst_cuda_op_math, tst_cuda_backend) ----------------------------

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// Gradients of format f over what an optimizer meets: zeros, values that underflow fp16
// (1e-8, below half its smallest subnormal 2^-24), its smallest subnormal, its largest
// value, NaN and inf.
inline std::vector<float> gradients(Format f, std::size_t n, std::uint64_t seed)
{
    return valuesWithSpecials(f, n, seed, {0.0f, -0.0f, 1e-8f, 0x1.0p-24f, 65504.0f, -65504.0f, kNaN, kInf});
}

// Weights of format f: zeros, values whose ulp swallows small updates (2048: fp16's ulp is
// 2), the largest fp16 (an update overflows it), tiny values, NaN.
inline std::vector<float> weights(Format f, std::size_t n, std::uint64_t seed)
{
    return valuesWithSpecials(f, n, seed, {0.0f, -0.0f, 1.0f, 2048.0f, 65504.0f, -65504.0f, 1e-7f, kNaN});
}

inline std::vector<float> uniformValues(std::size_t n, std::uint64_t seed, float lo = -1.0f, float hi = 1.0f)
{
    Rng rng{seed};
    std::vector<float> v(n);
    for (auto& x : v) x = rng.uniform(lo, hi);
    return v;
}

// Labels < classes, seeded.
inline std::vector<std::uint8_t> labelsFor(std::size_t n, std::int64_t classes, std::uint64_t seed)
{
    Rng rng{seed};
    std::vector<std::uint8_t> y(n);
    for (auto& l : y) l = static_cast<std::uint8_t>(rng.next() % static_cast<std::uint64_t>(classes));
    return y;
}

// Logits (N, classes) with rows that stress the loss: random, one dominant logit (its
// neighbours' exponentials underflow), all equal (the first maximum wins), large offsets.
inline std::vector<float> logitsFor(std::int64_t N, std::int64_t classes, std::uint64_t seed)
{
    Rng rng{seed};
    std::vector<float> x(static_cast<std::size_t>(N * classes));
    for (std::int64_t n = 0; n < N; ++n) {
        float* row = x.data() + n * classes;
        for (std::int64_t j = 0; j < classes; ++j) row[j] = rng.uniform(-6.0f, 6.0f);
        if (n % 7 == 1) row[n % classes] = 40.0f;
        if (n % 11 == 2) std::fill(row, row + classes, 0.75f);
        if (n % 13 == 3)
            for (std::int64_t j = 0; j < classes; ++j) row[j] += 300.0f;
    }
    return x;
}

inline bool sameFloat(float a, float b)
{
    return (std::isnan(a) && std::isnan(b)) || std::bit_cast<std::uint32_t>(a) == std::bit_cast<std::uint32_t>(b);
}

// Rows of the addBiasRound tests: every format, in Linear's layout (period out, repeat 1)
// and Conv2d's (period Cout, repeat N*H*W).
inline void addBiasRoundRows(qlonglong convPeriod, qlonglong convRepeat)
{
    QTest::addColumn<int>("format");
    QTest::addColumn<qlonglong>("period");
    QTest::addColumn<qlonglong>("repeat");
    for (Format f : {Format::fp32, Format::tf32, Format::fp16, Format::bf16}) {
        const std::string name(formatName(f));
        QTest::addRow("%s linear", name.c_str()) << static_cast<int>(f) << 10LL << 1LL;
        QTest::addRow("%s conv", name.c_str()) << static_cast<int>(f) << convPeriod << convRepeat;
    }
}

}  // namespace
