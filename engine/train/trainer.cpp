// The training loop of docs/ARCHITECTURE.md#one-training-step: forward, backward, unscale and check,
// update or skip; evaluation per epoch; commands between steps. The run's state is
// trainer_state.h's; its telemetry and memory events are assembled in trainer_telemetry.cpp,
// its live setting changes applied in trainer_changes.cpp, its output files written in
// trainer_outputs.cpp.
#include "train/trainer.h"

#include "train/trainer_state.h"

#include "train/backend_support.h"
#include "train/batch_source.h"
#include "train/memory_check.h"
#include "train/region_format.h"

#include "amp/loss_scaler.h"
#include "backend/backend.h"
#include "error.h"
#include "nn/layer_ops.h"
#include "nn/model_kinds.h"
#include "nn/transformer.h"
#include "numerics/number_text.h"
#include "optim/grad_accumulation.h"
#include "optim/grad_unscale.h"
#include "optim/lr_schedule.h"
#include "weights/model_weights.h"

#include <algorithm>
#include <utility>
#include <chrono>
#include <cmath>
#include <limits>
#include <optional>
#include <memory>
#include <stdexcept>

namespace plab {

std::string_view runStatusName(RunStatus s)
{
    switch (s) {
    case RunStatus::starting: return "starting";
    case RunStatus::running: return "running";
    case RunStatus::paused: return "paused";
    case RunStatus::completed: return "completed";
    case RunStatus::stopped: return "stopped";
    case RunStatus::diverged: return "diverged";
    case RunStatus::failed: return "failed";
    }
    return "unknown";
}

std::optional<RunStatus> parseRunStatus(std::string_view name)
{
    for (auto s : {RunStatus::starting, RunStatus::running, RunStatus::paused, RunStatus::completed,
                   RunStatus::stopped, RunStatus::diverged, RunStatus::failed})
        if (runStatusName(s) == name) return s;
    return std::nullopt;
}

Trainer::Trainer(TrainSettings settings, const DataSplit& data, EventSink sink, BackendFactory makeBackend,
                 std::shared_ptr<TrainerControl> control)
    : settings_(std::move(settings)), data_(data), sink_(std::move(sink)), makeBackend_(std::move(makeBackend)),
      control_(control ? std::move(control) : std::make_shared<TrainerControl>())
{
    if (auto problem = validateSettings(settings_); !problem.empty()) throw InputError(problem);
    if (auto problem = checkRunMemory(settings_); !problem.empty()) throw InputError(problem);
    if (settings_.backend == "cuda" && !makeBackend_) {
        // Refused before anything is loaded onto the device; the backend's own info
        // replaces these rules once it exists (runOrThrow).
        const auto cuda = probeCudaBackend();
        if (!cuda.available) throw InputError("the CUDA backend is " + cuda.reason);
        useBackendRules(cuda);
    }
    if (data_.train.count == 0 || data_.test.count == 0)
        throw InputError("the dataset " + data_.name + " has no images");
    files_ = readRunFiles(settings_, data_);
    if (!files_.batches.empty())
        control_->fixBatches("the batches come from " + settings_.readBatches + " (--read-batches)");
    else if (settings_.lrSchedule.shape == LrShape::cosine)
        control_->fixBatches("the cosine learning-rate schedule is planned over the run's steps at batch " +
                             std::to_string(settings_.batch));
}

Trainer::~Trainer() = default;

std::int64_t Trainer::plannedSteps() const
{
    if (files_.batches.empty()) return plab::plannedSteps(settings_, data_.train.count);
    const auto steps = static_cast<std::int64_t>(files_.batches.size());
    return settings_.maxSteps > 0 ? std::min(steps, settings_.maxSteps) : steps;
}

RunResult Trainer::run()
{
    State st;
    try {
        return runOrThrow(st);
    } catch (const std::exception& e) {
        RunResult r;
        r.status = RunStatus::failed;
        r.message = e.what();
        r.steps = st.step;
        r.skippedSteps = st.skipped;
        // The run totals of the steps that completed, as a run that ends otherwise sends them
        // (not where sending is what failed: a record that cannot be written).
        const std::int64_t attempted = st.step;
        st.step = st.foldedStep;   // a step that failed midway counted nothing into them
        try {
            if (st.model && st.lastTelemetryStep != st.step && st.step > 0) emitTelemetry(st, st.scaler.scale(), false);
        } catch (const std::exception&) {
        }
        st.step = attempted;
        emitEvent(StatusEvent{RunStatus::failed, st.step, r.message});
        return r;
    }
}

void Trainer::evaluate(State& st)
{
    constexpr std::int64_t kEvalBatch = 500;
    st.memory.enterPhase(MemoryPhase::evaluation);
    StepContext ctx{&st.recipe, st.backend.get(), nullptr, &st.memory, false, &st.work};
    ctx.stop = control_->stopFlag();
    const Dataset& test = data_.test;
    std::vector<std::uint32_t> idx(static_cast<std::size_t>(test.count));
    for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<std::uint32_t>(i);
    Tensor images;
    std::vector<std::uint8_t> labels;
    double lossSum = 0.0;
    std::int64_t correct = 0;
    for (std::int64_t pos = 0; pos < test.count; pos += kEvalBatch) {
        const std::int64_t n = std::min(kEvalBatch, test.count - pos);
        gatherBatch(test, idx.data() + pos, n, images, labels);
        const StepOutput out = st.model->evaluate(images, labels, ctx);
        lossSum += static_cast<double>(out.loss) * static_cast<double>(n);
        correct += out.correct;
    }
    countBackendScratch(st);
    st.memory.samplePhase(MemoryPhase::evaluation);
    EvalEvent e;
    e.step = st.step;
    e.epoch = st.epoch;
    e.testAccuracy = static_cast<double>(correct) / static_cast<double>(test.count);
    e.testLoss = lossSum / static_cast<double>(test.count);
    if (modelTask(settings_.model.kind) == ModelTask::reconstruct) e.reconstructions = reconstructTestImages(st, ctx);
    st.lastAccuracy = e.testAccuracy;
    st.lastTestLoss = e.testLoss;
    st.lastEvalStep = st.step;
    emitEvent(e);
}


std::vector<ReconstructedImage> Trainer::reconstructTestImages(State& st, StepContext& ctx)
{
    constexpr std::int64_t kPixels = 28 * 28;
    const Dataset& test = data_.test;
    const std::int64_t n = std::min<std::int64_t>(kReconstructedImages, test.count);
    std::vector<std::uint32_t> idx(static_cast<std::size_t>(n));
    for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<std::uint32_t>(i);
    Tensor images;
    std::vector<std::uint8_t> labels;
    gatherBatch(test, idx.data(), n, images, labels);
    const std::vector<float> out = st.model->outputs(images, ctx);
    const auto byte = [](float v) {
        const float clamped = std::isnan(v) ? 0.0f : std::clamp(v, 0.0f, 1.0f);
        return static_cast<std::uint8_t>(std::lround(clamped * 255.0f));
    };
    std::vector<ReconstructedImage> shown(static_cast<std::size_t>(n));
    for (std::int64_t k = 0; k < n; ++k) {
        ReconstructedImage& r = shown[static_cast<std::size_t>(k)];
        r.testIndex = k;
        for (std::int64_t i = 0; i < kPixels; ++i) {
            r.original.push_back(byte(images.data()[k * kPixels + i]));
            r.reconstruction.push_back(byte(out[static_cast<std::size_t>(k * kPixels + i)]));
        }
    }
    return shown;
}

float Trainer::trainOneStep(State& st, const std::uint32_t* indices, std::int64_t n)
{
    using Clock = std::chrono::steady_clock;
    const auto t0 = Clock::now();
    ++st.step;
    st.memory.enterPhase(MemoryPhase::training);
    const bool histogramStep = settings_.histogramEvery > 0 && (st.step == 1 || st.step % settings_.histogramEvery == 0);
    st.telemetry.beginStep(histogramStep);
    // Telemetry sampled: a step that takes no snapshot may leave the 16-bit convolutions'
    // rounding to the backend's library (TelemetryMode); evaluation never does.
    const bool sampled = settings_.telemetry == TelemetryMode::sampled;
    if (sampled) st.backend->allowLibraryRounding(!histogramStep);

    // Forward and backward, the loss multiplied by the scale (in micro-batches, their
    // gradients summed, where the settings accumulate).
    const double scale = st.scaler.scale();
    StepOutput out;
    if (settings_.gradAccumSteps > 1) {
        out = accumulateMicroBatches(st, indices, n, scale);
    } else {
        gatherBatch(data_.train, indices, n, st.images, st.labels);
        out = st.model->trainStep(st.images, st.labels, static_cast<float>(scale), st.ctx);
    }

    // Unscale and check: a non-finite gradient skips the update (and the scaler backs off).
    // The norm is clipped after unscaling, or before it where the settings ask for that
    // mistake (ClipAt::scaled).
    const UnscaleResult unscaled = unscaleAndClip(st.params, st.scaler.inverseScale(), st.recipe, settings_.clipGradNorm,
                                                  settings_.clipAt, *st.backend);
    const bool skip = st.scaler.update(unscaled.foundNonFinite);

    // Update, or skip; a schedule sets the rate of every step, skipped or not.
    if (settings_.lrSchedule.varies())
        st.optimizer->setLearningRate(
            scheduledLr(settings_.optimizer.lr, settings_.lrSchedule, st.step - 1, st.plannedSteps));
    for (Parameter* p : st.params) p->lastUpdate = {};
    if (!skip) {
        st.optimizer->step(st.params, st.recipe, &st.memory, *st.backend);
    } else {
        ++st.skipped;
    }

    // Telemetry: the step's rounding and update counts are complete after the flush.
    st.backend->flush();
    if (sampled) st.backend->allowLibraryRounding(false);
    st.telemetry.endStep();
    st.foldedStep = st.step;
    countUpdates(st);
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    st.trainSeconds += ms / 1000.0;
    st.imagesTrained += n;

    // Events; a skipped step names the sites that made or met inf/NaN.
    StepEvent event{.step = st.step, .epoch = st.epoch, .loss = out.loss, .lossScale = scale, .skipped = skip,
                    .lr = st.optimizer->learningRate(), .batch = static_cast<int>(n), .timeMs = ms,
                    .totalSteps = st.plannedSteps, .skippedSoFar = st.skipped, .nonFinite = {}};
    if (skip)
        event.nonFinite = nonFiniteSites(st.telemetry, [&](const std::string& layer, TensorKind kind) {
            return regionFormatFor(settings_, layer, kind);
        });
    emitEvent(std::move(event));
    if (histogramStep) emitTelemetry(st, scale, true);
    countBackendScratch(st);
    st.memory.samplePhase(MemoryPhase::training);
    emitMemory(st);
    return out.loss;
}

StepOutput Trainer::accumulateMicroBatches(State& st, const std::uint32_t* indices, std::int64_t n, double scale)
{
    // Each part's loss is its mean times its share of the batch (PyTorch's loss / N for equal
    // parts), so the summed gradients are the batch mean's, times the loss scale.
    const std::int64_t parts = accumulationParts(n, settings_.gradAccumSteps);
    if (st.accumulated.size() != st.params.size()) {
        st.accumulated.clear();
        for (Parameter* p : st.params) {
            Tensor& buffer = st.accumulated.emplace_back(p->grad.shape(), settings_.gradAccumFormat);
            buffer.track(&st.memory, MemoryCategory::gradients);
        }
    }
    st.accumulation.assign(st.params.size(), AccumulationCounts{});
    StepOutput out;
    double lossSum = 0.0;
    for (std::int64_t k = 0; k < parts; ++k) {
        const std::int64_t lo = accumulationPartStart(n, parts, k), hi = accumulationPartStart(n, parts, k + 1);
        gatherBatch(data_.train, indices + lo, hi - lo, st.images, st.labels);
        const auto share = static_cast<double>(hi - lo) / static_cast<double>(n);
        const StepOutput part = st.model->trainStep(st.images, st.labels, static_cast<float>(scale * share), st.ctx);
        lossSum += static_cast<double>(part.loss) * share;
        out.correct += part.correct;
        st.backend->flush();
        for (std::size_t i = 0; i < st.params.size(); ++i) {
            Tensor& grad = st.params[i]->grad;
            Tensor& buffer = st.accumulated[i];
            if (buffer.shape() != grad.shape()) buffer.resize(grad.shape());
            st.accumulation[i] += accumulateGradient(buffer.data(), grad.data(), grad.size(), settings_.gradAccumFormat, k == 0);
        }
    }
    // The sum is the step's gradient from here on: unscaled, checked and applied as any.
    for (std::size_t i = 0; i < st.params.size(); ++i)
        std::copy_n(st.accumulated[i].data(), st.params[i]->grad.size(), st.params[i]->grad.data());
    out.loss = static_cast<float>(lossSum);
    return out;
}

bool Trainer::obeyCommands(State& st)
{
    control_->waitWhilePaused([&] { emitEvent(StatusEvent{RunStatus::paused, st.step, "paused"}); },
                              [&] { emitEvent(StatusEvent{RunStatus::running, st.step, "resumed"}); });
    reportRefusedChanges(st);
    if (control_->stopRequested()) return true;
    if (auto change = control_->takePending(); !change.empty()) applyChange(st, change);
    return false;
}

void Trainer::setUp(State& st)
{
    using Clock = std::chrono::steady_clock;
    st.started = Clock::now();
    st.recipe = settings_.recipe;
    st.batch = settings_.batch;
    if (makeBackend_)
        st.backend = makeBackend_(settings_);
    else
        st.backend = settings_.backend == "cuda" ? createCudaBackend(0)
                                                 : createCpuBackend(settings_.threads, settings_.arithmetic);
    if (!st.backend) throw std::runtime_error("no backend to train on");
    useBackendRules(st.backend->info());
    std::optional<std::uint64_t> deviceBeforeRun;   // taken while nothing is placed yet
    if (const auto device = st.backend->deviceMemory()) deviceBeforeRun = device->used;
    st.model = Model::create(settings_.model, settings_.seed);
    if (!files_.initialWeights.tensors.empty())
        loadWeights(*st.model, files_.initialWeights, "weights " + settings_.initWeights);
    if (settings_.zeroInitResidual)
        for (Parameter* p : st.model->parameters())
            if (isResidualBranchWeight(*p)) p->stored().zero();
    st.model->applyRecipe(st.recipe, &st.memory, *st.backend);
    st.optimizer = Optimizer::create(settings_.optimizer);
    st.optimizer->setRoundingSeed(settings_.seed);
    st.scaler = LossScaler(st.recipe.lossScaling);

    st.plannedSteps = plannedSteps();
    emitEvent(RunStartEvent{st.backend->info().name, st.backend->info().versions, st.plannedSteps,
                            arithmeticOf(st.recipe, *st.backend), deviceBeforeRun, /*judgedFormat*/ {},
                            /*sourceAsRun*/ {}});   // the lab's own run: its recipe says both
    emitEvent(StatusEvent{RunStatus::running, 0, "training " + settings_.model.kind + " on " + data_.description});

    st.params = st.model->parameters();
    st.ctx = StepContext{&st.recipe, st.backend.get(), &st.telemetry, &st.memory, true, &st.work,
                         static_cast<float>(settings_.labelSmoothing), control_->stopFlag()};
}

RunResult Trainer::runOrThrow(State& st)
{
    setUp(st);
    int nonFiniteRun = 0;
    RunResult result;

    auto finish = [&](RunStatus status, std::string message) {
        reportRefusedChanges(st);   // refused after the last step, the record still says so
        // Evaluated at the end unless it just was, or nothing trained (a run stopped before
        // its first step); an evaluation-only run (epochs 0) is that one evaluation.
        // A stopped run is not held up by it: the stop reaches into the evaluation too, and
        // the run ends with the last evaluation it had.
        if (st.lastEvalStep != st.step && status != RunStatus::diverged && status != RunStatus::failed &&
            (st.step > 0 || evaluationOnly())) {
            try {
                evaluate(st);
            } catch (const StepStopped&) {
                // Stopped during it: the run was stopped, whatever ended it (a step limit
                // reached, an evaluation-only run), and it has no final evaluation.
                if (status == RunStatus::completed) {
                    status = RunStatus::stopped;
                    message = "stopped during the final evaluation (" + message + ")";
                } else {
                    message += "; not evaluated after the stop";
                }
            }
        }
        if (auto problem = writeOutputFiles(st, status); !problem.empty()) {
            status = RunStatus::failed;
            message += "; " + problem;
        }
        result.status = status;
        result.message = std::move(message);
        result.testAccuracy = st.lastAccuracy;
        result.testLoss = st.lastTestLoss;
        result.steps = st.step;
        result.skippedSteps = st.skipped;
        result.imagesPerSecond = st.trainSeconds > 0 ? st.imagesTrained / st.trainSeconds : 0.0;
        if (st.lastTelemetryStep != st.step && st.step > 0) emitTelemetry(st, st.scaler.scale(), false);
        emitMemory(st);
        emitEvent(StatusEvent{status, st.step, result.message});
        return result;
    };

    // Before a step: the step limit, then the commands (a batch change applies to the
    // step that follows). Then one step on the samples idx[0..n) and what comes after it:
    // the scale floor, divergence, evaluation. Each gives the run's end when it ends there.
    auto beforeStep = [&]() -> std::optional<RunResult> {
        if (settings_.maxSteps > 0 && st.step >= settings_.maxSteps)
            return finish(RunStatus::completed, "reached the step limit of " + std::to_string(settings_.maxSteps));
        if (obeyCommands(st)) return finish(RunStatus::stopped, "stopped at step " + std::to_string(st.step));
        return std::nullopt;
    };
    auto step = [&](const std::uint32_t* idx, std::int64_t n) -> std::optional<RunResult> {
        if (!settings_.writeBatches.empty()) st.batchLog.emplace_back(idx, idx + n);
        const float loss = trainOneStep(st, idx, n);

        // A dynamic scale backed off below fp32's smallest normal scales every gradient
        // into underflow: nothing can be learned, and the next backoffs reach 0.
        if (st.scaler.scale() < static_cast<double>(std::numeric_limits<float>::min()))
            return finish(RunStatus::failed,
                          "the loss scale fell to " + shortestDecimal(Format::fp32, static_cast<float>(st.scaler.scale())) +
                              " at step " + std::to_string(st.step) +
                              ", below fp32's smallest normal number (2^-126): every scaled gradient underflows");
        if (!std::isfinite(loss)) {
            if (++nonFiniteRun >= settings_.divergenceSteps)
                return finish(RunStatus::diverged,
                              "diverged: the loss was not finite for " + std::to_string(nonFiniteRun) +
                                  " steps in a row, up to step " + std::to_string(st.step));
        } else {
            nonFiniteRun = 0;
        }
        if (settings_.evalEvery > 0 && st.step % settings_.evalEvery == 0) evaluate(st);
        return std::nullopt;
    };

    BatchSource source = files_.batches.empty()
                             ? BatchSource::epochs(data_.train.count, settings_.seed, settings_.epochs)
                             : BatchSource::file(files_.batches, data_.train.count, settings_.readBatches);
    st.epoch = 0;
    while (!source.done()) {
        if (auto end = beforeStep()) return *end;
        try {
            const BatchSource::Batch batch = source.next(st.batch);
            if (auto end = step(batch.indices, batch.count)) return *end;
            if (source.epochEnded()) {
                evaluate(st);
                st.epoch = source.epoch();
            }
        } catch (const StepStopped&) {
            // Stopped between two layers of a step (or of an evaluation): that step is
            // abandoned before its update, so the run ends with the last step completed.
            // Nothing of it stays: its partial counts (the closing snapshot would have shown
            // them as the last step's) and its entry in the batches written.
            const std::int64_t abandoned = st.step;
            st.step = st.foldedStep;
            st.backend->allowLibraryRounding(false);
            if (abandoned != st.step) {
                st.telemetry.beginStep(false);
                if (!settings_.writeBatches.empty() && !st.batchLog.empty()) st.batchLog.pop_back();
            }
            return finish(RunStatus::stopped,
                          abandoned == st.step
                              ? "stopped during the evaluation after step " + std::to_string(st.step)
                              : "stopped during step " + std::to_string(abandoned) +
                                    " (not applied); the last step completed is " + std::to_string(st.step));
        }
    }
    if (evaluationOnly()) return finish(RunStatus::completed, "evaluated the initial weights (epochs 0: no training)");
    return finish(RunStatus::completed, source.completedText(st.step));
}

}  // namespace plab
