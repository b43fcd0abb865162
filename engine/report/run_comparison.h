// Comparison of saved runs for reports, `plab report` and `plab sweep`: each run record
// is digested into the numbers a report shows (settings, accuracy, skipped steps,
// throughput, peak memory per category, per-layer underflow and lost-update fractions,
// and the series behind the charts), and the runs get unique, readable labels and a
// settings table with the differences marked. Qt-free.
#pragma once

#include "numerics/rounding_stats.h"
#include "numerics/update_math.h"
#include "report/step_point.h"
#include "train/settings.h"

#include <nlohmann/json.hpp>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace plab {

// Over the whole run, per layer, from the record's summary (absent where the recipe has
// no rounding site of that kind, e.g. fp32).
struct LayerFractions {
    std::string layer;
    std::optional<double> underflow;                 // weight gradients: nonzero values that became 0
    std::optional<double> overflow;                  // weight gradients that became +-inf
    std::optional<double> activationGradUnderflow;   // gradients w.r.t. the layer's input
    std::optional<double> lostUpdate;                // nonzero updates that left the weight unchanged
    std::int64_t weightsMadeNonFinite = 0;           // finite weights an update made inf or NaN
    std::int64_t stateFlushed = 0;                   // optimizer-state elements left at 0 where fp32 is not
    std::int64_t stateMadeNonFinite = 0;             // optimizer-state elements made inf or NaN
};

struct EvalPoint {
    std::int64_t step = 0;
    int epoch = 0;
    double testAccuracy = 0.0;
    double testLoss = 0.0;
};

// One tensor kind of one layer at one telemetry step.
struct LayerSnapshot {
    std::string layer;
    std::string kind;              // "activation", "activation_grad", "weight_grad"
    RoundingStats stats;
    UpdateCounts updates;          // of the optimizer step (weight_grad entries)
    GradientHistogram histogram;   // empty unless the record holds one at this step
};

struct TelemetryPoint {
    std::int64_t step = 0;
    double lossScale = 1.0;
    std::vector<LayerSnapshot> layers;
    const LayerSnapshot* find(const std::string& layer, const std::string& kind) const;
};

struct MemoryPoint {
    std::int64_t step = 0;
    std::vector<std::int64_t> bytes;   // per category, in RunDigest::memoryCategories order
    std::int64_t total = 0;
};

struct RunDigest {
    std::string origin;            // where it came from (a file path), for messages
    std::string name;              // the record's name (may be empty)
    std::string label;             // unique among the compared runs (set by compareRuns)
    std::string presetDisplayName; // "AMP FP16"
    std::string recipePhrase;      // "AMP FP16 without loss scaling" (preset + what differs)
    nlohmann::json recipe, settings, machine, versions, backend, data;
    TrainSettings finalSettings;   // parsed: the last setting change's, else the start's (as the app's currentSettings)
    std::string createdAt;

    std::string compute;           // "fp16"
    std::string storage;           // "fp16"
    bool masterWeights = true;
    std::string optimizerState;    // "fp32": the record's, or by the rule for records before it was set apart
    std::string lossScaleMode;     // "off", "static", "dynamic"
    std::string optimizer;         // "adam", "sgd"

    std::string status;            // completed, stopped, diverged, failed, running
    std::string message;
    std::int64_t steps = 0;
    std::int64_t skippedSteps = 0;
    std::optional<double> finalAccuracy, bestAccuracy;
    double imagesPerSecond = 0.0;

    std::vector<std::string> memoryCategories;
    std::vector<std::int64_t> peakBytes;   // per category
    std::int64_t peakTotal = 0;
    // The peak of a training step apart from an evaluation's (0 when the record has none).
    std::int64_t trainingPeakTotal = 0;
    std::int64_t evaluationPeakTotal = 0;

    std::vector<LayerFractions> layers;    // in the model's order where known
    std::vector<StepPoint> stepSeries;
    std::vector<EvalPoint> evals;
    std::vector<TelemetryPoint> telemetry;
    std::vector<MemoryPoint> memory;

    const LayerFractions* layer(const std::string& name) const;
};

// Reads what a report needs from a run record (schema in docs/RUN_RECORD.md). Throws
// InputError naming `origin` when a part the report needs is missing or malformed.
RunDigest digestRunRecord(const nlohmann::json& record, const std::string& origin);

struct SettingRow {
    std::string key;                 // settings key, "batch"
    std::vector<std::string> values; // one per run, as text
    bool differs = false;
};

struct RunComparison {
    std::vector<RunDigest> runs;
    std::vector<SettingRow> settings;   // every settings key, differing ones marked
    std::vector<std::string> layerOrder;// union of the runs' layers, in model order
};

// Labels the runs uniquely (record name, else the recipe phrase, then the settings that
// tell equal labels apart) and builds the settings table.
RunComparison compareRuns(std::vector<RunDigest> runs);

// The comparison as a fixed-width text table (one row per run) for the terminal.
std::string comparisonTableText(const RunComparison& comparison);

// Text forms shared by the table, the summary and the reports.
std::string formatPercent(double fraction);          // two significant digits: "1.4%", "0.13%"
std::string formatAccuracy(std::optional<double> a); // "96.85%" or "-"
std::string formatMebibytes(std::int64_t bytes);     // "59.8 MiB"
std::string formatCount(std::int64_t n);             // "18,496"
std::string settingValueText(const nlohmann::json& v);

}  // namespace plab
