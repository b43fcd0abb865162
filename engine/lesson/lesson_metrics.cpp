// Over 500 lines: the metric table and each metric's evaluation, kept together as the lesson schema reads them.
// The lesson metric table and its evaluation on run records (see lesson_metrics.h).
#include "lesson/lesson_metrics.h"

#include "error.h"

#include "nn/model.h"
#include "numerics/format.h"
#include "numerics/minifloat.h"
#include "numerics/rounding_stats.h"
#include "numerics/update_math.h"
#include "telemetry/telemetry.h"
#include "tensor/memory.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>

namespace plab {


namespace {

// The table. args: LAYER (a telemetry layer), LAYER|all, CATEGORY (a memory category or
// "total"), N (a positive step count), FORMAT, and snapshots LAYER,KIND,STEP / LAYER,STEP
// where STEP is a telemetry step of the run or "last".
const std::vector<MetricInfo> kMetrics = {
    {"test_accuracy", "", "test accuracy of the last evaluation (0-1)", MetricUnit::fraction, true},
    {"best_test_accuracy", "", "best test accuracy of the run (0-1)", MetricUnit::fraction, true},
    {"test_mse", "", "an autoencoder's test mean squared error per pixel, of the last evaluation", MetricUnit::loss, true},
    {"best_test_mse", "", "an autoencoder's lowest test mean squared error of the run", MetricUnit::loss, true},
    {"test_psnr", "", "an autoencoder's test peak signal-to-noise ratio of the last evaluation, in dB (10 log10(1 / test_mse))", MetricUnit::plain, true},
    {"steps", "", "optimizer steps attempted", MetricUnit::count, true},
    {"skipped_steps", "", "steps whose update was skipped for non-finite gradients", MetricUnit::count, true},
    {"loss_mean_first", "N", "mean training loss of the first N steps (NaN if one was not finite)", MetricUnit::loss, true},
    {"loss_mean_last", "N", "mean training loss of the last N steps (NaN if one was not finite)", MetricUnit::loss, true},
    {"loss_nonfinite_steps", "", "steps whose loss was inf or NaN", MetricUnit::count, true},
    {"loss_scale_final", "", "loss scale of the last step", MetricUnit::scale, true},
    {"loss_scale_min", "", "smallest loss scale used", MetricUnit::scale, true},
    {"loss_scale_max", "", "largest loss scale used", MetricUnit::scale, true},
    {"loss_scale_growths", "", "times the loss scale grew from one step to the next (dynamic scaling, after its growth interval)", MetricUnit::count, true},
    {"weight_grad_underflow", "LAYER", "nonzero weight gradients rounded to 0, over the run (fraction)", MetricUnit::fraction, true},
    {"weight_grad_overflow", "LAYER", "nonzero weight gradients rounded to inf, over the run (fraction)", MetricUnit::fraction, true},
    {"activation_grad_underflow", "LAYER", "nonzero activation gradients rounded to 0, over the run (fraction)", MetricUnit::fraction, true},
    {"lost_updates", "LAYER", "nonzero updates that left the stored weight unchanged, over the run (fraction)", MetricUnit::fraction, true},
    {"accumulation_lost", "LAYER", "gradient accumulation: nonzero micro-batch gradients whose addition left the buffer unchanged, over the run (fraction; runs with grad_accum_steps above 1)", MetricUnit::fraction, true},
    {"weights_made_non_finite", "LAYER|all", "finite weights an update made inf or NaN, over the run", MetricUnit::count, true},
    {"optimizer_state_flushed", "LAYER|all", "optimizer-state elements (momentum, Adam's m and v) a step left at 0 where fp32 gives a nonzero value, over the run", MetricUnit::count, true},
    {"optimizer_state_made_non_finite", "LAYER|all", "finite optimizer-state elements a step made inf or NaN, over the run", MetricUnit::count, true},
    {"snapshot_underflow", "LAYER,KIND,STEP", "nonzero values rounded to 0 at one telemetry step (fraction)", MetricUnit::fraction, true},
    {"snapshot_overflow", "LAYER,KIND,STEP", "nonzero values rounded to inf (quantised kinds: saturated) at one telemetry step (fraction)", MetricUnit::fraction, true},
    {"snapshots_underflow", "LAYER,KIND", "nonzero values rounded to 0, summed over all the run's telemetry steps (fraction)", MetricUnit::fraction, true},
    {"snapshots_overflow", "LAYER,KIND", "nonzero values rounded to inf (quantised kinds: saturated), summed over all the run's telemetry steps (fraction)", MetricUnit::fraction, true},
    {"snapshots_underflow_count", "LAYER,KIND", "nonzero values rounded to 0, summed over all the run's telemetry steps (a count: the numerator of snapshots_underflow)", MetricUnit::count, true},
    {"snapshots_overflow_count", "LAYER,KIND", "nonzero values rounded to inf (quantised kinds: saturated), summed over all the run's telemetry steps (a count: the numerator of snapshots_overflow)", MetricUnit::count, true},
    {"snapshots_nonzero", "LAYER,KIND", "nonzero finite values rounded at the run's telemetry steps, summed (the denominator of snapshots_underflow and snapshots_overflow)", MetricUnit::count, true},
    {"run_underflow", "LAYER,KIND", "nonzero values rounded to 0 over every step of the run, not only the telemetry steps (fraction; records since 2026-11-28)", MetricUnit::fraction, true},
    {"run_overflow", "LAYER,KIND", "nonzero values rounded to inf (quantised kinds: saturated) over every step of the run, not only the telemetry steps (fraction; records since 2026-11-28)", MetricUnit::fraction, true},
    {"snapshots_largest", "LAYER,KIND", "a power of two above every finite |value| the histograms saw over the run's telemetry steps (the upper edge of the largest nonzero bin; values before rounding, so past a format's range too)", MetricUnit::scale, true},
    {"snapshot_scale", "LAYER,KIND,STEP", "the per-tensor scale of a quantised kind at one telemetry step (FP8 recipes)", MetricUnit::scale, true},
    {"snapshot_lost_updates", "LAYER,STEP", "lost updates at one telemetry step (fraction of nonzero updates)", MetricUnit::fraction, true},
    {"snapshot_non_finite_updates", "LAYER|all,STEP", "weights an update made inf or NaN at one telemetry step", MetricUnit::count, true},
    {"snapshot_zero_grads", "LAYER|all,STEP", "weight gradients that were 0 after rounding at one telemetry step", MetricUnit::count, true},
    {"memory_peak", "CATEGORY", "peak bytes of a memory category (or total) over the whole run", MetricUnit::bytes, true},
    {"memory_training_peak", "CATEGORY", "peak bytes during training steps (evaluation excluded)", MetricUnit::bytes, true},
    {"memory_evaluation_peak", "CATEGORY", "peak bytes during evaluations", MetricUnit::bytes, true},
    {"format_min_subnormal", "FORMAT", "smallest positive subnormal of a format (fp32 ... bf16, or e4m3, e5m2, fp6-e2m3, fp6-e3m2, fp4-e2m1)", MetricUnit::scale, false},
    {"format_min_normal", "FORMAT", "smallest positive normal of a format", MetricUnit::scale, false},
    {"format_max", "FORMAT", "largest finite value of a format", MetricUnit::plain, false},
    {"format_epsilon", "FORMAT", "spacing of a format's values just above 1 (2^-mantissa bits)", MetricUnit::scale, false},
    {"format_mantissa_bits", "FORMAT", "explicit mantissa (fraction) bits of a format", MetricUnit::count, false},
};

struct Parsed {
    const MetricInfo* info = nullptr;
    std::vector<std::string> args;
};

std::vector<std::string> splitArgs(std::string_view text)
{
    std::vector<std::string> out;
    std::size_t start = 0;
    while (true) {
        const auto comma = text.find(',', start);
        out.emplace_back(text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
        if (comma == std::string_view::npos) break;
        start = comma + 1;
    }
    return out;
}

Parsed parseMetric(std::string_view metric)
{
    Parsed p;
    const auto colon = metric.find(':');
    const std::string_view name = metric.substr(0, colon);
    for (const auto& m : kMetrics)
        if (m.name == name) p.info = &m;
    if (colon != std::string_view::npos) p.args = splitArgs(metric.substr(colon + 1));
    return p;
}

std::size_t expectedArgs(const MetricInfo& m)
{
    if (m.args.empty()) return 0;
    return static_cast<std::size_t>(std::count(m.args.begin(), m.args.end(), ',')) + 1;
}

std::optional<std::int64_t> parseInt(std::string_view s)
{
    std::int64_t v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
    return v;
}

bool isCategory(std::string_view s)
{
    if (s == "total") return true;
    for (int c = 0; c < kMemoryCategories; ++c)
        if (memoryCategoryName(static_cast<MemoryCategory>(c)) == s) return true;
    return false;
}

// The telemetry snapshot at `step` ("last": the last one).
const TelemetryEvent* snapshotAt(const RunRecord& record, const std::string& step, std::string* why)
{
    if (record.telemetry.empty()) {
        if (why) *why = "the run recorded no telemetry";
        return nullptr;
    }
    if (step == "last") return &record.telemetry.back();
    const auto wanted = parseInt(step);
    for (const auto& t : record.telemetry)
        if (wanted && t.step == *wanted) return &t;
    if (why) *why = "the run recorded no telemetry at step " + step;
    return nullptr;
}

const LayerTelemetry* layerEntry(const TelemetryEvent& snapshot, const std::string& layer, std::string_view kind)
{
    const auto k = parseTensorKind(kind);
    return k ? snapshot.find(layer, *k) : nullptr;
}

std::optional<double> summaryNumber(const std::optional<double>& value, const char* key, std::string* why)
{
    if (!value && why) *why = std::string("the record has no summary.") + key;
    return value;
}

// One of the summary's per-layer values of `layer` ("all": their sum over the layers).
template <class Value>
std::optional<double> perLayerSummary(const RunRecord& record, const char* key, const std::string& layer, Value value,
                                      std::string* why)
{
    const auto& layers = record.summary.layers;
    if (layer == "all") {
        double sum = 0;
        for (const LayerFractions& l : layers) sum += value(l).value_or(0.0);
        return sum;
    }
    if (const LayerFractions* l = record.summary.layer(layer)) {
        if (const auto v = value(*l)) return v;
        if (why) *why = std::string("summary.") + key + " of " + layer + " is empty: nothing was there to count";
        return std::nullopt;
    }
    if (why) *why = std::string("the record has no summary.") + key + " for " + layer;
    return std::nullopt;
}

std::optional<double> countOf(std::int64_t n) { return static_cast<double>(n); }

std::vector<double> losses(const RunRecord& record)
{
    std::vector<double> out;
    for (const StepEvent& s : record.steps) out.push_back(s.loss);
    return out;
}

std::optional<double> scaleStat(const RunRecord& record, std::string_view which, std::string* why)
{
    if (record.steps.empty()) {
        if (why) *why = "the run recorded no steps";
        return std::nullopt;
    }
    double lo = std::numeric_limits<double>::infinity(), hi = 0, last = 0;
    int growths = 0;
    for (std::size_t i = 0; i < record.steps.size(); ++i) {
        const double v = record.steps[i].lossScale;
        if (i > 0 && v > last) ++growths;
        lo = std::min(lo, v);
        hi = std::max(hi, v);
        last = v;
    }
    if (which == "growths") return growths;
    return which == "min" ? lo : which == "max" ? hi : last;
}

std::optional<double> memoryPeak(const std::optional<MemoryPeaks>& peak, const char* key, const std::string& category,
                                 std::string* why)
{
    if (peak) {
        if (category == "total") return static_cast<double>(peak->total);
        for (int c = 0; c < kMemoryCategories; ++c)
            if (memoryCategoryName(static_cast<MemoryCategory>(c)) == category)
                return static_cast<double>(peak->bytes[static_cast<std::size_t>(c)]);
    }
    if (why) *why = std::string("the record has no memory.") + key + "." + category;
    return std::nullopt;
}

// A format fact of one of the 16/32-bit formats or of a format below 16 bits, by name.
std::optional<double> formatFact(std::string_view name, std::string_view format)
{
    int minSubnormalLog2 = 0, minNormalLog2 = 0, mantissaBits = 0;
    double maxFinite = 0;
    if (const auto f = parseFormat(format)) {
        const FormatInfo& info = formatInfo(*f);
        minSubnormalLog2 = info.minSubnormalLog2, minNormalLog2 = info.minNormalLog2;
        mantissaBits = info.mantissaBits, maxFinite = info.maxFinite;
    } else if (const auto m = parseMiniFormat(format)) {
        const MiniFormatInfo& info = miniFormatInfo(*m);
        minSubnormalLog2 = info.minSubnormalLog2, minNormalLog2 = info.minNormalLog2;
        mantissaBits = info.mantissaBits, maxFinite = info.maxFinite;
    } else {
        return std::nullopt;
    }
    if (name == "format_min_subnormal") return std::ldexp(1.0, minSubnormalLog2);
    if (name == "format_min_normal") return std::ldexp(1.0, minNormalLog2);
    if (name == "format_max") return maxFinite;
    if (name == "format_epsilon") return std::ldexp(1.0, -mantissaBits);
    return mantissaBits;
}

std::string withThousands(long long v)
{
    // The magnitude as unsigned: -v overflows for the most negative value.
    const unsigned long long magnitude = v < 0 ? 0ULL - static_cast<unsigned long long>(v) : static_cast<unsigned long long>(v);
    std::string digits = std::to_string(magnitude);
    std::string out;
    for (std::size_t i = 0; i < digits.size(); ++i) {
        if (i && (digits.size() - i) % 3 == 0) out += ',';
        out += digits[i];
    }
    return (v < 0 ? "-" : "") + out;
}

std::string significant(double v, int digits)
{
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*g", digits, v);
    return buf;
}

}  // namespace

const std::vector<MetricInfo>& lessonMetrics() { return kMetrics; }

const MetricInfo* findMetric(std::string_view metric) { return parseMetric(metric).info; }

std::vector<std::string> telemetryLayers(const ModelSpec& model)
{
    std::vector<std::string> layers{"input"};
    for (auto& n : tapLayerNames(model)) layers.push_back(n);
    layers.emplace_back("loss");
    return layers;
}

std::string checkMetric(std::string_view metric, const TrainSettings* settings)
{
    const Parsed p = parseMetric(metric);
    const std::string quoted = quotedExcerpt(metric);
    if (!p.info) return "unknown metric " + quoted + " (`plab lesson --metrics` lists them)";
    const std::size_t want = expectedArgs(*p.info);
    if (p.args.size() != want)
        return "metric " + quoted + " takes " + (want ? std::string(p.info->args) : std::string("no arguments"));
    if (!p.info->perRun) {
        if (!formatFact(p.info->name, p.args[0])) return "metric " + quoted + ": unknown format " + quotedExcerpt(p.args[0]);
        return {};
    }
    if (!settings) return "metric " + quoted + " needs a run";
    const std::string_view spec = p.info->args;
    std::vector<std::string> layers;
    const auto knowsLayer = [&](const std::string& layer, bool allowAll) {
        if (allowAll && layer == "all") return true;
        if (layers.empty()) layers = telemetryLayers(settings->model);
        return std::find(layers.begin(), layers.end(), layer) != layers.end();
    };
    const auto badLayer = [&](const std::string& layer) {
        std::string list;
        for (const auto& l : layers) list += (list.empty() ? "" : ", ") + l;
        return "metric " + quoted + ": the model " + settings->model.kind + " has no layer " + quotedExcerpt(layer) + " (it has " + list + ")";
    };
    const auto checkStep = [&](const std::string& step) -> std::string {
        if (step == "last") return {};
        const auto s = parseInt(step);
        if (!s || *s < 1) return "metric " + quoted + ": the step must be a positive number or \"last\"";
        const bool histogramStep = settings->histogramEvery > 0 && (*s == 1 || *s % settings->histogramEvery == 0);
        if (!histogramStep || (settings->maxSteps > 0 && *s > settings->maxSteps))
            return "metric " + quoted + ": step " + quotedExcerpt(step) + " is not a telemetry step of the run (step 1 and every " +
                   std::to_string(settings->histogramEvery) + " steps)";
        return {};
    };
    if (spec == "N") {
        const auto n = parseInt(p.args[0]);
        if (!n || *n < 1) return "metric " + quoted + ": N must be a positive number of steps";
    } else if (spec == "LAYER" || spec == "LAYER|all") {
        if (!knowsLayer(p.args[0], spec == "LAYER|all")) return badLayer(p.args[0]);
    } else if (spec == "CATEGORY") {
        if (!isCategory(p.args[0])) return "metric " + quoted + ": unknown memory category " + quotedExcerpt(p.args[0]);
    } else if (spec == "LAYER,KIND") {
        if (!knowsLayer(p.args[0], false)) return badLayer(p.args[0]);
        if (!parseTensorKind(p.args[1])) return "metric " + quoted + ": unknown tensor kind " + quotedExcerpt(p.args[1]);
    } else if (spec == "LAYER,KIND,STEP") {
        if (!knowsLayer(p.args[0], false)) return badLayer(p.args[0]);
        if (!parseTensorKind(p.args[1])) return "metric " + quoted + ": unknown tensor kind " + quotedExcerpt(p.args[1]);
        if (auto problem = checkStep(p.args[2]); !problem.empty()) return problem;
    } else if (spec == "LAYER,STEP" || spec == "LAYER|all,STEP") {
        if (!knowsLayer(p.args[0], spec == "LAYER|all,STEP")) return badLayer(p.args[0]);
        if (auto problem = checkStep(p.args[1]); !problem.empty()) return problem;
    }
    return {};
}

std::optional<double> evaluateMetric(std::string_view metric, const RunRecord* record, std::string* why)
{
    const Parsed p = parseMetric(metric);
    if (!p.info || p.args.size() != expectedArgs(*p.info)) {
        if (why) *why = "unknown metric " + quotedExcerpt(metric);
        return std::nullopt;
    }
    const std::string_view name = p.info->name;
    if (!p.info->perRun) {
        const auto fact = formatFact(name, p.args[0]);
        if (!fact && why) *why = "unknown format " + p.args[0];
        return fact;
    }
    if (!record) {
        if (why) *why = "no run record";
        return std::nullopt;
    }
    const RunRecord& r = *record;
    const auto& a = p.args;

    if (name == "test_accuracy") return summaryNumber(r.summary.testAccuracy, "test_accuracy", why);
    if (name == "best_test_accuracy") return summaryNumber(r.summary.bestTestAccuracy, "best_test_accuracy", why);
    if (name == "test_mse") return summaryNumber(r.summary.testMse, "test_mse", why);
    if (name == "best_test_mse") return summaryNumber(r.summary.bestTestMse, "best_test_mse", why);
    if (name == "test_psnr") {
        const auto mse = summaryNumber(r.summary.testMse, "test_mse", why);
        return mse ? std::optional<double>(psnrDb(*mse)) : std::nullopt;
    }
    if (name == "steps") return static_cast<double>(r.summary.steps);
    if (name == "skipped_steps") return static_cast<double>(r.summary.skippedSteps);
    if (name == "loss_mean_first" || name == "loss_mean_last") {
        const auto all = losses(r);
        const auto n = static_cast<std::size_t>(*parseInt(a[0]));
        if (all.empty()) {
            if (why) *why = "the run recorded no steps";
            return std::nullopt;
        }
        const std::size_t k = std::min(n, all.size());
        const auto begin = name == "loss_mean_first" ? all.begin() : all.end() - static_cast<std::ptrdiff_t>(k);
        double sum = 0;
        for (auto it = begin; it != begin + static_cast<std::ptrdiff_t>(k); ++it) sum += *it;
        return sum / static_cast<double>(k);
    }
    if (name == "loss_nonfinite_steps") {
        double n = 0;
        for (double l : losses(r)) n += std::isfinite(l) ? 0 : 1;
        return n;
    }
    if (name == "loss_scale_final") return scaleStat(r, "final", why);
    if (name == "loss_scale_min") return scaleStat(r, "min", why);
    if (name == "loss_scale_max") return scaleStat(r, "max", why);
    if (name == "loss_scale_growths") return scaleStat(r, "growths", why);
    using L = const LayerFractions&;
    if (name == "weight_grad_underflow")
        return perLayerSummary(r, "underflow_fraction", a[0], [](L l) { return l.underflow; }, why);
    if (name == "weight_grad_overflow")
        return perLayerSummary(r, "overflow_fraction", a[0], [](L l) { return l.overflow; }, why);
    if (name == "activation_grad_underflow")
        return perLayerSummary(r, "activation_grad_underflow_fraction", a[0], [](L l) { return l.activationGradUnderflow; }, why);
    if (name == "lost_updates")
        return perLayerSummary(r, "lost_update_fraction", a[0], [](L l) { return l.lostUpdate; }, why);
    if (name == "weights_made_non_finite")
        return perLayerSummary(r, "weights_made_non_finite", a[0], [](L l) { return countOf(l.weightsMadeNonFinite); }, why);
    if (name == "accumulation_lost")
        return perLayerSummary(r, "accumulation_lost_fraction", a[0], [](L l) { return l.accumulationLost; }, why);
    if (name == "optimizer_state_flushed")
        return perLayerSummary(r, "optimizer_state_flushed", a[0], [](L l) { return countOf(l.stateFlushed); }, why);
    if (name == "optimizer_state_made_non_finite")
        return perLayerSummary(r, "optimizer_state_made_non_finite", a[0], [](L l) { return countOf(l.stateMadeNonFinite); }, why);
    // One snapshot's rounding counts of (layer, kind) added to s; false where it has none.
    const auto addStats = [](const TelemetryEvent& snap, const std::string& layer, const std::string& kind, RoundingStats& s) {
        const LayerTelemetry* entry = layerEntry(snap, layer, kind);
        if (!entry) return false;
        const RoundingStats& st = entry->stats;
        s.count += st.count;
        s.zerosIn += st.zerosIn;
        s.nan += st.nan;
        s.infIn += st.infIn;
        s.underflow += st.underflow;
        s.overflow += st.overflow;
        return true;
    };
    if (name == "snapshot_underflow" || name == "snapshot_overflow") {
        const TelemetryEvent* snap = snapshotAt(r, a[2], why);
        if (!snap) return std::nullopt;
        RoundingStats s;
        if (!addStats(*snap, a[0], a[1], s)) {
            if (why) *why = "no " + a[1] + " telemetry for " + a[0] + " at step " + a[2];
            return std::nullopt;
        }
        const auto share = name == "snapshot_underflow" ? underflowShare(s) : overflowShare(s);
        if (!share && why) *why = "no nonzero finite " + a[1] + " values of " + a[0] + " at step " + a[2];
        return share;
    }
    if (name == "snapshots_underflow" || name == "snapshots_overflow" || name == "snapshots_underflow_count" ||
        name == "snapshots_overflow_count" || name == "snapshots_nonzero") {
        RoundingStats s;
        bool found = false;
        for (const auto& snap : r.telemetry) found = addStats(snap, a[0], a[1], s) || found;
        if (!found) {
            if (why) *why = "no " + a[1] + " telemetry for " + a[0];
            return std::nullopt;
        }
        if (name == "snapshots_underflow_count") return static_cast<double>(s.underflow);
        if (name == "snapshots_overflow_count") return static_cast<double>(s.overflow);
        if (name == "snapshots_nonzero") return static_cast<double>(s.nonzeroFinite());
        const auto share = name == "snapshots_underflow" ? underflowShare(s) : overflowShare(s);
        if (!share && why) *why = "no nonzero finite " + a[1] + " values of " + a[0] + " at any telemetry step";
        return share;
    }
    if (name == "run_underflow" || name == "run_overflow") {
        if (!r.summary.hasRunRounding) {
            if (why)
                *why = "the record has no run totals (summary.run_rounding: written by plab since 2026-11-28; "
                       "older records and the PyTorch probe's have none)";
            return std::nullopt;
        }
        if (r.summary.runRoundingThroughStep < r.summary.steps) {
            if (why)
                *why = "the record's run totals reach step " + std::to_string(r.summary.runRoundingThroughStep) +
                       " of its " + std::to_string(r.summary.steps);
            return std::nullopt;
        }
        const auto kind = parseTensorKind(a[1]);
        const RecordedSummary::SiteTotals* totals = kind ? r.summary.runTotals(a[0], *kind) : nullptr;
        if (!totals) {
            if (why) *why = "no " + a[1] + " values of " + a[0] + " were rounded in this run";
            return std::nullopt;
        }
        if (totals->librarySteps > 0) {
            if (why)
                *why = "at " + std::to_string(totals->librarySteps) + " steps a library rounded " + a[0] + "'s " + a[1] +
                       " values first, uncounted (telemetry sampled): its totals hide what underflowed or overflowed there";
            return std::nullopt;
        }
        const auto share = name == "run_underflow" ? underflowShare(totals->stats) : overflowShare(totals->stats);
        if (!share && why) *why = "no nonzero finite " + a[1] + " values of " + a[0] + " in the run";
        return share;
    }
    if (name == "snapshots_largest") {
        // The upper edge of the largest nonzero bin: bin b holds [2^exponentOf(b), twice that).
        std::optional<double> largest;
        for (const auto& snap : r.telemetry) {
            const LayerTelemetry* entry = layerEntry(snap, a[0], a[1]);
            if (!entry) continue;
            for (int b = GradientHistogram::kBins; b-- > 0;)
                if (entry->histogram.bins[static_cast<std::size_t>(b)] > 0) {
                    largest = std::max(largest.value_or(0.0), std::ldexp(1.0, GradientHistogram::exponentOf(b) + 1));
                    break;
                }
        }
        if (!largest && why) *why = "no nonzero finite " + a[1] + " values of " + a[0] + " in any histogram";
        return largest;
    }
    if (name == "snapshot_scale") {
        const TelemetryEvent* snap = snapshotAt(r, a[2], why);
        if (!snap) return std::nullopt;
        const LayerTelemetry* entry = layerEntry(*snap, a[0], a[1]);
        if (!entry || !entry->scaling.tensorScale) {
            if (why) *why = "no per-tensor scale of " + a[1] + " for " + a[0] + " at step " + a[2];
            return std::nullopt;
        }
        return static_cast<double>(entry->scaling.scale);
    }
    if (name == "snapshot_lost_updates" || name == "snapshot_non_finite_updates" || name == "snapshot_zero_grads") {
        const TelemetryEvent* snap = snapshotAt(r, a[1], why);
        if (!snap) return std::nullopt;
        std::uint64_t lost = 0, nonzero = 0, nonFinite = 0, zeros = 0;
        bool found = false;
        for (const LayerTelemetry& l : snap->layers) {
            if (l.kind != TensorKind::weightGrad || (a[0] != "all" && l.layer != a[0])) continue;
            found = true;
            lost += static_cast<std::uint64_t>(l.update.lost);
            nonzero += static_cast<std::uint64_t>(l.update.nonzero);
            nonFinite += static_cast<std::uint64_t>(l.update.nonFinite);
            zeros += l.stats.zerosIn + l.stats.underflow;
        }
        if (!found) {
            if (why) *why = "no weight-gradient telemetry for " + a[0] + " at step " + a[1];
            return std::nullopt;
        }
        if (name == "snapshot_lost_updates") {
            const UpdateCounts counts{static_cast<std::int64_t>(nonzero), static_cast<std::int64_t>(lost), 0};
            const auto share = counts.lostShare();
            if (!share && why) *why = "no nonzero update of " + a[0] + " at step " + a[1];
            return share;
        }
        return static_cast<double>(name == "snapshot_zero_grads" ? zeros : nonFinite);
    }
    if (name == "memory_peak") return memoryPeak(r.memory.peak, "peak", a[0], why);
    if (name == "memory_training_peak") return memoryPeak(r.memory.trainingPeak, "training_peak", a[0], why);
    if (name == "memory_evaluation_peak") return memoryPeak(r.memory.evaluationPeak, "evaluation_peak", a[0], why);
    if (why) *why = "metric " + quotedExcerpt(metric) + " has no evaluation";
    return std::nullopt;
}

bool isKnownValueStyle(std::string_view style)
{
    for (std::string_view s : {"", "pct", "pct0", "pct2", "pts", "int", "num", "pow2", "mib", "x"})
        if (s == style) return true;
    return false;
}

std::string formatMetricValue(double v, std::string_view style, MetricUnit unit)
{
    if (std::isnan(v)) return "NaN";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    if (style.empty()) {
        switch (unit) {
        case MetricUnit::fraction: style = "pct"; break;
        case MetricUnit::count: style = "int"; break;
        case MetricUnit::bytes: style = "mib"; break;
        case MetricUnit::scale: style = "pow2"; break;
        default: style = "num"; break;
        }
    }
    // A fixed number of decimals where the value fits a line, else three significant digits
    // in powers of ten: any magnitude keeps its unit (a value over 1e15 had filled the buffer).
    const auto fixed = [](double x, int decimals) {
        if (!(std::fabs(x) < 1e15)) return significant(x, 3);
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.*f", decimals, x);
        return std::string(buf);
    };
    if (style == "pct" || style == "pct0" || style == "pct2" || style == "pts") {
        const double p = 100.0 * v;
        const char* suffix = style == "pts" ? " points" : "%";
        if (style == "pct0") return fixed(p, 0) + suffix;
        if (style == "pct2") return fixed(p, 2) + suffix;
        if (p != 0 && std::fabs(p) < 0.1) return significant(p, 2) + suffix;
        return fixed(p, 1) + suffix;
    }
    if (style == "int") {
        // A whole number as long as one is exact in a long long; beyond (fp32's largest
        // value is 3.4e38) the value in powers of ten, never a wrapped-around integer.
        if (std::fabs(v) < 0x1p63) return withThousands(std::llround(v));
        return significant(v, 3);
    }
    if (style == "mib") return fixed(v / (1024.0 * 1024.0), 1) + " MiB";
    if (style == "x") return "x" + fixed(v, 1);
    if (style == "pow2" && v > 0) {
        const double e = std::log2(v);
        if (e == std::round(e)) return "2^" + std::to_string(static_cast<long long>(e));
        return "2^" + fixed(e, 1);
    }
    return significant(v, 3);
}

}  // namespace plab
