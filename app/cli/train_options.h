// What `plab train` and `plab sweep` share: the table of training flags (each a settings
// key of the config file), turning given flags and a config file into a settings patch,
// and one recorded training run with Ctrl-C stopping it cleanly.
#pragma once

#include "progress_printer.h"

#include "data/dataset.h"
#include "files/record_lock.h"
#include "record/recorded_run.h"
#include "record/record_writer.h"
#include "train/settings.h"
#include "train/trainer.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json_fwd.hpp>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace plab::cli {

struct FlagSpec {
    std::string flag;      // "--batch"
    std::string key;       // settings key, "batch"
    SettingType type;
    std::string help;      // the key's help (settingHelp) and its default
    const SettingKey* row; // its settings row: the --help group and choices
};

// One flag per settings key, derived from settingKeys().
const std::vector<FlagSpec>& trainFlags();

// The flag's text as the JSON value of its settings key; throws InputError naming the flag.
nlohmann::json flagValue(const FlagSpec& spec, const std::string& text);

// The training flags a subcommand took, as text, and its --config file.
struct TrainFlagValues {
    std::map<std::string, std::string> values;   // flag -> text as given
    std::string config;
    std::set<std::string> omitted;               // flags this subcommand does not offer
};

// Adds every training flag except `values.omitted`, and --config.
void addTrainFlags(CLI::App& cmd, TrainFlagValues& values);

// The config file (if any) overlaid with the flags given on the command line; `origin`
// gets what settingsFromJson should name in its messages.
nlohmann::json settingsPatch(const CLI::App& cmd, const TrainFlagValues& values, std::string& origin);

// Trains one recorded run (recordPath empty: the record in memory only), its events also
// going to the progress printer; SIGINT and SIGTERM stop the run between steps (the
// result's status is then stopped). The record's summary is written before returning; the
// run is returned with the result, for its record.
struct RecordedResult {
    RunResult result;
    std::unique_ptr<RecordedRun> run;
};
RecordedResult runRecordedTraining(const TrainSettings& settings, const DataSplit& data,
                                   const std::filesystem::path& recordPath, const std::string& name,
                                   ProgressPrinter& progress);

// The lock of a record this command writes (files/record_lock.h), so that the app shows
// the record as live while it grows and no two writers share it: InputError naming the
// other writer when a live one holds it; null (and no lock) when the folder takes none.
std::unique_ptr<RecordLock> lockRecord(const std::filesystem::path& record, const std::string& what);

// "4G", "512M", "1024K" or a number of bytes; 0 for empty; InputError naming --memory-limit.
std::int64_t parseMemoryLimit(const std::string& text);

// Loads the settings' data set, printing the fallback notice (if any) on stderr.
DataSplit loadTrainingData(const TrainSettings& settings);

}  // namespace plab::cli
