// A run record, typed: what `plab train --out`, the app and the lessons write (schema in
// docs/RUN_RECORD.md). A run's record is built from the trainer's events as they arrive
// (RunRecord::apply; RunRecorder in record_writer.h keeps one and writes it), and written
// and read by one pair of functions, runRecordToJson and readRunRecord
// (run_record_json.cpp: the schema both ways, in one file). The app's run holds one (a live
// run's built from events as they come, a saved run's read), so a saved run shows exactly
// as a live one; reports, CSV, lesson metrics and the app's run list are functions of it.
// Nothing outside engine/record/ reads or writes a record's JSON.
#pragma once

#include "numerics/rounding_stats.h"
#include "numerics/update_math.h"
#include "train/events.h"
#include "telemetry/telemetry.h"
#include "data/dataset.h"
#include "train/events.h"
#include "train/settings.h"
#include "train/trainer.h"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace plab {

inline constexpr int kRunRecordFormatVersion = 1;

// The memory a run held, in this build's categories (memoryCategoryName's order; an older
// record's categories are read by name, and one this build does not know is left out).
struct RecordedMemory {
    // A sample where the bytes changed: the trainer's MemoryEvent less its peaks (the whole
    // run's are below): the live bytes and their total, and a device's own view.
    std::vector<MemoryEvent> samples;
    std::optional<MemoryPeaks> peak;           // of the whole run; absent where not recorded
    std::optional<MemoryPeaks> trainingPeak;   // of a training step apart from an evaluation's
    std::optional<MemoryPeaks> evaluationPeak;
    std::optional<MemoryPhase> peakPhase;   // when the whole run's peak was reached ("peak_phase")
    // The device's bytes in use before the run placed anything (device backends only).
    std::optional<std::uint64_t> deviceBeforeRun;
    bool operator==(const RecordedMemory&) const = default;
};

// Over the whole run, per layer, from the record's summary (absent where the recipe has
// no rounding site of that kind, e.g. fp32). A share whose denominator is 0 is absent.
struct LayerFractions {
    std::string layer;
    std::optional<double> underflow;                 // weight gradients: nonzero values that became 0
    std::optional<double> overflow;                  // weight gradients that became +-inf
    std::optional<double> activationGradUnderflow;   // gradients w.r.t. the layer's input
    std::optional<double> lostUpdate;                // nonzero updates that left the weight unchanged
    std::int64_t weightsMadeNonFinite = 0;           // finite weights an update made inf or NaN
    std::int64_t stateFlushed = 0;                   // optimizer-state elements left at 0 where fp32 is not
    std::int64_t stateMadeNonFinite = 0;             // optimizer-state elements made inf or NaN
    std::optional<double> accumulationLost;          // gradient accumulation: contributions that changed nothing
    // Which of the summary's per-layer entries name this layer (LayerShare bits): a listed
    // share may still be empty (null: nothing to share), and an unlisted one is absent
    // (the layer has no such rounding: fp32 gradients have no underflow_fraction).
    std::uint8_t listed = 0;
    bool operator==(const LayerFractions&) const = default;
};
// The summary's per-layer entries, one bit each (LayerFractions::listed).
enum LayerShare : std::uint8_t {
    kListsUnderflow = 1,
    kListsOverflow = 2,
    kListsLostUpdate = 4,
    kListsActivationGradUnderflow = 8,
    kListsWeightsMadeNonFinite = 16,
    kListsStateFlushed = 32,
    kListsStateMadeNonFinite = 64,
    kListsAccumulationLost = 128,   // only runs that accumulate gradients
};

struct RecordedSummary {
    std::string status = "running";   // a runStatusName(); "running" while the run goes on
    std::string message;
    std::int64_t steps = 0;
    std::int64_t skippedSteps = 0;
    std::optional<double> testAccuracy, bestTestAccuracy;   // a classifier's
    std::optional<double> testMse, bestTestMse;             // an autoencoder's (lowest is best)
    double imagesPerSecond = 0.0;
    std::string finishedAt;
    std::vector<LayerFractions> layers;   // the input first, the loss last, the rest as recorded
    const LayerFractions* layer(const std::string& name) const;
    // Every rounding site's counts over every step of the run (records since 2026-11-28;
    // hasRunRounding false before), where the snapshots hold only their steps'.
    struct SiteTotals {
        std::string layer;
        TensorKind kind = TensorKind::activation;
        RoundingStats stats;
        // Steps at which a library rounded the site's values first, uncounted (telemetry
        // sampled; record key library_steps, written where not 0): its underflow there is
        // among zeros_in, its overflow among inf_in.
        std::int64_t librarySteps = 0;
        bool operator==(const SiteTotals&) const = default;
    };
    bool hasRunRounding = false;
    std::vector<SiteTotals> runRounding;
    // The step the totals reach: summary.steps, unless the record ended before the run's
    // last telemetry (a run still going, or one whose record was cut short).
    std::int64_t runRoundingThroughStep = 0;
    const SiteTotals* runTotals(const std::string& layer, TensorKind kind) const;
    bool operator==(const RecordedSummary&) const = default;
};

// Where the run ran: facts shown as they were recorded (absent ones stay empty).
struct RecordedMachine {
    std::optional<std::string> cpu, os, hostname;
    std::optional<std::int64_t> logicalCores, threads;
    bool operator==(const RecordedMachine&) const = default;
};
struct RecordedVersions {
    std::optional<std::string> precisionLab, compiler, nlohmannJson;
    std::vector<std::string> backend;   // the backend's libraries (RunStartEvent::versions)
    bool operator==(const RecordedVersions&) const = default;
};
struct RecordedData {
    std::string name, description;
    std::int64_t trainImages = 0, testImages = 0;
    bool operator==(const RecordedData&) const = default;
};
// This machine, and this build's versions (a new record's; `plab info` shows them).
RecordedMachine thisMachine(int threads);
RecordedVersions thisBuild();

// Layer names in the order reports list them: the input first, the loss last, the rest
// as they came (stable).
void sortLayersInModelOrder(std::vector<std::string>& layers);
// The summary's layers in a record's order: each share's layers by name, the shares in
// LayerShare's order, each layer where first listed; then in the model's order.
std::vector<LayerFractions> summaryLayersInOrder(std::map<std::string, LayerFractions> byLayer);

// The events besides steps, evaluations, telemetry and memory, in the record's order.
using RecordedEvent = std::variant<StatusEvent, SettingChangeEvent, ChangeRefusedEvent>;

struct RunRecord {
    int formatVersion = kRunRecordFormatVersion;
    std::string name;
    std::string createdAt;
    TrainSettings settings;   // as the run started (the recipe is settings.recipe)
    // The settings keys the record holds: a record older than a setting lacks it (and ran
    // without it, whatever its default is today).
    std::vector<std::string> settingKeys;
    RecordedMachine machine;
    RecordedVersions versions;
    std::string backend = "cpu";
    std::optional<std::string> arithmetic;   // ComputeBackend::arithmeticFor, where recorded
    // A record from the PyTorch probe ("source"): what the user's training ran as ("fp32",
    // "autocast fp16", with "GradScaler"), and the format its telemetry judged the tensors
    // against ("fp16": what fp16 rounding would do to them), which need not be the one the
    // training ran in. Empty for the lab's own runs, whose recipe says both.
    std::string sourceKind;   // "pytorch-probe"; "" for the lab's own
    std::string sourceAsRun;
    std::string judgedFormat;
    RecordedData data;
    // Each as the trainer sent it, less the progress counters (0), its loss NaN where it was
    // not finite (the JSON's null).
    std::vector<StepEvent> steps;
    std::vector<RecordedEvent> events;
    std::vector<EvalEvent> evals;   // without their reconstructions (the last are below)
    // An autoencoder's last evaluation's reconstructions of the first test images, and its step.
    std::vector<ReconstructedImage> reconstructions;
    std::int64_t reconstructedAtStep = 0;
    // The snapshots of the histogram steps, each as the trainer sent it (hasHistograms),
    // less the run totals (runStats, runUpdate: empty here; the summary holds the last).
    // Update counts are weight gradients' only; a scale and amax where the tensor had one
    // (an amax that was not finite is NaN), block scales where blocks did.
    std::vector<TelemetryEvent> telemetry;
    // Values the training logged of its own (a probe's probe.log), in the record's order.
    std::vector<ScalarEvent> scalars;
    RecordedMemory memory;
    RecordedSummary summary;

    // A new run's record before its first event: its settings, data and name, this machine
    // and build, created now.
    static RunRecord start(const TrainSettings& settings, const DataSplit& data, std::string name = {});
    // Takes the trainer's next event, as RunRecorder does for every event of a run: a step,
    // an evaluation, a telemetry snapshot (and the run totals the summary keeps), a memory
    // sample where the bytes changed, a status or setting change. The summary's status
    // follows the status events; its message, speed and end time come with finish().
    void apply(const TrainerEvent& event);
    // The run's end: the summary's status, message, counts and speed, finished now.
    void finish(const RunResult& result);

    // The names of `scalars`, each once, in the order first logged.
    std::vector<std::string> scalarNames() const;

    // The settings the run ended with: the last setting change's, else the start's.
    const TrainSettings& finalSettings() const;
    // The record never got its final summary (a crash, or a run still going).
    bool interrupted() const;
    // The last step's number (0 without steps).
    std::int64_t lastStep() const;
    // The steps the run planned. The plan is not recorded: a completed run did what it
    // planned (whatever batch-size changes did to it); a probe's record knows none (the
    // user's loop decides) until it completes; any other is its settings' plan, at least
    // the steps it took.
    std::int64_t stepsPlanned() const;
    // How the run ended, as the trainer says it: the summary's, where a record cut short
    // reads as stopped ("interrupted: the record ends at step N"); its steps and skipped
    // steps those the record holds.
    RunResult result() const;

    bool operator==(const RunRecord&) const = default;
};

// Reads a run record's JSON. An absent section or key reads as its default (older records
// lack newer fields); a present one must have its documented type and range, or the record
// is refused with InputError naming `origin`, the place and the key.
RunRecord readRunRecord(const nlohmann::json& record, const std::string& origin);
// The record's JSON, as a run writes it: readRunRecord gives the same record back (a
// non-finite amax or logged value reads back as NaN; the settings keys are this build's).
nlohmann::json runRecordToJson(const RunRecord& record);

// Reads and checks a run record file's JSON document: throws InputError naming the file for
// unreadable JSON, a missing format_version, or one newer than this build understands.
nlohmann::json loadRunRecordDocument(const std::filesystem::path& file);
// Whether a JSON document is a run record (it has a format_version), not a config.
bool isRunRecordDocument(const nlohmann::json& doc);
// The file, read (both of the above).
RunRecord loadRunRecord(const std::filesystem::path& file);

// The record's JSON forms of its parts (so that a record reads back the same).
nlohmann::json machineToJson(const RecordedMachine& machine);
nlohmann::json versionsToJson(const RecordedVersions& versions);
nlohmann::json histogramToJson(const GradientHistogram& h);
GradientHistogram histogramFromJson(const nlohmann::json& j);
nlohmann::json roundingStatsToJson(const RoundingStats& s);
// The inverse; a missing count reads as 0 (records written before a field existed).
RoundingStats roundingStatsFromJson(const nlohmann::json& j);
// A skipped step's sites (StepEvent::nonFinite) as a step's "non_finite" array.
nlohmann::json nonFiniteSitesToJson(const std::vector<NonFiniteSite>& sites);

}  // namespace plab
