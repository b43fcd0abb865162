// The element-wise arithmetic of the optimizers and of gradient unscaling on host memory:
// PyTorch's SGD and Adam update equations op for op, each op computing in fp32 and
// rounding once when it writes a tensor of format f (fp32 beside masters, else the
// fp16/bf16 of model.half()), the final rounded and counted update, and the gradient
// sweep of GradScaler.unscale_ / clip_grad_norm_. The CPU backend runs these; the CUDA
// plugin's kernels repeat them per element (backend/cuda/kernel_math.h) and are checked
// against them.
#pragma once

#include "numerics/format.h"
#include "numerics/rounding_stats.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

// std::fma is one instruction on CPUs with FMA3 and a libm call elsewhere; loops that
// use it get an FMA3 clone picked at load time. Results are identical either way: fma
// is exactly rounded in hardware and in libm. Not under ThreadSanitizer: the clones'
// resolver runs while the loader relocates, before TSan's runtime exists, and gcc
// instruments it (a crash at load). Not with clang either (the fuzz build's): clang 16
// leaves the clones' calls to functions of an anonymous namespace unresolved at link time.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(__FMA__) && !defined(__SANITIZE_THREAD__)
#define PLAB_FMA_CLONES __attribute__((target_clones("fma", "default")))
#else
#define PLAB_FMA_CLONES
#endif

namespace plab {

// What one optimizer step did to a parameter's stored weights and to its optimizer state.
struct UpdateCounts {
    std::int64_t nonzero = 0;     // elements whose computed update was nonzero
    std::int64_t lost = 0;        // ... and whose stored weight did not change
    std::int64_t nonFinite = 0;   // finite weights that the update made inf or NaN
    // Optimizer-state elements (SGD's buffer, Adam's m and v, each element of each): those
    // the step left at 0 where fp32 arithmetic from the same inputs gives a nonzero value
    // (the state's format flushed it: fp16's second moments below 2^-24), and those finite
    // before the step and inf or NaN after it.
    std::int64_t stateFlushed = 0;
    std::int64_t stateNonFinite = 0;
    // Gradient accumulation before the step (train/trainer.cpp, optim/grad_accumulation.h):
    // the nonzero contributions its additions after each buffer's first took in, and those
    // that left the buffer unchanged (0 where the run does not accumulate).
    std::int64_t accumulated = 0;
    std::int64_t accumulationLost = 0;
    UpdateCounts& operator+=(const UpdateCounts& o)
    {
        nonzero += o.nonzero;
        lost += o.lost;
        nonFinite += o.nonFinite;
        stateFlushed += o.stateFlushed;
        stateNonFinite += o.stateNonFinite;
        accumulated += o.accumulated;
        accumulationLost += o.accumulationLost;
        return *this;
    }
    // Of the elements with a nonzero update, the share whose stored weight did not change;
    // empty when no update was nonzero (see underflowShare in rounding_stats.h).
    std::optional<double> lostShare() const
    {
        if (nonzero <= 0) return std::nullopt;
        return shareOf(static_cast<std::uint64_t>(lost), static_cast<std::uint64_t>(nonzero));
    }
    // Of the accumulation's nonzero contributions, the share that changed nothing; empty where
    // it took in none.
    std::optional<double> accumulationLostShare() const
    {
        if (accumulated <= 0) return std::nullopt;
        return shareOf(static_cast<std::uint64_t>(accumulationLost), static_cast<std::uint64_t>(accumulated));
    }
    bool operator==(const UpdateCounts&) const = default;
};

// Rounds what one elementwise op wrote into a tensor of format f. PyTorch's kernels on
// fp16/bf16 tensors compute in fp32 ("opmath") and round once when they store.
void roundWritten(Format f, float* x, std::size_t n);

// How an optimizer's write to the weights rounds (PrecisionRecipe::updateRounding):
// nearest, as PyTorch's `param.add_` on a 16-bit tensor; stochastic, up or down with the
// probabilities that make its expectation exact (numerics/update_rounding.h); kahan, a
// compensation buffer in the weights' format carries what each write's rounding lost into
// the next (Zamirai et al. 2020, "Revisiting BFloat16 Training", algorithm 2).
enum class UpdateRounding : std::uint8_t { nearest, stochastic, kahan };
std::string_view updateRoundingName(UpdateRounding r);              // "nearest", "stochastic", "kahan"
std::optional<UpdateRounding> parseUpdateRounding(std::string_view name);

// The rounding of one tensor's weights write in one optimizer step.
struct WeightWrite {
    UpdateRounding rounding = UpdateRounding::nearest;
    std::uint64_t key = 0;           // stochastic: update_rounding::stepKey(seed, step, tensor)
    // kahan: (n) the compensation, in the weights' format, held as fp32 values (a compensation
    // held packed is UpdateTensors::compensation).
    float* compensation = nullptr;
    bool operator==(const WeightWrite&) const = default;
};

// p[i] = round_f(p[i] + alpha * direction[i]) for i < n, computed as one fused
// multiply-add in fp32 (what `param.add_(d, alpha=a)` and `addcdiv_` compile to on the
// GPU), rounded once to f when stored, by `write`'s rounding; `first` is the index of p[0]
// in its tensor (the element's random bits), and write.compensation (kahan) is p[0]'s
// compensation. The update alpha * direction[i] is evaluated in double (exact for two
// floats) to tell a zero update from a lost one: lost when the stored weight did not change
// (and, for kahan, neither did the compensation, so nothing of it is kept for a later step).
void applyUpdate(Format f, float* p, const float* direction, float alpha, std::size_t n, UpdateCounts& counts,
                 const WeightWrite& write = {}, std::size_t first = 0);

// The formats one optimizer step writes: the weights and their gradient (fp32
// beside masters, else the storage format), and the optimizer state (momentum, Adam's
// moments and its `denom`), which a recipe may set apart from the weights; and how the
// write to the weights rounds.
struct UpdateFormats {
    UpdateFormats() = default;
    UpdateFormats(Format both) : weights(both), state(both) {}   // NOLINT: one format for all, PyTorch's rule
    UpdateFormats(Format w, Format s) : weights(w), state(s) {}
    Format weights = Format::fp32;
    Format state = Format::fp32;
    WeightWrite write;
    bool operator==(const UpdateFormats&) const = default;
};

// The Python scalars of one SGD step as the fp32 opmath values the kernels receive.
struct SgdScalars {
    float momentum = 0.0f;
    float negLr = 0.0f;
    bool useMomentum = false;   // PyTorch keeps no buffer without momentum
    bool firstStep = false;     // buf = clone(grad) instead of buf.mul_(momentum).add_(grad)
};

// torch.optim.SGD (momentum, no dampening, no weight decay) on n elements: the weights
// (format f.weights) and the buffer (f.state) updated in place, counts added. The first
// step's clone(grad) is stored in the buffer's format.
void sgdUpdate(const SgdScalars& s, UpdateFormats f, float* weights, const float* grad, float* buffer, std::size_t n,
               UpdateCounts& counts);

// The Python scalars of one Adam step as fp32 opmath values.
struct AdamScalars {
    float beta1 = 0.0f, oneMinusBeta1 = 0.0f, beta2 = 0.0f, oneMinusBeta2 = 0.0f;
    float invBiasCorrection2Sqrt = 0.0f;   // a CUDA division by a Python scalar multiplies by this
    float eps = 0.0f;
    float negStepSize = 0.0f;
};

// torch.optim.Adam (not amsgrad, no weight decay) on n elements: the weights (format
// f.weights) and both moments (f.state; `denom` too, computed from them) updated in place,
// counts added.
void adamUpdate(const AdamScalars& s, UpdateFormats f, float* weights, const float* grad, float* m, float* v,
                std::size_t n, UpdateCounts& counts);

// A tensor an optimizer update reads or writes: its fp32 values, or, for a tensor held
// packed (Tensor::pack), its 16-bit patterns in the format the update writes it in (the
// weights and their gradient f.weights, the moments f.state). At most one is set (none
// for a tensor the update does not have: SGD's buffer without momentum). The optimizers
// hold only their 16-bit state packed (optim/state_tensor.h); the weights and gradients
// they pass are fp32-held.
struct UpdateOperand {
    float* values = nullptr;
    std::uint16_t* bits = nullptr;
};
struct UpdateTensors {
    UpdateOperand weights, grad;   // grad is only read
    UpdateOperand state1, state2;  // SGD's buffer (none without momentum), Adam's m and v
    // Kahan's compensation (in the weights' format) where the write is kahan: held packed
    // here, or as fp32 values here or in UpdateFormats::write.compensation.
    UpdateOperand compensation;
    // Tensors held as fp32 values (a state may be null: none).
    static UpdateTensors held(float* weights, const float* grad, float* state1, float* state2)
    {
        return {{weights, nullptr}, {const_cast<float*>(grad), nullptr}, {state1, nullptr}, {state2, nullptr}, {}};
    }
};

// The same updates on elements [begin, end) of tensors that may be packed (the operands
// point at element 0). Each chunk of a packed operand is widened into an fp32 buffer in L1
// (exact), updated as above, and its results (values of their format) narrowed back, so
// the results, counts and random bits are those of the fp32-held tensors, bit for bit.
// Parts that cover [0, n) give the whole update's results and counts, as each element's
// arithmetic, random bits and compensation are its own, so a backend may share an update
// among threads.
void sgdUpdatePart(const SgdScalars& s, UpdateFormats f, const UpdateTensors& t, std::size_t begin, std::size_t end,
                   UpdateCounts& counts);
void adamUpdatePart(const AdamScalars& s, UpdateFormats f, const UpdateTensors& t, std::size_t begin, std::size_t end,
                    UpdateCounts& counts);

// One gradient tensor for a sweep: its values and the format its tensor stores.
struct GradientView {
    float* data = nullptr;
    std::int64_t size = 0;
    Format format = Format::fp32;
};

struct SweepResult {
    bool nonFinite = false;       // some value was inf or NaN before the multiplication
    double sumOfSquares = 0.0;    // of the values after it, in double
};

// Whether a sweep sums the squares of its results: gradient-norm clipping needs them, the
// unscaling alone does not (in order, the sum was a quarter of an MLP's step).
enum class SweepSquares : std::uint8_t { skipped, summed };

// Over every view: notes non-finite values; when none is found anywhere, multiplies
// every value by `multiplier` in fp32 (skipped when it is 1) rounding the products to
// the view's format, and where `squares` says so sums the squares of the results in
// double, view by view in order (else sumOfSquares stays 0). When a non-finite value is
// found the sum is not computed and the values are left as they were (a device backend
// may have multiplied them: the step is skipped).
SweepResult gradientSweep(const GradientView* views, std::size_t count, float multiplier, SweepSquares squares);

}  // namespace plab
