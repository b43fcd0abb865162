// The shared training flags and one recorded run, for `plab train` and `plab sweep`.
// See train_options.h.
#include "train_options.h"

#include "error.h"
#include "json/json_input.h"
#include "nn/model_kinds.h"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <iterator>

#include <nlohmann/json.hpp>

namespace plab::cli {

using nlohmann::json;

const std::vector<FlagSpec>& trainFlags()
{
    // One flag per settings key (settingKeys(), the one table): --max-steps for max_steps.
    static const std::vector<FlagSpec> flags = [] {
        std::vector<FlagSpec> out;
        for (const SettingKey& k : settingKeys()) {
            std::string flag = std::string("--") + k.key;
            std::replace(flag.begin(), flag.end(), '_', '-');
            std::string help = settingHelp(k);
            if (const std::string d = settingDefaultsText(k); !d.empty()) help += " (default " + d + ")";
            out.push_back({flag, k.key, k.type, help, &k});
        }
        return out;
    }();
    return flags;
}

json flagValue(const FlagSpec& spec, const std::string& text)
{
    auto bad = [&](const char* expected) {
        return InputError(spec.flag + ": expected " + expected + ", got '" + text + "'");
    };
    switch (spec.type) {
    case SettingType::text: return text;
    case SettingType::onOff:
        if (text == "on" || text == "true") return true;
        if (text == "off" || text == "false") return false;
        throw bad("on or off");
    case SettingType::integer: {
        long long v = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
        if (ec != std::errc() || end != text.data() + text.size()) throw bad("a whole number");
        return v;
    }
    case SettingType::number: {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (text.empty() || end != text.c_str() + text.size()) throw bad("a number");
        return v;
    }
    case SettingType::intList: {
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

void addTrainFlags(CLI::App& cmd, TrainFlagValues& values)
{
    // Under their rows' groups; a closed set of values shown as CLI11 shows its own
    // ("TEXT:{adam,sgd}"), which the bash completion offers.
    for (const auto& spec : trainFlags()) {
        if (values.omitted.count(spec.flag)) continue;
        CLI::Option* option = cmd.add_option(spec.flag, values.values[spec.flag], spec.help);
        option->group(std::string(settingGroupTitle(spec.row->group)));
        if (!spec.row->choices.empty()) {
            std::string names;
            for (const SettingChoice& c : spec.row->choices) names += (names.empty() ? "" : ",") + std::string(c.value);
            option->type_name("TEXT:{" + names + "}");
        } else if (spec.type == SettingType::onOff) {
            option->type_name("TEXT:{on,off}");
        } else if (spec.type == SettingType::integer) {
            option->type_name("INT");
        } else if (spec.type == SettingType::number) {
            option->type_name("NUMBER");
        } else if (spec.type == SettingType::intList) {
            option->type_name("INT,...");
        }
    }
    cmd.add_option("--config", values.config, "JSON file with the same settings (flags override it)");
}

json settingsPatch(const CLI::App& cmd, const TrainFlagValues& values, std::string& origin)
{
    json patch = json::object();
    origin = "command line";
    if (!values.config.empty()) {
        patch = settingsPatchFromFile(values.config);
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
// A signal that came before the trainer's control existed (the record is on disk from the
// trainer's constructor on): the run stops as soon as the control is there.
std::atomic<bool> g_interrupted{false};
static_assert(std::atomic<bool>::is_always_lock_free, "the signal handler may only use lock-free atomics");

// Async-signal-safe: atomic loads and stores only (TrainerControl::stopFromSignal).
extern "C" void onInterrupt(int)
{
    g_interrupted.store(true);
    if (auto* c = g_control.load()) c->stopFromSignal();
}

// SIGINT, SIGTERM and SIGHUP (a closed terminal) stop the run between steps and keep its
// record, which then says "stopped"; caught while this lives (from before the trainer and
// its record exist, so that a signal never finds the default action), as before after. A
// signal ignored when plab started stays ignored: `nohup plab train` outlives its terminal.
class StopSignals {
public:
    StopSignals()
    {
        g_interrupted = false;
        for (std::size_t i = 0; i < std::size(kSignals); ++i) {
            previous_[i] = std::signal(kSignals[i], onInterrupt);
            if (previous_[i] == SIG_IGN) std::signal(kSignals[i], SIG_IGN);
        }
    }
    ~StopSignals()
    {
        for (std::size_t i = 0; i < std::size(kSignals); ++i)
            std::signal(kSignals[i], previous_[i] == SIG_ERR ? SIG_DFL : previous_[i]);
        g_control = nullptr;
    }
    StopSignals(const StopSignals&) = delete;
    StopSignals& operator=(const StopSignals&) = delete;
    // From now on a signal stops this control's run; one that came earlier stops it now.
    // route(nullptr) before the control is destroyed.
    static void route(TrainerControl* control)
    {
        g_control = control;
        if (control && g_interrupted.load()) control->stopFromSignal();
    }

private:
    static constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};
    void (*previous_[std::size(kSignals)])(int) = {};
};

}  // namespace

std::int64_t parseMemoryLimit(const std::string& text)
{
    if (text.empty()) return 0;
    std::size_t used = 0;
    double value = 0;
    try {
        value = std::stod(text, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    std::string unit = text.substr(used);
    for (char& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    if (!unit.empty() && unit.back() == 'B' && unit.size() > 1) unit.pop_back();   // "4GB", "4GiB" as "4G"
    if (unit.size() == 2 && unit[1] == 'I') unit.pop_back();
    const double scale = unit.empty() || unit == "B" ? 1.0 : unit == "K" ? 1024.0 : unit == "M" ? 1048576.0
                       : unit == "G" ? 1073741824.0 : unit == "T" ? 1099511627776.0 : 0.0;
    if (used == 0 || scale == 0.0 || !(value > 0) || value * scale > 9e18)
        throw InputError("--memory-limit: expected a size such as 4G, 512M or 1073741824, got " + quotedExcerpt(text));
    return static_cast<std::int64_t>(value * scale);
}

std::unique_ptr<RecordLock> lockRecord(const std::filesystem::path& record, const std::string& what)
{
    std::error_code ec;
    const auto status = std::filesystem::status(record, ec);
    if (std::filesystem::exists(status) && !std::filesystem::is_regular_file(status)) return nullptr;   // /dev/stdout: no lock beside it
    RecordLock::Outcome outcome{};
    std::string holder;
    auto lock = RecordLock::acquire(record, &outcome, &holder);
    if (outcome == RecordLock::Outcome::held)
        throw InputError(what + " " + quotedExcerpt(record.string(), 200) + " is being written by another run (" + holder +
                         "): choose another file, or wait for it to end");
    return lock;
}

DataSplit loadTrainingData(const TrainSettings& settings)
{
    const std::filesystem::path dataDir =
        settings.dataDir.empty() ? defaultDataDir() : std::filesystem::path(settings.dataDir);
    std::string notice;
    DataSplit data = loadDataset(settings.dataset, dataDir, &notice);
    if (!notice.empty()) std::cerr << "plab: " << notice << '\n';
    return data;
}

RecordedResult runRecordedTraining(const TrainSettings& settings, const DataSplit& data,
                                   const std::filesystem::path& recordPath, const std::string& name,
                                   ProgressPrinter& progress)
{
    StopSignals signals;   // before the trainer exists: a signal while it loads stops it at once
    RecordedResult out;
    out.run = std::make_unique<RecordedRun>(settings, data, recordPath, name,
                                            [&progress](const TrainerEvent& e) { progress.onEvent(e); });
    progress.setPlannedSteps(out.run->trainer().plannedSteps(), settings.epochs);
    progress.setModelTask(modelTask(settings.model.kind));
    StopSignals::route(&out.run->trainer().control());
    {
        // Unrouted before the trainer goes, on every path out of run().
        struct Unroute {
            ~Unroute() { StopSignals::route(nullptr); }
        } unroute;
        out.result = out.run->run();
    }
    progress.finish();
    return out;
}

}  // namespace plab::cli
