// The shared training flags and one recorded run, for `plab train` and `plab sweep`.
// See train_options.h.
#include "train_options.h"

#include "error.h"
#include "json/json_input.h"

#include <atomic>
#include <charconv>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <iostream>

namespace plab::cli {

using nlohmann::json;

const std::vector<FlagSpec>& trainFlags()
{
    static const std::vector<FlagSpec> flags = {
        {"--model", "model", FlagType::text, "mlp, small-cnn (default) or seed-cnn"},
        {"--widths", "widths", FlagType::intList, "Channel/width overrides, comma-separated (e.g. 16,32)"},
        {"--recipe", "recipe", FlagType::text, "Preset: fp32, tf32, amp-fp16, amp-bf16, pure-fp16, pure-bf16"},
        {"--compute", "compute", FlagType::text, "Compute format: fp32, tf32, fp16, bf16"},
        {"--master-weights", "master_weights", FlagType::onOff, "fp32 master weights: on|off"},
        {"--fp32-accumulate", "fp32_accumulate", FlagType::onOff, "Accumulate matmul/conv in fp32: on|off"},
        {"--fp32-sensitive-ops", "fp32_sensitive_ops", FlagType::onOff, "Softmax/cross-entropy in fp32: on|off"},
        {"--loss-scale", "loss_scale", FlagType::text, "off, static:S, dynamic, pytorch, tensorflow or apex"},
        {"--init-scale", "init_scale", FlagType::number, "Initial (or static) loss scale"},
        {"--growth-factor", "growth_factor", FlagType::number, "Dynamic scaling: growth factor"},
        {"--backoff-factor", "backoff_factor", FlagType::number, "Dynamic scaling: backoff factor"},
        {"--growth-interval", "growth_interval", FlagType::integer, "Dynamic scaling: clean steps before growth"},
        {"--min-scale", "min_scale", FlagType::number, "Dynamic scaling: floor"},
        {"--max-scale", "max_scale", FlagType::number, "Dynamic scaling: cap"},
        {"--batch", "batch", FlagType::integer, "Batch size (default 32)"},
        {"--epochs", "epochs", FlagType::integer, "Epochs (default 3)"},
        {"--max-steps", "max_steps", FlagType::integer, "Stop after this many steps (0: no limit)"},
        {"--lr", "lr", FlagType::number, "Learning rate (default 1e-3)"},
        {"--optimizer", "optimizer", FlagType::text, "adam (default) or sgd"},
        {"--momentum", "momentum", FlagType::number, "SGD momentum (default 0.9)"},
        {"--seed", "seed", FlagType::integer, "Seed of weights and shuffling (default 1)"},
        {"--dataset", "dataset", FlagType::text, "mnist (default) or fashion-mnist"},
        {"--data-dir", "data_dir", FlagType::text, "Data folder (default: the per-user folder the set-up fills)"},
        {"--threads", "threads", FlagType::integer, "CPU threads (default 2)"},
        {"--histogram-every", "histogram_every", FlagType::integer, "Telemetry snapshot every N steps (default 50)"},
        {"--eval-every", "eval_every", FlagType::integer, "Also evaluate every N steps (0: per epoch)"},
        {"--divergence-steps", "divergence_steps", FlagType::integer, "Non-finite losses in a row that end a run (default 10)"},
        {"--clip-grad-norm", "clip_grad_norm", FlagType::number, "Clip the unscaled gradient norm (0: off)"},
        {"--backend", "backend", FlagType::text, "cpu (default) or cuda"},
    };
    return flags;
}

json flagValue(const FlagSpec& spec, const std::string& text)
{
    auto bad = [&](const char* expected) {
        return InputError(std::string(spec.flag) + ": expected " + expected + ", got '" + text + "'");
    };
    switch (spec.type) {
    case FlagType::text: return text;
    case FlagType::onOff:
        if (text == "on" || text == "true") return true;
        if (text == "off" || text == "false") return false;
        throw bad("on or off");
    case FlagType::integer: {
        long long v = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
        if (ec != std::errc() || end != text.data() + text.size()) throw bad("a whole number");
        return v;
    }
    case FlagType::number: {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (text.empty() || end != text.c_str() + text.size()) throw bad("a number");
        return v;
    }
    case FlagType::intList: {
        json list = json::array();
        std::size_t start = 0;
        while (start <= text.size()) {
            const auto comma = text.find(',', start);
            const auto item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
            long long v = 0;
            const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
            if (item.empty() || ec != std::errc() || end != item.data() + item.size())
                throw bad("whole numbers separated by commas");
            list.push_back(v);
            if (comma == std::string::npos) break;
            start = comma + 1;
        }
        return list;
    }
    }
    return nullptr;
}

json readConfig(const std::string& file)
{
    // Size- and depth-limited like every JSON input (a config nested 100,000 deep crashed).
    return readJsonFile(file, "config " + file, JsonLimits{std::size_t{16} << 20, 64});
}

void addTrainFlags(CLI::App& cmd, TrainFlagValues& values)
{
    for (const auto& spec : trainFlags())
        if (!values.omitted.count(spec.flag)) cmd.add_option(spec.flag, values.values[spec.flag], spec.help);
    cmd.add_option("--config", values.config, "JSON file with the same settings (flags override it)");
}

json settingsPatch(const CLI::App& cmd, const TrainFlagValues& values, std::string& origin)
{
    json patch = json::object();
    origin = "command line";
    if (!values.config.empty()) {
        patch = readConfig(values.config);
        if (!patch.is_object()) throw InputError("config " + values.config + ": expected a JSON object of settings");
        origin = "config " + values.config;
    }
    for (const auto& spec : trainFlags())
        if (!values.omitted.count(spec.flag) && cmd.count(spec.flag))
            patch[spec.key] = flagValue(spec, values.values.at(spec.flag));
    return patch;
}

namespace {

std::atomic<TrainerControl*> g_control{nullptr};
static_assert(std::atomic<TrainerControl*>::is_always_lock_free, "the signal handler may only use lock-free atomics");

// Async-signal-safe: atomic loads and stores only (TrainerControl::stopFromSignal).
extern "C" void onInterrupt(int)
{
    if (auto* c = g_control.load()) c->stopFromSignal();
}

}  // namespace

DataSplit loadTrainingData(const TrainSettings& settings)
{
    const std::filesystem::path dataDir =
        settings.dataDir.empty() ? defaultDataDir() : std::filesystem::path(settings.dataDir);
    std::string notice;
    DataSplit data = loadDataset(settings.dataset, dataDir, &notice);
    if (!notice.empty()) std::cerr << "plab: " << notice << '\n';
    return data;
}

RunResult runRecordedTraining(const TrainSettings& settings, const DataSplit& data, RunRecorder* recorder,
                              ProgressPrinter& progress)
{
    bool recordFailed = false;
    Trainer trainer(settings, data, [&](const TrainerEvent& e) {
        if (recorder) recorder->onEvent(e);
        progress.onEvent(e);
        // A record that cannot be written (a full disk) ends the run as failed, once.
        if (recorder && !recordFailed && !recorder->writeError().empty()) {
            recordFailed = true;
            throw std::runtime_error("the run record could not be written: " + recorder->writeError());
        }
    });
    progress.setPlannedSteps(trainer.plannedSteps(), settings.epochs);
    g_control = &trainer.control();
    // SIGINT, SIGTERM and SIGHUP (a closed terminal) stop the run between steps and keep
    // its record, which then says "stopped".
    std::signal(SIGINT, onInterrupt);
    std::signal(SIGTERM, onInterrupt);
    std::signal(SIGHUP, onInterrupt);
    RunResult result = trainer.run();
    std::signal(SIGINT, SIG_DFL);
    std::signal(SIGTERM, SIG_DFL);
    std::signal(SIGHUP, SIG_DFL);
    g_control = nullptr;
    progress.finish();
    if (recorder) {
        try {
            recorder->finish(result);
        } catch (const std::exception& e) {
            // The last good version of the record stays; the run is reported as failed.
            result.status = RunStatus::failed;
            result.message = e.what();
        }
    }
    return result;
}

}  // namespace plab::cli
