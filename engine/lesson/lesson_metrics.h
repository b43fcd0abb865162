// The metrics a lesson can claim and quote, each read from a run record (docs/RUN_RECORD.md)
// or, for format facts, from the format table. One table: parsing, checking a lesson's
// metric names, evaluating them and documenting them (`plab lesson --metrics`) all use it.
//
// A metric is written NAME or NAME:ARGS, ARGS comma-separated, e.g. "test_accuracy",
// "lost_updates:fc1", "snapshot_underflow:loss,activation_grad,400", "format_max:fp16".
#pragma once

#include "record/run_record.h"
#include "train/settings.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace plab {

enum class MetricUnit { fraction, count, bytes, scale, loss, plain };

struct MetricInfo {
    std::string_view name;
    std::string_view args;         // "" or e.g. "LAYER", "CATEGORY", "N", "FORMAT"
    std::string_view meaning;      // one line for docs and `plab lesson --metrics`
    MetricUnit unit;
    bool perRun;                   // false: a format fact (no run)
};

const std::vector<MetricInfo>& lessonMetrics();

// Checks a metric name against the table and against the run it is read from (its layers,
// its telemetry steps); returns the problem as a phrase ("unknown metric \"x\"") or empty.
// `settings` is null for format facts.
[[nodiscard]] std::string checkMetric(std::string_view metric, const TrainSettings* settings);
const MetricInfo* findMetric(std::string_view metric);

// The value of `metric` in `record` (ignored for format facts), or
// nullopt with `why` set when the record does not hold it (e.g. no telemetry at that step).
// Non-finite values are returned as they are (a loss mean over NaN losses is NaN).
std::optional<double> evaluateMetric(std::string_view metric, const RunRecord* record, std::string* why = nullptr);

// The telemetry layer names of a model: its layers in order, then "loss".
std::vector<std::string> telemetryLayers(const ModelSpec& model);

// A value as students read it: style "pct" (27.3%; small values with two significant
// digits: 0.041%), "pct0", "pct2", "pts" (percentage points of a difference), "int"
// (43,755), "num" (3 significant digits), "pow2" (2^27, or 2^-24.3), "mib" (bytes as
// 24.9 MiB), "x" (a ratio, x2.0). An empty style picks one from the unit.
std::string formatMetricValue(double value, std::string_view style, MetricUnit unit);
bool isKnownValueStyle(std::string_view style);

}  // namespace plab
