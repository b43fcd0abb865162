// What the trainer tells the world: plain value events, copied out of the training loop.
// The CLI prints them, the run recorder stores them, the UI controller turns them into
// queued Qt signals.
#pragma once

#include "backend/backend.h"
#include "nn/model_kinds.h"
#include "nn/parameter.h"
#include "numerics/rounding_stats.h"
#include "telemetry/non_finite_sites.h"
#include "telemetry/telemetry.h"
#include "tensor/memory.h"
#include "train/settings.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace plab {

enum class RunStatus : std::uint8_t { starting, running, paused, completed, stopped, diverged, failed };
std::string_view runStatusName(RunStatus s);
// The status runStatusName calls `name`; nullopt for any other text.
std::optional<RunStatus> parseRunStatus(std::string_view name);

// First event of a run: what runs it.
struct RunStartEvent {
    std::string backend;                 // "cpu"
    std::vector<std::string> versions;   // the backend's libraries, e.g. "OpenBLAS 0.3.21 ..."
    std::int64_t plannedSteps = 0;
    // The arithmetic of the recipe's products and why (ComputeBackend::arithmeticFor):
    // "hardware: AVX-512 BF16 via oneDNN 2.6.3 (...)", "exact: this CPU has no native fp16 ...".
    std::string arithmetic;
    // A device backend's bytes in use before the run placed anything on it (the CUDA
    // context, other processes): what "device in use" minus it leaves is what the run holds.
    std::optional<std::uint64_t> deviceBeforeRun;
    // A probe record's (RunRecord::judgedFormat, sourceAsRun): the format its telemetry was
    // judged against, and what the training ran as; empty for the lab's own runs.
    std::string judgedFormat;
    std::string sourceAsRun;
};

// One optimizer step. A run record keeps each as the trainer sent it, less the progress
// counters (totalSteps and skippedSoFar: 0 there; the summary holds the run's).
struct StepEvent {
    std::int64_t step = 0;        // 1-based count of optimizer steps attempted
    int epoch = 0;                // 0-based
    double loss = 0.0;            // unscaled mean loss of the batch (the model's fp32); NaN where not finite in a record
    double lossScale = 1.0;       // the scale this step used
    bool skipped = false;         // update skipped for non-finite gradients
    double lr = 0.0;
    int batch = 0;                // samples in this step
    double timeMs = 0.0;          // wall time of the step (timing field)
    std::int64_t totalSteps = 0;  // planned steps of the run, for progress
    std::int64_t skippedSoFar = 0;
    // A skipped step's why: the rounding sites that made or met inf/NaN, in the order they
    // ran (empty on steps that were not skipped).
    std::vector<NonFiniteSite> nonFinite;

    bool lossFinite() const { return std::isfinite(loss); }
    // Equal field by field, two losses that are not finite alike (a record keeps no inf).
    bool operator==(const StepEvent& o) const
    {
        const bool sameLoss = loss == o.loss || (std::isnan(loss) && std::isnan(o.loss));
        return sameLoss && step == o.step && epoch == o.epoch && lossScale == o.lossScale && skipped == o.skipped &&
               lr == o.lr && batch == o.batch && timeMs == o.timeMs && totalSteps == o.totalSteps &&
               skippedSoFar == o.skippedSoFar && nonFinite == o.nonFinite;
    }
};

// A test image and a model's reconstruction of it (ModelTask::reconstruct), as 28 x 28
// bytes row by row: the pixel's value in [0, 1] times 255, rounded (a reconstruction's value
// clamped to [0, 1] first: what a picture of it shows).
struct ReconstructedImage {
    std::int64_t testIndex = 0;
    std::vector<std::uint8_t> original, reconstruction;
    bool operator==(const ReconstructedImage&) const = default;
};

struct EvalEvent {
    std::int64_t step = 0;
    int epoch = 0;
    double testAccuracy = 0.0;    // fraction 0..1 (0 for a model that reconstructs)
    double testLoss = 0.0;        // the mean loss: cross-entropy, or an autoencoder's MSE
    // An autoencoder's reconstructions of the first test images (kReconstructedImages).
    std::vector<ReconstructedImage> reconstructions = {};
    bool operator==(const EvalEvent&) const = default;
};
inline constexpr int kReconstructedImages = 8;

// The peak signal-to-noise ratio of a mean squared error of pixels in [0, 1], in dB:
// 10 log10(1 / mse) (of the test set's mean error, not a mean of per-image ratios).
inline double psnrDb(double mse) { return 10.0 * std::log10(1.0 / mse); }
// An evaluation's result as the surfaces say it: "test accuracy 97.50%", or an autoencoder's
// "test MSE 0.0241, PSNR 16.18 dB".
inline std::string testResultText(ModelTask task, double accuracy, double loss)
{
    char text[96];
    if (task == ModelTask::reconstruct)
        std::snprintf(text, sizeof text, "test MSE %.4f, PSNR %.2f dB", loss, psnrDb(loss));
    else
        std::snprintf(text, sizeof text, "test accuracy %.2f%%", 100.0 * accuracy);
    return text;
}

struct LayerTelemetry {
    std::string layer;
    TensorKind kind = TensorKind::activation;
    RoundingStats stats;          // of this step
    GradientHistogram histogram;  // of this step, |x| before rounding
    UpdateCounts update;               // weight_grad only: this step's optimizer update
    RoundingStats runStats;            // accumulated over the run so far
    TensorScaling scaling;             // quantised kinds: this step's scale (block scales on histogram steps)
    UpdateCounts runUpdate;            // weight_grad only: over the run so far
    std::int64_t runLibrarySteps = 0;  // steps at which a library rounded first (TapData::libraryStepsRun)
    bool operator==(const LayerTelemetry&) const = default;
};

// Sent on every histogram step, and once more at the end of a run (histograms empty
// then, hasHistograms false) so that the run totals are complete.
struct TelemetryEvent {
    std::int64_t step = 0;
    double lossScale = 1.0;
    bool hasHistograms = true;
    std::vector<LayerTelemetry> layers;
    // The entry of `layer`'s tensors of `kind`; nullptr where the step has none.
    const LayerTelemetry* find(const std::string& layer, TensorKind kind) const
    {
        for (const LayerTelemetry& l : layers)
            if (l.layer == layer && l.kind == kind) return &l;
        return nullptr;
    }
    bool operator==(const TelemetryEvent&) const = default;
};

struct MemoryEvent {
    std::int64_t step = 0;
    double elapsedMs = 0.0;       // timing field
    MemorySnapshot memory;
    // The device's own view (cudaMemGetInfo) when training on a device backend.
    std::optional<DeviceMemoryInfo> device;
    bool operator==(const MemoryEvent&) const = default;
};

struct StatusEvent {
    RunStatus status = RunStatus::starting;
    std::int64_t step = 0;
    std::string message;          // one sentence for people
    bool operator==(const StatusEvent&) const = default;
};

struct SettingChangeEvent {
    std::int64_t step = 0;        // takes effect from step + 1
    std::string description;      // "loss scaling: dynamic -> off"
    TrainSettings settings;       // the full settings after the change
    bool operator==(const SettingChangeEvent&) const = default;
};

// A change asked for while the run went on that the run's rules refused (the recipe's
// own, or what the run's backend cannot do): nothing changed.
struct ChangeRefusedEvent {
    std::int64_t step = 0;        // the last step before the refusal
    std::string description;      // what was asked: "compute fp32 -> bf16"
    std::string reason;           // why not, one sentence for people
    bool operator==(const ChangeRefusedEvent&) const = default;
};

// A value the training logged of its own at a step: a PyTorch script's probe.log(name, value)
// (docs/PYTORCH.md). The lab's trainer sends none; a record holds them in "scalars".
struct ScalarEvent {
    std::int64_t step = 0;
    std::string name;             // the user's, e.g. "grad_norm"
    double value = 0.0;           // NaN where the logged value was not a finite number
    bool operator==(const ScalarEvent&) const = default;
};

using TrainerEvent = std::variant<RunStartEvent, StepEvent, EvalEvent, TelemetryEvent, MemoryEvent, StatusEvent,
                                  SettingChangeEvent, ChangeRefusedEvent, ScalarEvent>;

}  // namespace plab
