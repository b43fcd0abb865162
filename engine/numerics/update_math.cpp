// SGD, Adam, the rounded and counted update, and the gradient sweep on host memory.
//
// SGD follows torch/optim/sgd.py (_single_tensor_sgd, PyTorch 1.13):
//     first step:  buf = clone(grad)
//     later:       buf.mul_(momentum).add_(grad, alpha=1 - dampening)   # dampening 0
//     param.add_(buf, alpha=-lr)
// Adam follows torch/optim/adam.py (_single_tensor_adam, PyTorch 1.13 defaults), op for op:
//     exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
//     exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
//     denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
//     param.addcdiv_(exp_avg, denom, value=-step_size)
// Every tensor op computes in fp32 (PyTorch's "opmath" for fp16/bf16 too) and rounds once
// when it writes its result; with master weights off the weights, moments and gradient
// are fp16/bf16 tensors, so each write rounds to that format. That is why real fp16 Adam
// loses eps: (sqrt(v) / c2).add_(1e-8) stores 0 where v is 0, and an element whose
// gradient has been zero gets 0/0 = NaN. Within an op we follow the CUDA kernels, which
// these recipes model: a division by a Python scalar multiplies by its fp32 reciprocal,
// addcmul_ is self + (value*t1)*t2 and addcdiv_ is self + value*(t1/t2), each sum a fused
// multiply-add (nvcc contracts them). PyTorch's CPU kernels differ from this by at most an
// fp32 rounding per op.
#include "numerics/update_math.h"

#include "numerics/bulk_round.h"
#include "numerics/storage_convert.h"
#include "numerics/update_rounding.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace plab {

namespace {
constexpr std::size_t kChunk = 1024;   // elements per pass; the temporaries stay in L1
}

void roundWritten(Format f, float* x, std::size_t n)
{
    if (f != Format::fp32 && n) roundArray(f, x, n);
}

std::string_view updateRoundingName(UpdateRounding r)
{
    switch (r) {
    case UpdateRounding::nearest: return "nearest";
    case UpdateRounding::stochastic: return "stochastic";
    case UpdateRounding::kahan: return "kahan";
    }
    return "nearest";
}

std::optional<UpdateRounding> parseUpdateRounding(std::string_view name)
{
    for (UpdateRounding r : {UpdateRounding::nearest, UpdateRounding::stochastic, UpdateRounding::kahan})
        if (updateRoundingName(r) == name) return r;
    return std::nullopt;
}

namespace {

namespace ur = update_rounding;
static_assert(static_cast<int>(Format::fp32) == ur::kFp32 && static_cast<int>(Format::tf32) == ur::kTf32 &&
              static_cast<int>(Format::fp16) == ur::kFp16 && static_cast<int>(Format::bf16) == ur::kBf16);
static_assert(static_cast<int>(UpdateRounding::nearest) == ur::kNearest &&
              static_cast<int>(UpdateRounding::stochastic) == ur::kStochastic &&
              static_cast<int>(UpdateRounding::kahan) == ur::kKahan);

// Whether x is finite, on its bits (no branch: the counting loops below vectorise).
inline bool finiteBits(float x) { return (bitsOf(x) & 0x7F800000u) != 0x7F800000u; }

// One optimizer-state element's step: flushed when `shadow`, the fp32 arithmetic of the
// step from the same inputs without the state format's roundings, is nonzero and the stored
// value is 0; made non-finite when it was finite before the step and is not after.
inline void countStateWrite(float shadow, float before, float after, UpdateCounts& counts)
{
    counts.stateFlushed += (shadow != 0.0f) & (after == 0.0f);
    counts.stateNonFinite += finiteBits(before) & !finiteBits(after);
}

// countStateWrite over a chunk; shadow[i] = scaled[i] + grad[i] (SGD's buffer without the
// state's roundings: the stored product plus grad, two roundings, as on the device).
void countStateWrites(const float* scaled, const float* grad, const float* before, const float* after,
                      std::size_t len, UpdateCounts& counts)
{
    std::int32_t flushed = 0, nonFinite = 0;   // len <= kChunk
    for (std::size_t i = 0; i < len; ++i) {
        flushed += (scaled[i] + grad[i] != 0.0f) & (after[i] == 0.0f);
        nonFinite += finiteBits(before[i]) & !finiteBits(after[i]);
    }
    counts.stateFlushed += flushed;
    counts.stateNonFinite += nonFinite;
}

// Which elements' update alpha * d is nonzero, the product taken exactly (as in double,
// where the product of two floats neither rounds nor underflows): a NaN update is nonzero.
// Decided once for alpha, then per element on d alone.
struct NonzeroUpdates {
    enum Rule : std::uint8_t { dNonzero, dNonFinite, every } rule;
    explicit NonzeroUpdates(float alpha)
        : rule(!std::isfinite(alpha) ? every : alpha == 0.0f ? dNonFinite : dNonzero) {}
    // alpha finite and nonzero: d != 0 (NaN included); alpha 0: d inf or NaN (0 * inf is
    // NaN); alpha inf or NaN: every d (inf * 0 is NaN).
    bool operator()(float d) const
    {
        return rule == every || (rule == dNonzero ? d != 0.0f : !finiteBits(d));
    }
};

// What the writes of a chunk counted: a nonzero update, kept (the stored weight changed)
// or lost, finite or not. NaN compares unequal to itself: a NaN weight is never "lost".
void countWrites(float alpha, const float* d, const float* before, const float* after, std::size_t len,
                 UpdateCounts& counts)
{
    const NonzeroUpdates nonzero(alpha);
    std::int32_t n = 0, lost = 0, nonFinite = 0;   // len <= kChunk
    for (std::size_t i = 0; i < len; ++i) {
        const std::int32_t nz = nonzero(d[i]);
        n += nz;
        lost += nz & (after[i] == before[i]);
        // Adam's eps is 0 in fp16: 0/0 makes NaN weights; an overflow makes inf.
        nonFinite += nz & finiteBits(before[i]) & !finiteBits(after[i]);
    }
    counts.nonzero += n;
    counts.lost += lost;
    counts.nonFinite += nonFinite;
}

// One element's write, as countWrites counts it.
void countWrite(const NonzeroUpdates& nonzero, float d, bool lost, float before, float after, UpdateCounts& counts)
{
    if (!nonzero(d)) return;
    ++counts.nonzero;
    if (lost) ++counts.lost;
    if (!finiteBits(after) && finiteBits(before)) ++counts.nonFinite;
}

// w = SR_f(fma(alpha, d, w)) with the element's own random bits.
PLAB_FMA_CLONES void applyStochastic(Format f, float* p, const float* direction, float alpha, std::size_t n,
                                     UpdateCounts& counts, std::uint64_t key, std::size_t first)
{
    const NonzeroUpdates nonzero(alpha);
    for (std::size_t i = 0; i < n; ++i) {
        const float before = p[i];
        const float sum = std::fma(alpha, direction[i], before);
        p[i] = floatFromBits(ur::stochasticRoundBits(static_cast<int>(f), bitsOf(sum), ur::randomBits(key, first + i)));
        countWrite(nonzero, direction[i], p[i] == before, before, p[i], counts);
    }
}

// Kahan-compensated write, each op computing in fp32 and rounding to f when it writes a
// tensor of the weights' format (the compensation `comp`, the weights, `prev`):
//     comp.add_(direction, alpha=alpha)    # comp holds what the weights still owe
//     prev = param.clone(); param.add_(comp)
//     comp.add_(prev.sub_(param))          # minus what the weights took of it
PLAB_FMA_CLONES void applyKahan(Format f, float* p, const float* direction, float alpha, std::size_t n,
                                UpdateCounts& counts, float* comp)
{
    const NonzeroUpdates nonzero(alpha);
    for (std::size_t i = 0; i < n; ++i) {
        const float before = p[i], compBefore = comp[i];
        const float owed = roundTo(f, std::fma(alpha, direction[i], compBefore));
        p[i] = roundTo(f, before + owed);
        const float taken = roundTo(f, before - p[i]);
        comp[i] = roundTo(f, owed + taken);
        countWrite(nonzero, direction[i], p[i] == before && comp[i] == compBefore, before, p[i], counts);
    }
}

}  // namespace

PLAB_FMA_CLONES void applyUpdate(Format f, float* p, const float* direction, float alpha, std::size_t n,
                                 UpdateCounts& counts, const WeightWrite& write, std::size_t first)
{
    if (write.rounding == UpdateRounding::stochastic) return applyStochastic(f, p, direction, alpha, n, counts, write.key, first);
    if (write.rounding == UpdateRounding::kahan) return applyKahan(f, p, direction, alpha, n, counts, write.compensation);
    constexpr std::size_t kBlock = 256;
    std::array<float, kBlock> before;   // (len) written before it is read
    for (std::size_t start = 0; start < n; start += kBlock) {
        const std::size_t len = std::min(kBlock, n - start);
        float* w = p + start;
        const float* d = direction + start;
        for (std::size_t i = 0; i < len; ++i) {
            before[i] = w[i];
            w[i] = std::fma(alpha, d[i], w[i]);
        }
        roundWritten(f, w, len);
        countWrites(alpha, d, before.data(), w, len, counts);
    }
}

namespace {

// One chunk of elements through SGD's op sequence.
void sgdChunk(const SgdScalars& s, UpdateFormats f, const float* gradIn, float* buf, float* weights, std::size_t len,
              UpdateCounts& counts, std::size_t first)
{
    std::array<float, kChunk> grad;   // (len) the gradient as a tensor of the weights' format holds it
    std::copy_n(gradIn, len, grad.data());
    roundWritten(f.weights, grad.data(), len);

    const float* direction = grad.data();
    if (s.useMomentum) {
        std::array<float, kChunk> before, scaled;   // (len) the buffer before, and times momentum in fp32
        std::copy_n(buf, len, before.data());
        if (s.firstStep) {
            std::copy_n(grad.data(), len, buf);   // buf = clone(grad), stored as the state
            roundWritten(f.state, buf, len);
            for (std::size_t i = 0; i < len; ++i) countStateWrite(grad[i], 0.0f, buf[i], counts);
        } else {
            for (std::size_t i = 0; i < len; ++i) buf[i] *= s.momentum;   // buf.mul_(momentum)
            std::copy_n(buf, len, scaled.data());
            roundWritten(f.state, buf, len);
            for (std::size_t i = 0; i < len; ++i) buf[i] += grad[i];      // .add_(grad, alpha=1)
            roundWritten(f.state, buf, len);
            // The fp32 value without the state's roundings: the stored product plus grad
            // (two roundings, as on the device: not contracted into one fma).
            countStateWrites(scaled.data(), grad.data(), before.data(), buf, len, counts);
        }
        direction = buf;
    }
    applyUpdate(f.weights, weights, direction, s.negLr, len, counts, f.write, first);   // param.add_(buf, alpha=-lr)
}

}  // namespace

void sgdUpdate(const SgdScalars& s, UpdateFormats f, float* weights, const float* gradIn, float* buffer, std::size_t n,
               UpdateCounts& counts)
{
    sgdUpdatePart(s, f, UpdateTensors::held(weights, gradIn, s.useMomentum ? buffer : nullptr, nullptr), 0, n, counts);
}

namespace {

// One chunk of elements through Adam's whole op sequence.
PLAB_FMA_CLONES void adamChunk(const AdamScalars& s, UpdateFormats f, const float* gradIn, float* m, float* v,
                               float* weights, std::size_t len, UpdateCounts& counts, std::size_t first)
{
    std::array<float, kChunk> grad;     // (len) the gradient as the weights' format holds it
    std::array<float, kChunk> denom;    // (len) the temporary tensor `denom`, the state's format
    std::array<float, kChunk> ratio;    // (len) exp_avg / denom inside addcdiv_, fp32 opmath
    std::copy_n(gradIn, len, grad.data());
    roundWritten(f.weights, grad.data(), len);

    const Format st = f.state;
    std::array<float, kChunk> mBefore, vBefore;   // (len) the moments before this step
    std::copy_n(m, len, mBefore.data());
    std::copy_n(v, len, vBefore.data());
    for (std::size_t i = 0; i < len; ++i) m[i] *= s.beta1;                                       // exp_avg.mul_
    roundWritten(st, m, len);
    for (std::size_t i = 0; i < len; ++i) m[i] = std::fma(s.oneMinusBeta1, grad[i], m[i]);      // .add_
    roundWritten(st, m, len);
    for (std::size_t i = 0; i < len; ++i) v[i] *= s.beta2;                                       // exp_avg_sq.mul_
    roundWritten(st, v, len);
    for (std::size_t i = 0; i < len; ++i) v[i] = std::fma(s.oneMinusBeta2 * grad[i], grad[i], v[i]);   // .addcmul_
    roundWritten(st, v, len);
    for (std::size_t i = 0; i < len; ++i) {
        countStateWrite(std::fma(s.oneMinusBeta1, grad[i], mBefore[i] * s.beta1), mBefore[i], m[i], counts);
        countStateWrite(std::fma(s.oneMinusBeta2 * grad[i], grad[i], vBefore[i] * s.beta2), vBefore[i], v[i], counts);
    }

    for (std::size_t i = 0; i < len; ++i) denom[i] = std::sqrt(v[i]);                            // exp_avg_sq.sqrt()
    roundWritten(st, denom.data(), len);
    for (std::size_t i = 0; i < len; ++i) denom[i] *= s.invBiasCorrection2Sqrt;                  // / bias_correction2_sqrt
    roundWritten(st, denom.data(), len);
    for (std::size_t i = 0; i < len; ++i) denom[i] += s.eps;                                     // .add_(eps)
    roundWritten(st, denom.data(), len);

    for (std::size_t i = 0; i < len; ++i) ratio[i] = m[i] / denom[i];
    applyUpdate(f.weights, weights, ratio.data(), s.negStepSize, len, counts, f.write, first);  // param.addcdiv_
}

}  // namespace

void adamUpdate(const AdamScalars& s, UpdateFormats f, float* weights, const float* grad, float* m, float* v,
                std::size_t n, UpdateCounts& counts)
{
    adamUpdatePart(s, f, UpdateTensors::held(weights, grad, m, v), 0, n, counts);
}

namespace {

// Elements [start, start + len) of an update operand where the chunk functions read and
// write them: its own fp32 values, or its packed patterns widened into `buffer` (exact);
// nullptr for an operand the update does not have (SGD's buffer without momentum).
float* staged(const UpdateOperand& o, Format f, std::size_t start, std::size_t len, std::array<float, kChunk>& buffer)
{
    if (o.values) return o.values + start;
    if (!o.bits) return nullptr;
    widenArray(f, o.bits + start, buffer.data(), len);
    return buffer.data();
}

// Writes a packed operand's chunk back: its values were rounded to f when written, so
// narrowing them is exact.
void unstage(const UpdateOperand& o, Format f, std::size_t start, std::size_t len, const std::array<float, kChunk>& buffer)
{
    if (o.bits) narrowArray(f, buffer.data(), o.bits + start, len);
}

// Kahan's compensation wherever it is held: the packed or fp32 operand, else the fp32
// values UpdateFormats::write points at.
UpdateOperand compensationOf(const UpdateFormats& f, const UpdateTensors& t)
{
    if (f.write.rounding != UpdateRounding::kahan) return {};
    if (t.compensation.values || t.compensation.bits) return t.compensation;
    return {f.write.compensation, nullptr};
}

// The formats of one chunk's update: the write's compensation is the chunk's.
UpdateFormats forChunk(UpdateFormats f, float* compensation)
{
    f.write.compensation = compensation;
    return f;
}

}  // namespace

void sgdUpdatePart(const SgdScalars& s, UpdateFormats f, const UpdateTensors& t, std::size_t begin, std::size_t end,
                   UpdateCounts& counts)
{
    const UpdateOperand comp = compensationOf(f, t);
    std::array<float, kChunk> w, g, buf, c;   // staged chunks of packed operands, written before read
    for (std::size_t start = begin; start < end; start += kChunk) {
        const std::size_t len = std::min(kChunk, end - start);
        float* weights = staged(t.weights, f.weights, start, len, w);
        const float* grad = staged(t.grad, f.weights, start, len, g);
        float* buffer = s.useMomentum ? staged(t.state1, f.state, start, len, buf) : nullptr;
        sgdChunk(s, forChunk(f, staged(comp, f.weights, start, len, c)), grad, buffer, weights, len, counts, start);
        unstage(t.weights, f.weights, start, len, w);
        if (s.useMomentum) unstage(t.state1, f.state, start, len, buf);
        unstage(comp, f.weights, start, len, c);
    }
}

void adamUpdatePart(const AdamScalars& s, UpdateFormats f, const UpdateTensors& t, std::size_t begin, std::size_t end,
                    UpdateCounts& counts)
{
    const UpdateOperand comp = compensationOf(f, t);
    std::array<float, kChunk> w, g, m, v, c;   // staged chunks of packed operands, written before read
    for (std::size_t start = begin; start < end; start += kChunk) {
        const std::size_t len = std::min(kChunk, end - start);
        float* weights = staged(t.weights, f.weights, start, len, w);
        const float* grad = staged(t.grad, f.weights, start, len, g);
        float* m1 = staged(t.state1, f.state, start, len, m);
        float* m2 = staged(t.state2, f.state, start, len, v);
        adamChunk(s, forChunk(f, staged(comp, f.weights, start, len, c)), grad, m1, m2, weights, len, counts, start);
        unstage(t.weights, f.weights, start, len, w);
        unstage(t.state1, f.state, start, len, m);
        unstage(t.state2, f.state, start, len, v);
        unstage(comp, f.weights, start, len, c);
    }
}

SweepResult gradientSweep(const GradientView* views, std::size_t count, float multiplier, SweepSquares squares)
{
    SweepResult result;
    for (std::size_t k = 0; k < count; ++k) {
        const GradientView& g = views[k];
        // Chunk by chunk, so that the test of each element vectorises and an inf or NaN
        // still ends the sweep early.
        for (std::int64_t start = 0; start < g.size; start += static_cast<std::int64_t>(kChunk)) {
            const std::int64_t end = std::min(g.size, start + static_cast<std::int64_t>(kChunk));
            bool nonFinite = false;
            for (std::int64_t i = start; i < end; ++i) nonFinite |= !finiteBits(g.data[i]);
            if (nonFinite) {
                result.nonFinite = true;
                return result;
            }
        }
    }
    for (std::size_t k = 0; k < count; ++k) {
        const GradientView& g = views[k];
        if (multiplier != 1.0f) {
            for (std::int64_t i = 0; i < g.size; ++i) g.data[i] *= multiplier;
            roundWritten(g.format, g.data, static_cast<std::size_t>(g.size));
        }
        if (squares == SweepSquares::skipped) continue;
        double sum = 0.0;
        for (std::int64_t i = 0; i < g.size; ++i) {
            const double x = g.data[i];
            sum += x * x;
        }
        result.sumOfSquares += sum;
    }
    return result;
}

}  // namespace plab
