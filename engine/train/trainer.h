// The training loop: epochs of steps (forward, backward, unscale, update), evaluation,
// pause / resume / stop and setting changes between steps, divergence detection, and
// events out. Runs on whatever thread calls run(); control() may be used from any thread.
#pragma once

#include "data/batch_file.h"
#include "data/dataset.h"
#include "train/events.h"
#include "train/backend_support.h"
#include "train/settings.h"
#include "weights/safetensors.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace plab {

struct StepContext;

// A change asked for while the run goes on; applied before the next step.
struct SettingsChange {
    std::optional<PrecisionRecipe> recipe;     // switches and loss scaling
    std::optional<int> batch;
    std::optional<double> lr;
    bool empty() const { return !recipe && !batch && !lr; }
};

// A change the run's rules refused: what was asked and why not.
struct RefusedChange {
    SettingsChange change;
    std::string reason;
};

// The commands to one run, from any thread, checked by the trainer between steps. The
// one place they live: the CLI, the app's job and the trainer share one object
// (Trainer's constructor takes it), and a change is checked here, once, by the run's
// rules.
class TrainerControl {
public:
    void pause();
    void resume();
    void stop();        // also wakes a paused run
    // For a signal handler: only a lock-free atomic store (async-signal-safe; stop() locks a
    // mutex, which deadlocks when the signal lands while the mutex is held). A paused run
    // notices within kPausePoll.
    void stopFromSignal() noexcept { stop_.store(true, std::memory_order_relaxed); }
    static constexpr std::chrono::milliseconds kPausePoll{100};
    // Queues a change, or refuses it: the reason, with nothing queued (and the refusal
    // kept for the run's record, see takeRefused).
    [[nodiscard]] std::string requestChange(const SettingsChange& change);

    bool stopRequested() const { return stop_.load(std::memory_order_relaxed); }
    // The flag itself, for a step to check between its layers (StepContext::stop).
    const std::atomic<bool>* stopFlag() const { return &stop_; }

    // For the trainer: blocks while paused (returns early on stop); returns the pending
    // change, if any, and clears it. `onPause`/`onResume` run on the trainer's thread.
    SettingsChange takePending();
    // The changes refused since the last call, oldest first.
    std::vector<RefusedChange> takeRefused();
    bool waitWhilePaused(const std::function<void()>& onPause, const std::function<void()>& onResume);
    // What the run's backend cannot do with a recipe ("" when it can), set by the trainer
    // once it knows its backend. A change queued before then is checked now: a recipe
    // refused by it leaves the pending change for takeRefused.
    void setRecipeCheck(std::function<std::string(const PrecisionRecipe&)> check);
    // While a run replays a batch file, a batch change is refused with `reason`.
    void fixBatches(std::string reason);

private:
    [[nodiscard]] std::string problemWith(const SettingsChange& change,
                            const std::function<std::string(const PrecisionRecipe&)>& check) const;

    mutable std::mutex mutex_;
    std::condition_variable wake_;
    std::function<std::string(const PrecisionRecipe&)> recipeCheck_;
    std::string batchesFixed_;   // why a batch change is refused; empty when it is not
    bool paused_ = false;
    std::atomic<bool> stop_{false};
    static_assert(std::atomic<bool>::is_always_lock_free, "stopFromSignal must be async-signal-safe");
    SettingsChange pending_;
    std::vector<RefusedChange> refused_;
};

struct RunResult {
    RunStatus status = RunStatus::completed;
    std::string message;
    double testAccuracy = 0.0;     // last evaluation (0 when none ran, or the model reconstructs)
    std::int64_t steps = 0;
    std::int64_t skippedSteps = 0;
    double imagesPerSecond = 0.0;
    // The last evaluation's mean loss (an autoencoder's test MSE); NaN when none ran.
    double testLoss = std::numeric_limits<double>::quiet_NaN();
};

// What a run reads from files besides its data, read and checked before it starts.
struct RunFiles {
    WeightsFile initialWeights;   // settings.initWeights (no tensors without one)
    StepBatches batches;          // settings.readBatches (empty without one)
};
// Reads settings.initWeights (checked against the model) and settings.readBatches
// (checked against the training set); throws InputError naming the file and the problem.
RunFiles readRunFiles(const TrainSettings& settings, const DataSplit& data);


class Trainer {
public:
    using EventSink = std::function<void(const TrainerEvent&)>;
    // Makes the run's backend in place of the one settings.backend names (tests: a host
    // backend that checks device placement, tests/support/checking_backend.h). The CUDA
    // probe and its recipe checks apply only to the real CUDA backend, so not then.
    using BackendFactory = std::function<std::unique_ptr<ComputeBackend>(const TrainSettings&)>;

    // `data` is borrowed: loaded by the caller (the CLI and the UI report data errors
    // before a run starts). `control`: the commands' object the caller shares (a new one
    // when null). Throws InputError for impossible settings.
    Trainer(TrainSettings settings, const DataSplit& data, EventSink sink, BackendFactory makeBackend = {},
            std::shared_ptr<TrainerControl> control = {});
    ~Trainer();

    TrainerControl& control() { return *control_; }

    // Trains to completion, stop or divergence. Never throws: a failure is a RunResult
    // with status failed and the reason.
    RunResult run();

    // Steps in the whole run at the starting batch size (or maxSteps when smaller).
    std::int64_t plannedSteps() const;
    // epochs 0 without a batch file: the run evaluates the initial weights once and trains
    // nothing (`plab eval`).
    bool evaluationOnly() const { return settings_.epochs == 0 && files_.batches.empty(); }

private:
    struct State;
    RunResult runOrThrow(State& st);
    void setUp(State& st);           // the backend, model, optimizer and scaler; the first events
    bool obeyCommands(State& st);    // between steps: pause, refusals, stop (true), changes
    // One step on the training images at `indices` (n of them); returns its loss.
    float trainOneStep(State& st, const std::uint32_t* indices, std::int64_t n);
    // The step's forward and backward passes over its micro-batches, their gradients summed
    // into the accumulation buffers and left in the parameters' gradients.
    StepOutput accumulateMicroBatches(State& st, const std::uint32_t* indices, std::int64_t n, double scale);
    void countUpdates(State& st);   // per layer: this step's update counts and the run's
    void evaluate(State& st);
    // An autoencoder's reconstructions of the first test images, with the originals.
    std::vector<ReconstructedImage> reconstructTestImages(State& st, StepContext& ctx);
    void applyChange(State& st, const SettingsChange& change);
    std::string describeChange(const State& st, const SettingsChange& change) const;
    void useBackendRules(const BackendInfo& info);
    void reportRefusedChanges(const State& st);
    void emitTelemetry(State& st, double lossScale, bool withHistograms);
    void countBackendScratch(State& st);   // the backend's scratch into the workspace count
    void emitMemory(State& st);   // the accountant's snapshot and the device's own view
    std::string writeOutputFiles(State& st, RunStatus status);   // weights and batches; the problem or ""
    void emitEvent(const TrainerEvent& e) { if (sink_) sink_(e); }

    TrainSettings settings_;
    const DataSplit& data_;
    EventSink sink_;
    BackendFactory makeBackend_;
    std::shared_ptr<TrainerControl> control_;
    RunFiles files_;
};

}  // namespace plab
