// The training loop: epochs of steps (forward, backward, unscale, update), evaluation,
// pause / resume / stop and setting changes between steps, divergence detection, and
// events out. Runs on whatever thread calls run(); control() may be used from any thread.
#pragma once

#include "data/dataset.h"
#include "train/events.h"
#include "train/settings.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace plab {

// A change asked for while the run goes on; applied before the next step.
struct SettingsChange {
    std::optional<PrecisionRecipe> recipe;     // switches and loss scaling
    std::optional<int> batch;
    std::optional<double> lr;
    bool empty() const { return !recipe && !batch && !lr; }
};

// Thread-safe commands to a running trainer, checked between steps.
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
    // Queues a change; returns an error sentence (and queues nothing) when impossible.
    std::string requestChange(const SettingsChange& change);

    bool stopRequested() const { return stop_.load(std::memory_order_relaxed); }

    // For the trainer: blocks while paused (returns early on stop); returns the pending
    // change, if any, and clears it. `onPause`/`onResume` run on the trainer's thread.
    SettingsChange takePending();
    bool waitWhilePaused(const std::function<void()>& onPause, const std::function<void()>& onResume);
    // What the run's backend cannot do with a recipe ("" when it can), checked by
    // requestChange too. Set once by the trainer before the run starts.
    void setRecipeCheck(std::function<std::string(const PrecisionRecipe&)> check) { recipeCheck_ = std::move(check); }

private:
    std::function<std::string(const PrecisionRecipe&)> recipeCheck_;
    std::mutex mutex_;
    std::condition_variable wake_;
    bool paused_ = false;
    std::atomic<bool> stop_{false};
    static_assert(std::atomic<bool>::is_always_lock_free, "stopFromSignal must be async-signal-safe");
    SettingsChange pending_;
};

struct RunResult {
    RunStatus status = RunStatus::completed;
    std::string message;
    double testAccuracy = 0.0;     // last evaluation (0 when none ran)
    std::int64_t steps = 0;
    std::int64_t skippedSteps = 0;
    double imagesPerSecond = 0.0;
};

// Why the CUDA backend described by `cuda` (probeCudaBackend) cannot run `recipe`, or "".
std::string cudaRecipeProblem(const PrecisionRecipe& recipe, const BackendInfo& cuda);

class Trainer {
public:
    using EventSink = std::function<void(const TrainerEvent&)>;
    // Makes the run's backend in place of the one settings.backend names (tests: a host
    // backend that checks device placement, tests/support/checking_backend.h). The CUDA
    // probe and its recipe checks apply only to the real CUDA backend, so not then.
    using BackendFactory = std::function<std::unique_ptr<ComputeBackend>(const TrainSettings&)>;

    // `data` is borrowed: loaded by the caller (the CLI and the UI report data errors
    // before a run starts). Throws InputError for impossible settings.
    Trainer(TrainSettings settings, const DataSplit& data, EventSink sink, BackendFactory makeBackend = {});
    ~Trainer();

    TrainerControl& control() { return control_; }

    // Trains to completion, stop or divergence. Never throws: a failure is a RunResult
    // with status failed and the reason.
    RunResult run();

    // Steps in the whole run at the starting batch size (or maxSteps when smaller).
    std::int64_t plannedSteps() const;

private:
    struct State;
    RunResult runOrThrow(State& st);
    void evaluate(State& st);
    void applyChange(State& st, const SettingsChange& change);
    void emitTelemetry(State& st, double lossScale, bool withHistograms);
    void emitMemory(State& st);   // the accountant's snapshot and the device's own view
    void emitEvent(const TrainerEvent& e) { if (sink_) sink_(e); }

    TrainSettings settings_;
    const DataSplit& data_;
    EventSink sink_;
    BackendFactory makeBackend_;
    TrainerControl control_;
};

}  // namespace plab
