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

using nlohmann::json;

namespace {

// The table. args: LAYER (a telemetry layer), LAYER|all, CATEGORY (a memory category or
// "total"), N (a positive step count), FORMAT, and snapshots LAYER,KIND,STEP / LAYER,STEP
// where STEP is a telemetry step of the run or "last".
const std::vector<MetricInfo> kMetrics = {
    {"test_accuracy", "", "test accuracy of the last evaluation (0-1)", MetricUnit::fraction, true},
    {"best_test_accuracy", "", "best test accuracy of the run (0-1)", MetricUnit::fraction, true},
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
    {"weights_made_non_finite", "LAYER|all", "finite weights an update made inf or NaN, over the run", MetricUnit::count, true},
    {"optimizer_state_flushed", "LAYER|all", "optimizer-state elements (momentum, Adam's m and v) a step left at 0 where fp32 gives a nonzero value, over the run", MetricUnit::count, true},
    {"optimizer_state_made_non_finite", "LAYER|all", "finite optimizer-state elements a step made inf or NaN, over the run", MetricUnit::count, true},
    {"snapshot_underflow", "LAYER,KIND,STEP", "nonzero values rounded to 0 at one telemetry step (fraction)", MetricUnit::fraction, true},
    {"snapshot_overflow", "LAYER,KIND,STEP", "nonzero values rounded to inf (quantised kinds: saturated) at one telemetry step (fraction)", MetricUnit::fraction, true},
    {"snapshots_underflow", "LAYER,KIND", "nonzero values rounded to 0, summed over all the run's telemetry steps (fraction)", MetricUnit::fraction, true},
    {"snapshots_overflow", "LAYER,KIND", "nonzero values rounded to inf (quantised kinds: saturated), summed over all the run's telemetry steps (fraction)", MetricUnit::fraction, true},
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

std::uint64_t u64(const json& j, const char* key)
{
    const auto it = j.find(key);
    if (it == j.end() || !it->is_number_integer()) return 0;
    return it->is_number_unsigned() || it->get<std::int64_t>() >= 0 ? it->get<std::uint64_t>() : 0;
}

// The telemetry snapshot at `step` ("last": the last one with histograms).
const json* snapshotAt(const json& record, const std::string& step, std::string* why)
{
    const auto it = record.find("telemetry");
    if (it == record.end() || !it->is_array() || it->empty()) {
        if (why) *why = "the run recorded no telemetry";
        return nullptr;
    }
    if (step == "last") return &it->back();
    const auto wanted = parseInt(step);
    for (const auto& t : *it)
        if (wanted && t.contains("step") && t["step"].is_number_integer() && t["step"].get<std::int64_t>() == *wanted)
            return &t;
    if (why) *why = "the run recorded no telemetry at step " + step;
    return nullptr;
}

const json* layerEntry(const json& snapshot, const std::string& layer, std::string_view kind)
{
    const auto it = snapshot.find("layers");
    if (it == snapshot.end() || !it->is_array()) return nullptr;
    for (const auto& l : *it)
        if (l.value("layer", "") == layer && l.value("kind", "") == kind) return &l;
    return nullptr;
}

std::optional<double> summaryNumber(const json& record, const char* key, std::string* why)
{
    const auto s = record.find("summary");
    if (s != record.end() && s->contains(key) && (*s)[key].is_number()) return (*s)[key].get<double>();
    if (why) *why = std::string("the record has no summary.") + key;
    return std::nullopt;
}

std::optional<double> perLayerSummary(const json& record, const char* key, const std::string& layer, std::string* why)
{
    const auto s = record.find("summary");
    if (s != record.end() && s->contains(key) && (*s)[key].is_object()) {
        const json& m = (*s)[key];
        if (layer == "all") {
            double sum = 0;
            for (const auto& [k, v] : m.items())
                if (v.is_number()) sum += v.get<double>();
            return sum;
        }
        if (m.contains(layer) && m[layer].is_number()) return m[layer].get<double>();
        if (m.contains(layer) && m[layer].is_null()) {
            if (why) *why = std::string("summary.") + key + " of " + layer + " is empty: nothing was there to count";
            return std::nullopt;
        }
    }
    if (why) *why = std::string("the record has no summary.") + key + " for " + layer;
    return std::nullopt;
}

std::vector<double> losses(const json& record)
{
    std::vector<double> out;
    const auto it = record.find("steps");
    if (it == record.end() || !it->is_array()) return out;
    for (const auto& s : *it) {
        const auto l = s.find("loss");
        out.push_back(l != s.end() && l->is_number() ? l->get<double>() : std::numeric_limits<double>::quiet_NaN());
    }
    return out;
}

std::optional<double> scaleStat(const json& record, std::string_view which, std::string* why)
{
    const auto it = record.find("steps");
    if (it == record.end() || !it->is_array() || it->empty()) {
        if (why) *why = "the run recorded no steps";
        return std::nullopt;
    }
    double lo = std::numeric_limits<double>::infinity(), hi = 0, last = 0;
    int growths = 0;
    for (std::size_t i = 0; i < it->size(); ++i) {
        const double v = (*it)[i].value("loss_scale", 1.0);
        if (i > 0 && v > last) ++growths;
        lo = std::min(lo, v);
        hi = std::max(hi, v);
        last = v;
    }
    if (which == "growths") return growths;
    return which == "min" ? lo : which == "max" ? hi : last;
}

std::optional<double> memoryPeak(const json& record, const char* key, const std::string& category, std::string* why)
{
    const auto m = record.find("memory");
    if (m != record.end() && m->contains(key) && (*m)[key].is_object() && (*m)[key].contains(category) &&
        (*m)[key][category].is_number())
        return (*m)[key][category].get<double>();
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

std::optional<double> evaluateMetric(std::string_view metric, const json* record, std::string* why)
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
    if (!record || !record->is_object()) {
        if (why) *why = "no run record";
        return std::nullopt;
    }
    const json& r = *record;
    const auto& a = p.args;

    if (name == "test_accuracy" || name == "best_test_accuracy" || name == "steps" || name == "skipped_steps")
        return summaryNumber(r, std::string(name).c_str(), why);
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
    if (name == "weight_grad_underflow") return perLayerSummary(r, "underflow_fraction", a[0], why);
    if (name == "weight_grad_overflow") return perLayerSummary(r, "overflow_fraction", a[0], why);
    if (name == "activation_grad_underflow") return perLayerSummary(r, "activation_grad_underflow_fraction", a[0], why);
    if (name == "lost_updates") return perLayerSummary(r, "lost_update_fraction", a[0], why);
    if (name == "weights_made_non_finite") return perLayerSummary(r, "weights_made_non_finite", a[0], why);
    if (name == "optimizer_state_flushed") return perLayerSummary(r, "optimizer_state_flushed", a[0], why);
    if (name == "optimizer_state_made_non_finite")
        return perLayerSummary(r, "optimizer_state_made_non_finite", a[0], why);
    // One snapshot's rounding counts of (layer, kind) added to s; false where it has none.
    const auto addStats = [](const json& snap, const std::string& layer, const std::string& kind, RoundingStats& s) {
        const json* entry = layerEntry(snap, layer, kind);
        if (!entry || !entry->contains("stats")) return false;
        const json& st = (*entry)["stats"];
        s.count += u64(st, "count");
        s.zerosIn += u64(st, "zeros_in");
        s.nan += u64(st, "nan");
        s.infIn += u64(st, "inf_in");
        s.underflow += u64(st, "underflow");
        s.overflow += u64(st, "overflow");
        return true;
    };
    if (name == "snapshot_underflow" || name == "snapshot_overflow") {
        const json* snap = snapshotAt(r, a[2], why);
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
    if (name == "snapshots_underflow" || name == "snapshots_overflow") {
        RoundingStats s;
        bool found = false;
        if (const auto t = r.find("telemetry"); t != r.end() && t->is_array())
            for (const auto& snap : *t) found = addStats(snap, a[0], a[1], s) || found;
        if (!found) {
            if (why) *why = "no " + a[1] + " telemetry for " + a[0];
            return std::nullopt;
        }
        const auto share = name == "snapshots_underflow" ? underflowShare(s) : overflowShare(s);
        if (!share && why) *why = "no nonzero finite " + a[1] + " values of " + a[0] + " at any telemetry step";
        return share;
    }
    if (name == "snapshots_largest") {
        // Bin i of a histogram holds the values in [2^(first_exponent + i), twice that).
        std::optional<double> largest;
        if (const auto t = r.find("telemetry"); t != r.end() && t->is_array())
            for (const auto& snap : *t) {
                const json* entry = layerEntry(snap, a[0], a[1]);
                if (!entry || !entry->contains("histogram") || !(*entry)["histogram"].is_object()) continue;
                const json& h = (*entry)["histogram"];
                const auto first = h.find("first_exponent");
                const auto counts = h.find("counts");
                if (first == h.end() || !first->is_number_integer() || counts == h.end() || !counts->is_array())
                    continue;
                for (std::size_t i = counts->size(); i-- > 0;)
                    if ((*counts)[i].is_number() && (*counts)[i].get<double>() > 0) {
                        const double edge = std::ldexp(1.0, static_cast<int>(first->get<std::int64_t>()) + static_cast<int>(i) + 1);
                        largest = std::max(largest.value_or(0.0), edge);
                        break;
                    }
            }
        if (!largest && why) *why = "no nonzero finite " + a[1] + " values of " + a[0] + " in any histogram";
        return largest;
    }
    if (name == "snapshot_scale") {
        const json* snap = snapshotAt(r, a[2], why);
        if (!snap) return std::nullopt;
        const json* entry = layerEntry(*snap, a[0], a[1]);
        if (!entry || !entry->contains("scale") || !(*entry)["scale"].is_number()) {
            if (why) *why = "no per-tensor scale of " + a[1] + " for " + a[0] + " at step " + a[2];
            return std::nullopt;
        }
        return (*entry)["scale"].get<double>();
    }
    if (name == "snapshot_lost_updates" || name == "snapshot_non_finite_updates" || name == "snapshot_zero_grads") {
        const json* snap = snapshotAt(r, a[1], why);
        if (!snap) return std::nullopt;
        std::uint64_t lost = 0, nonzero = 0, nonFinite = 0, zeros = 0;
        bool found = false;
        for (const auto& l : snap->value("layers", json::array())) {
            if (l.value("kind", "") != "weight_grad" || (a[0] != "all" && l.value("layer", "") != a[0])) continue;
            found = true;
            lost += u64(l, "lost_updates");
            nonzero += u64(l, "nonzero_updates");
            nonFinite += u64(l, "non_finite_updates");
            if (l.contains("stats")) zeros += u64(l["stats"], "zeros_in") + u64(l["stats"], "underflow");
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
    if (name == "memory_peak") return memoryPeak(r, "peak", a[0], why);
    if (name == "memory_training_peak") return memoryPeak(r, "training_peak", a[0], why);
    if (name == "memory_evaluation_peak") return memoryPeak(r, "evaluation_peak", a[0], why);
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
    char buf[64];
    if (style == "pct" || style == "pct0" || style == "pct2" || style == "pts") {
        const double p = 100.0 * v;
        const char* suffix = style == "pts" ? " points" : "%";
        if (style == "pct0") std::snprintf(buf, sizeof buf, "%.0f%s", p, suffix);
        else if (style == "pct2") std::snprintf(buf, sizeof buf, "%.2f%s", p, suffix);
        else if (p != 0 && std::fabs(p) < 0.1) return significant(p, 2) + suffix;
        else std::snprintf(buf, sizeof buf, "%.1f%s", p, suffix);
        return buf;
    }
    if (style == "int") {
        // A whole number as long as one is exact in a long long; beyond (fp32's largest
        // value is 3.4e38) the value in powers of ten, never a wrapped-around integer.
        if (std::fabs(v) < 0x1p63) return withThousands(std::llround(v));
        return significant(v, 3);
    }
    if (style == "mib") {
        std::snprintf(buf, sizeof buf, "%.1f MiB", v / (1024.0 * 1024.0));
        return buf;
    }
    if (style == "x") {
        std::snprintf(buf, sizeof buf, "x%.1f", v);
        return buf;
    }
    if (style == "pow2" && v > 0) {
        const double e = std::log2(v);
        if (e == std::round(e)) return "2^" + std::to_string(static_cast<long long>(e));
        std::snprintf(buf, sizeof buf, "2^%.1f", e);
        return buf;
    }
    return significant(v, 3);
}

}  // namespace plab
