// `plab train`: one training run from flags and/or a JSON config, with a progress line
// on stderr, the run record written as it goes, and the final test accuracy on stdout.
#include "commands.h"
#include "progress_printer.h"
#include "train_options.h"

#include "backend/backend.h"
#include "data/dataset.h"
#include "error.h"
#include "files/output_paths.h"
#include "record/record_writer.h"
#include "train/memory_check.h"
#include "train/trainer.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

namespace plab::cli {

namespace {

struct TrainOptions {
    TrainFlagValues flags;
    bool evaluateOnly = false;   // `plab eval`: --weights, epochs 0
    std::string weights;
    std::string memoryLimit;
    std::string out;
    std::string name;
    bool quiet = false;
};

int runTrain(CLI::App& cmd, const TrainOptions& opts)
{
    std::string origin;
    nlohmann::json patch = settingsPatch(cmd, opts.flags, origin);
    if (opts.evaluateOnly) {   // the weights given, evaluated once, nothing trained
        patch["init_weights"] = opts.weights;
        patch["epochs"] = 0;
        patch.erase("max_steps");
    }
    ModelDefaultsTaken ownDefaults;
    const TrainSettings settings = settingsFromJson(patch, origin, SettingsReading::newRun, &ownDefaults);
    // Said first: a weights file of other widths is refused below.
    if (const std::string own = ownDefaults.takenText(!opts.evaluateOnly); !own.empty())
        std::cerr << "plab: " << settings.model.kind << "'s own defaults: " << own << " (a flag overrides each)\n";
    if (const std::string off = ownDefaults.leftOffText(); !off.empty() && !opts.evaluateOnly)
        std::cerr << "plab: notice: " << settings.model.kind << "'s own defaults left off: " << off << '\n';
    // Memory before anything is loaded: a batch this machine cannot hold is refused with
    // the largest that fits, not found out by the kernel's OOM killer.
    if (const std::string problem = checkRunMemory(settings, parseMemoryLimit(opts.memoryLimit)); !problem.empty())
        throw InputError(problem);

    // Every output is checked before training, not found out at the first write or at the
    // end: writable, not a folder, not the same file as another output or an input.
    checkOutputPaths({{"--out", opts.out}, {"--save-weights", settings.saveWeights}, {"--write-batches", settings.writeBatches}},
                     {{"--config", opts.flags.config}, {"--init-weights", settings.initWeights}, {"--read-batches", settings.readBatches}});
    const DataSplit data = loadTrainingData(settings);
    readRunFiles(settings, data);   // a bad weights or batch file: exit 2 before a record exists
    for (const auto& n : settingsNotices(settings)) std::cerr << "plab: notice: " << n << '\n';
    std::cerr << "plab: " << settings.recipe.describe() << '\n';
    if (settings.backend != "cuda" && usableCpuThreads(settings.threads) < settings.threads)
        std::cerr << "plab: notice: --threads " << settings.threads << ": this machine has "
                  << usableCpuThreads(0) << " logical cores; using " << usableCpuThreads(settings.threads) << '\n';

    std::unique_ptr<RecordLock> lock;   // released after the record's last write
    if (!opts.out.empty()) lock = lockRecord(opts.out, "--out");
    ProgressPrinter progress(std::cerr, opts.quiet);
    const auto [result, run] = runRecordedTraining(settings, data, opts.out, opts.name, progress);
    if (!opts.out.empty() && run->recorder().writeError().empty())
        std::cerr << "plab: run record written to " << opts.out << '\n';
    else if (!opts.out.empty())
        std::cerr << "plab: the run record " << opts.out
                  << " keeps its last complete version, if it had one\n";

    if (result.status != RunStatus::failed) {
        if (!settings.saveWeights.empty()) std::cerr << "plab: weights written to " << settings.saveWeights << '\n';
        if (!settings.writeBatches.empty()) std::cerr << "plab: batches written to " << settings.writeBatches << '\n';
    }
    // The last evaluation's result on stdout: a classifier's accuracy, an autoencoder's MSE.
    const bool reconstructs = modelTask(settings.model.kind) == ModelTask::reconstruct;
    const auto printResult = [&](const std::string& after) {
        if (reconstructs && std::isnan(result.testLoss))
            std::printf("test mse none (no evaluation ran%s)\n", after.c_str());
        else if (reconstructs)
            std::printf("test mse %.6f (PSNR %.2f dB%s)\n", result.testLoss, psnrDb(result.testLoss), after.c_str());
        else if (after.empty())
            std::printf("test accuracy %.4f (%.2f%%)\n", result.testAccuracy, 100.0 * result.testAccuracy);
        else
            std::printf("test accuracy %.4f (%s)\n", result.testAccuracy, after.c_str() + 2);
    };
    switch (result.status) {
    case RunStatus::completed:
        printResult("");
        return kExitOk;
    case RunStatus::diverged:
        std::cerr << "plab: " << result.message << '\n';
        printResult(", diverged at step " + std::to_string(result.steps));
        return kExitDiverged;
    case RunStatus::stopped:
        std::cerr << "plab: " << result.message << '\n';
        printResult(", stopped at step " + std::to_string(result.steps));
        return kExitInterrupted;
    default:
        std::cerr << "plab: training failed: " << result.message << '\n';
        return kExitFailure;
    }
}

}  // namespace

void addTrainCommand(CLI::App& app, std::function<int()>& run)
{
    auto* cmd = app.add_subcommand("train", "Train a model under a precision recipe and record the run");
    auto opts = std::make_shared<TrainOptions>();
    addTrainFlags(*cmd, opts->flags);
    cmd->add_option("--out", opts->out, "Write the run record (JSON) here as the run goes");
    cmd->add_option("--name", opts->name, "Name of the run in its record");
    cmd->add_option("--memory-limit", opts->memoryLimit,
                    "Refuse a run whose memory estimate exceeds this (e.g. 4G, 512M; default: the memory available)");
    cmd->add_flag("--quiet", opts->quiet, "No progress line");
    cmd->callback([&run, cmd, opts] { run = [cmd, opts] { return runTrain(*cmd, *opts); }; });

    // `plab eval --weights FILE`: the test accuracy and loss of the given weights under the
    // recipe and model of the flags, recorded as a run of 0 steps (`--epochs 0`).
    auto* eval = app.add_subcommand("eval", "Evaluate weights on the test set without training (a run of 0 steps)");
    auto evalOpts = std::make_shared<TrainOptions>();
    evalOpts->evaluateOnly = true;
    evalOpts->flags.omitted = {"--init-weights", "--epochs", "--max-steps"};
    eval->add_option("--weights", evalOpts->weights, "The weights to evaluate (safetensors, docs/WEIGHTS.md)")->required();
    addTrainFlags(*eval, evalOpts->flags);
    eval->add_option("--out", evalOpts->out, "Write the run record (JSON) here");
    eval->add_option("--name", evalOpts->name, "Name of the run in its record");
    eval->add_option("--memory-limit", evalOpts->memoryLimit, "Refuse a run whose memory estimate exceeds this");
    eval->add_flag("--quiet", evalOpts->quiet, "No progress line");
    eval->callback([&run, eval, evalOpts] { run = [eval, evalOpts] { return runTrain(*eval, *evalOpts); }; });
}

}  // namespace plab::cli
