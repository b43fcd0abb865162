// `plab train`: one training run from flags and/or a JSON config, with a progress line
// on stderr, the run record written as it goes, and the final test accuracy on stdout.
#include "commands.h"
#include "progress_printer.h"

#include "data/dataset.h"
#include "error.h"
#include "report/run_record.h"
#include "train/trainer.h"

#include <nlohmann/json.hpp>

#include <atomic>
#include <charconv>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>

namespace plab::cli {

using nlohmann::json;

namespace {

enum class FlagType { text, integer, number, onOff, intList };

struct FlagSpec {
    const char* flag;      // "--batch"
    const char* key;       // settings key, "batch"
    FlagType type;
    const char* help;
};

const FlagSpec kFlags[] = {
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
    std::ifstream in(file, std::ios::binary);
    if (!in) throw InputError("config " + file + ": cannot open the file");
    try {
        return json::parse(in);
    } catch (const json::parse_error& e) {
        throw InputError("config " + file + ": malformed JSON (" + std::string(e.what()) + ")");
    }
}

std::atomic<TrainerControl*> g_control{nullptr};

extern "C" void onInterrupt(int)
{
    if (auto* c = g_control.load()) c->stop();
}

struct TrainOptions {
    std::map<std::string, std::string> values;   // flag -> text as given
    std::string config;
    std::string out;
    std::string name;
    bool quiet = false;
};

int runTrain(CLI::App& cmd, const TrainOptions& opts)
{
    json patch = json::object();
    std::string origin = "command line";
    if (!opts.config.empty()) {
        patch = readConfig(opts.config);
        if (!patch.is_object()) throw InputError("config " + opts.config + ": expected a JSON object of settings");
        origin = "config " + opts.config;
    }
    for (const auto& spec : kFlags)
        if (cmd.count(spec.flag)) patch[spec.key] = flagValue(spec, opts.values.at(spec.flag));
    const TrainSettings settings = settingsFromJson(patch, origin);

    const std::filesystem::path dataDir = settings.dataDir.empty() ? defaultDataDir() : std::filesystem::path(settings.dataDir);
    std::string notice;
    const DataSplit data = loadDataset(settings.dataset, dataDir, &notice);
    if (!notice.empty()) std::cerr << "plab: " << notice << '\n';
    for (const auto& n : settings.recipe.notices()) std::cerr << "plab: notice: " << n << '\n';
    std::cerr << "plab: " << settings.recipe.describe() << '\n';

    std::unique_ptr<RunRecorder> recorder;
    if (!opts.out.empty()) recorder = std::make_unique<RunRecorder>(opts.out, settings, data, opts.name);
    ProgressPrinter progress(std::cerr, opts.quiet);

    Trainer trainer(settings, data, [&](const TrainerEvent& e) {
        if (recorder) recorder->onEvent(e);
        progress.onEvent(e);
    });
    progress.setPlannedSteps(trainer.plannedSteps(), settings.epochs);
    g_control = &trainer.control();
    std::signal(SIGINT, onInterrupt);
    std::signal(SIGTERM, onInterrupt);
    const RunResult result = trainer.run();
    std::signal(SIGINT, SIG_DFL);
    std::signal(SIGTERM, SIG_DFL);
    g_control = nullptr;
    progress.finish();
    if (recorder) {
        recorder->finish(result);
        std::cerr << "plab: run record written to " << recorder->path().string() << '\n';
    }

    switch (result.status) {
    case RunStatus::completed:
        std::printf("test accuracy %.4f (%.2f%%)\n", result.testAccuracy, 100.0 * result.testAccuracy);
        return kExitOk;
    case RunStatus::diverged:
        std::cerr << "plab: " << result.message << '\n';
        std::printf("test accuracy %.4f (diverged at step %lld)\n", result.testAccuracy,
                    static_cast<long long>(result.steps));
        return kExitDiverged;
    case RunStatus::stopped:
        std::cerr << "plab: " << result.message << '\n';
        std::printf("test accuracy %.4f (stopped at step %lld)\n", result.testAccuracy,
                    static_cast<long long>(result.steps));
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
    for (const auto& spec : kFlags) cmd->add_option(spec.flag, opts->values[spec.flag], spec.help);
    cmd->add_option("--config", opts->config, "JSON file with the same settings (flags override it)");
    cmd->add_option("--out", opts->out, "Write the run record (JSON) here as the run goes");
    cmd->add_option("--name", opts->name, "Name of the run in its record");
    cmd->add_flag("--quiet", opts->quiet, "No progress line");
    cmd->callback([&run, cmd, opts] { run = [cmd, opts] { return runTrain(*cmd, *opts); }; });
}

}  // namespace plab::cli
