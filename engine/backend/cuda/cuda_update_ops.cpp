// CudaBackend's loss-scaling sweep and optimizer updates on device tensors, with the
// arithmetic of engine/numerics/update_math.cpp (per element in kernel_math.h). The sweep
// waits for its result; the updates only enqueue, their counts arrive at flush().
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/kernels.h"

#include <cstring>
#include <stdexcept>

namespace plab::cuda {

namespace ck = cudakernels;

namespace {

// The kernels' form of a WeightWrite; Kahan needs its compensation on the device.
ck::WeightWriteRule writeRule(const WeightWrite& w, std::int64_t n)
{
    if (w.rounding == UpdateRounding::kahan && !w.compensation && n > 0)
        throw std::invalid_argument("A Kahan-compensated update needs its compensation buffer.");
    return ck::WeightWriteRule{static_cast<int>(w.rounding), static_cast<unsigned long long>(w.key)};
}

}  // namespace

SweepResult CudaBackend::gradientSweep(const std::vector<GradientView>& views, float multiplier, SweepSquares squares)
{
    SweepResult result;
    if (views.empty()) return result;
    std::size_t partials = 0;
    for (const GradientView& v : views) {
        if (v.size < 0) throw std::invalid_argument("gradientSweep got a view of negative size.");
        partials += ck::blocksFor(static_cast<std::size_t>(v.size));
    }
    activate();
    // Scratch, in doubles: [0] the non-finite flag, [1, 1 + count) each view's sum of
    // squares, then each view's per-block partial sums.
    const std::size_t count = views.size();
    auto* scratch = sweepScratch_.reserveFor<double>(1 + count + partials);
    auto* flag = reinterpret_cast<unsigned*>(scratch);
    double* sums = scratch + 1;
    double* blockSums = sums + count;
    PLAB_CUDA_CHECK(cudaMemsetAsync(scratch, 0, (1 + count) * sizeof(double), stream()));
    // Flag first, over every view: the multiplication must not start while a later view
    // may still hold an inf or NaN (then no value changes, as on the CPU).
    for (const GradientView& v : views) PLAB_CUDA_CHECK(ck::launchFindNonFinite(v.data, v.size, flag, stream()));
    for (std::size_t k = 0; k < count; ++k) {
        const GradientView& v = views[k];
        PLAB_CUDA_CHECK(ck::launchScaleAndSumSquares(static_cast<int>(v.format), v.data, v.size, multiplier, flag,
                                                     blockSums, sums + k, stream()));
        blockSums += ck::blocksFor(static_cast<std::size_t>(v.size));
    }
    auto* host = results_.reserveFor<double>(1 + count);
    PLAB_CUDA_CHECK(cudaMemcpyAsync(host, scratch, (1 + count) * sizeof(double), cudaMemcpyDeviceToHost, stream()));
    synchronize();
    unsigned nonFinite = 0;
    std::memcpy(&nonFinite, host, sizeof nonFinite);
    if (nonFinite) {
        result.nonFinite = true;
        return result;
    }
    // The kernel sums as it scales (one pass either way); skipped, the sums are left unread.
    if (squares == SweepSquares::summed)
        for (std::size_t k = 0; k < count; ++k) result.sumOfSquares += host[1 + k];   // view by view, as the CPU
    return result;
}

void CudaBackend::sgdUpdate(const SgdScalars& s, UpdateFormats f, float* weights, const float* grad, float* buffer,
                            std::int64_t n, UpdateCounts* counts)
{
    if (n < 0) throw std::invalid_argument("sgdUpdate got a negative size.");
    if (s.useMomentum && !buffer && n > 0) throw std::invalid_argument("SGD with momentum needs its buffer.");
    if (n == 0) return;
    activate();
    unsigned long long* slots = counts ? counters_.updateSlots(counts) : nullptr;
    const ck::SgdStep step{s.momentum, s.negLr, s.useMomentum, s.firstStep};
    PLAB_CUDA_CHECK(ck::launchSgdUpdate(step, static_cast<int>(f.weights), static_cast<int>(f.state), writeRule(f.write, n),
                                        f.write.compensation, weights, grad, buffer, n, slots, stream()));
}

void CudaBackend::adamUpdate(const AdamScalars& s, UpdateFormats f, float* weights, const float* grad, float* m, float* v,
                             std::int64_t n, UpdateCounts* counts)
{
    if (n < 0) throw std::invalid_argument("adamUpdate got a negative size.");
    if (n == 0) return;
    activate();
    unsigned long long* slots = counts ? counters_.updateSlots(counts) : nullptr;
    const ck::AdamStep step{s.beta1, s.oneMinusBeta1, s.beta2, s.oneMinusBeta2, s.invBiasCorrection2Sqrt,
                            s.eps, s.negStepSize};
    PLAB_CUDA_CHECK(ck::launchAdamUpdate(step, static_cast<int>(f.weights), static_cast<int>(f.state), writeRule(f.write, n),
                                         f.write.compensation, weights, grad, m, v, n, slots, stream()));
}

}  // namespace plab::cuda
