// Comparison of saved runs for reports, `plab report` and `plab sweep`: each run record
// is digested into the numbers a report shows (settings, accuracy, skipped steps,
// throughput, peak memory per category, per-layer underflow and lost-update fractions,
// and the series behind the charts), and the runs get unique, readable labels and a
// settings table with the differences marked. Qt-free.
#pragma once

#include "amp/recipe.h"
#include "record/run_record.h"
#include "train/settings.h"

#include <nlohmann/json.hpp>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace plab {

// What a report shows of one run: its record, its label and phrases, and what it derives.
struct RunDigest {
    RunRecord record;              // the run
    std::string origin;            // where it came from (a file path), for messages
    std::string label;             // unique among the compared runs (set by compareRuns)
    std::string presetDisplayName; // "AMP FP16"
    std::string recipePhrase;      // "AMP FP16 without loss scaling" (preset + what differs)
    // The recipe's formats and loss scaling as the tables name them.
    std::string compute;           // "fp16"
    std::string storage;           // "fp16"
    std::string optimizerState;    // "fp32"
    std::string lossScaleMode;     // "off", "static", "dynamic"

    // The memory peaks per category in this build's order (all 0 where the record has none).
    std::vector<std::string> memoryCategories;
    std::vector<std::int64_t> peakBytes;
    std::int64_t peakTotal = 0;
    // The peak of a training step apart from an evaluation's (0 when the record has none).
    std::int64_t trainingPeakTotal = 0;
    std::int64_t evaluationPeakTotal = 0;

    const PrecisionRecipe& recipe() const { return record.settings.recipe; }
    const RecordedSummary& summary() const { return record.summary; }
    const LayerFractions* layer(const std::string& name) const;
};

// What a report needs from a run record.
RunDigest digestRunRecord(const RunRecord& record, const std::string& origin);

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

// The comparison as a fixed-width text table (one row per run) for the terminal, then, for
// runs that skipped steps, why (skipCauseRows).
std::string comparisonTableText(const RunComparison& comparison);

// Why a run's steps skipped, one row per stretch of skipped steps whose first non-finite
// site (firstNonFiniteCause: layer, tensor kind, overflow or not) is the same, in step
// order: "steps 1-300 (300 skipped)" (a gap: "steps 80 to 141 (4 skipped)"), "loss
// activation_grad overflowed first: 2^94.5 > 65504 (fp16's largest), at the first" as at
// the stretch's first step. Steps whose record names no site (an
// older record, the probe's) are a stretch of their own saying so. At most maxRows rows;
// a last row counts the steps left out.
struct SkipCauseRow {
    std::int64_t firstStep = 0, lastStep = 0, count = 0;
    std::string steps;   // "step 97", "steps 1-300 (300 skipped)", "steps 12, 14"
    std::string cause;
};
std::vector<SkipCauseRow> skipCauseRows(const std::vector<StepEvent>& steps, std::size_t maxRows = 20);

// Text forms shared by the table, the summary and the reports.
std::string formatPercent(double fraction);          // two significant digits: "1.4%", "0.13%"
std::string formatAccuracy(std::optional<double> a); // "96.85%" or "-"
// An accuracy column's cell: formatAccuracy, or an autoencoder's "MSE 0.0250" where it has one.
std::string finalResultText(std::optional<double> accuracy, std::optional<double> mse);
std::string formatMebibytes(std::int64_t bytes);     // "59.8 MiB" ("0.19 MiB" under 10 MiB)
// A column of a table (or the labels of a chart) in one style: `decimals` for every value,
// mebibyteDecimals of the column's values (2 where all are under 10 MiB, else 1).
std::string formatMebibytes(std::int64_t bytes, int decimals);
int mebibyteDecimals(const std::vector<std::int64_t>& column);
std::string formatCount(std::int64_t n);             // "18,496"
std::string settingValueText(const nlohmann::json& v);

}  // namespace plab
