// Digesting run records into RunDigest, labelling compared runs, the settings table and
// the terminal table. See run_comparison.h.
#include "report/run_comparison.h"

#include "json/json_input.h"

#include "amp/recipe.h"
#include "error.h"
#include "report/recipe_phrase.h"
#include "report/run_record.h"
#include "train/settings.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>

namespace plab {

using nlohmann::json;

namespace {

// Layers in model order: the input first, the loss last, the rest as recorded.
int layerRank(const std::string& layer)
{
    if (layer == "input") return 0;
    if (layer == "loss") return 2;
    return 1;
}

void addLayerName(std::vector<std::string>& order, const std::string& layer)
{
    if (std::find(order.begin(), order.end(), layer) == order.end()) order.push_back(layer);
}

void sortLayers(std::vector<std::string>& order)
{
    std::stable_sort(order.begin(), order.end(),
                     [](const std::string& a, const std::string& b) { return layerRank(a) < layerRank(b); });
}

// ---- The schema's readers (docs/RUN_RECORD.md) ---------------------------------------------
// An absent key reads as its default (older records lack newer fields); a present one must
// have its documented type and range, or the record is refused naming the place and the key.
// Messages are built only on failure.

// Where a field is: "the summary", "step 12", "the evaluation at step 40", ...
struct Place {
    const char* what;
    std::int64_t step = -1;   // appended when not negative
    std::string text() const { return step >= 0 ? std::string(what) + " " + std::to_string(step) : what; }
};

[[noreturn]] void refuseField(const Place& at, const char* key, const char* must, const json& got)
{
    throw InputError(at.text() + ": \"" + key + "\" must be " + must + ", got " + jsonExcerpt(got));
}

constexpr std::int64_t kMaxWhole = std::int64_t{1} << 62;

// A whole number of at least lo (counts, steps, epochs, batches); `fallback` when absent.
std::int64_t whole(const json& obj, const char* key, const Place& at, std::int64_t lo = 0, std::int64_t fallback = 0)
{
    const auto it = obj.find(key);
    if (it == obj.end()) return fallback;
    try {
        return jsonWhole(*it, lo, kMaxWhole, key);
    } catch (const InputError&) {
        refuseField(at, key, lo == 0 ? "a whole number of at least 0" : "a whole number of at least 1", *it);
    }
}

// The ranges of the schema's real numbers.
struct Range {
    double lo, hi;
    const char* must;
};
constexpr Range kFraction{0.0, 1.0, "a number from 0 to 1"};
constexpr Range kNonNegative{0.0, std::numeric_limits<double>::max(), "a number of at least 0"};
constexpr Range kPositive{std::numeric_limits<double>::min(), std::numeric_limits<double>::max(), "a positive number"};
constexpr Range kFinite{-std::numeric_limits<double>::max(), std::numeric_limits<double>::max(), "a number"};

// A number in its range; nullopt when absent or null (what was not measured, or a loss that
// was not finite).
std::optional<double> number(const json& obj, const char* key, const Place& at, const Range& range)
{
    const auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return std::nullopt;
    if (!it->is_number()) refuseField(at, key, range.must, *it);
    const double v = it->get<double>();
    if (!(v >= range.lo && v <= range.hi)) refuseField(at, key, range.must, *it);   // NaN fails too
    return v;
}

// The elements of an array section, each an object.
const json& entries(const json& record, const char* key, const json& empty)
{
    const auto it = record.find(key);
    if (it == record.end()) return empty;
    if (!it->is_array()) throw InputError(std::string("\"") + key + "\" must be an array, got " + jsonExcerpt(*it));
    for (const json& e : *it)
        if (!e.is_object())
            throw InputError(std::string("every entry of \"") + key + "\" must be an object, got " + jsonExcerpt(e));
    return *it;
}

LayerSnapshot snapshotFromJson(const json& l, const Place& at)
{
    LayerSnapshot s;
    s.layer = jsonTextOr(l, "layer");
    s.kind = jsonTextOr(l, "kind");
    s.stats = roundingStatsFromJson(l.value("stats", json::object()));
    s.updates.lost = whole(l, "lost_updates", at);
    s.updates.nonzero = whole(l, "nonzero_updates", at);
    s.updates.nonFinite = whole(l, "non_finite_updates", at);
    s.updates.stateFlushed = whole(l, "state_flushed", at);
    s.updates.stateNonFinite = whole(l, "state_non_finite", at);
    if (const auto h = l.find("histogram"); h != l.end() && h->is_object()) s.histogram = histogramFromJson(*h);
    return s;
}

}  // namespace

const LayerSnapshot* TelemetryPoint::find(const std::string& layer, const std::string& kind) const
{
    for (const auto& l : layers)
        if (l.layer == layer && l.kind == kind) return &l;
    return nullptr;
}

const LayerFractions* RunDigest::layer(const std::string& name) const
{
    for (const auto& l : layers)
        if (l.layer == name) return &l;
    return nullptr;
}

RunDigest digestRunRecord(const json& record, const std::string& origin)
{
    auto bad = [&](const std::string& what) { return InputError(origin + ": not a usable run record: " + what); };
    if (!record.is_object()) throw bad("expected a JSON object");
    for (const char* key : {"recipe", "settings", "summary", "steps"})
        if (!record.contains(key)) throw bad(std::string("the \"") + key + "\" section is missing");
    if (!record["recipe"].is_object() || !record["settings"].is_object() || !record["summary"].is_object() ||
        !record["steps"].is_array())
        throw bad("recipe, settings and summary must be objects and steps an array");

    RunDigest d;
    try {
        d.origin = origin;
        d.name = jsonTextOr(record, "name");
        d.recipe = record["recipe"];
        d.settings = record["settings"];
        d.finalSettings = settingsFromJson(d.settings, origin + " settings");
        if (const auto events = record.find("events"); events != record.end() && events->is_array())
            for (std::size_t i = 0; i < events->size(); ++i) {
                const json& ev = (*events)[i];
                if (ev.is_object() && ev.value("type", "") == "setting_change" && ev.contains("settings"))
                    d.finalSettings =
                        settingsFromJson(ev["settings"], origin + " events[" + std::to_string(i) + "] settings");
            }
        d.machine = record.value("machine", json::object());
        d.versions = record.value("versions", json::object());
        d.backend = record.value("backend", json::object());
        d.data = record.value("data", json::object());
        d.createdAt = jsonTextOr(record, "created_at");
        d.presetDisplayName = jsonTextOr(d.recipe, "display_name", "Custom");
        d.recipePhrase = recipePhraseOf(d.recipe);
        d.compute = jsonTextOr(d.recipe, "compute", "fp32");
        d.storage = jsonTextOr(d.recipe, "storage", d.compute);
        d.masterWeights = d.recipe.value("master_weights", true);
        d.optimizerState = jsonTextOr(d.recipe, "optimizer_state", optimizerStateByRule(d.recipe));
        d.lossScaleMode = jsonTextOr(d.recipe.value("loss_scaling", json::object()), "mode", "off");
        d.optimizer = jsonTextOr(d.settings, "optimizer", "adam");

        const json& s = record["summary"];
        const Place summary{"the summary"};
        if (const auto it = s.find("status"); it != s.end() && !it->is_string())
            refuseField(summary, "status", "a run status", *it);
        d.status = jsonTextOr(s, "status", "running");
        bool knownStatus = false;
        for (RunStatus st : {RunStatus::starting, RunStatus::running, RunStatus::paused, RunStatus::completed,
                             RunStatus::stopped, RunStatus::diverged, RunStatus::failed})
            knownStatus = knownStatus || d.status == runStatusName(st);
        if (!knownStatus) throw bad("\"status\" " + jsonExcerpt(s.value("status", json())) + " is not a run status");
        d.message = jsonTextOr(s, "message");
        d.steps = whole(s, "steps", summary);
        d.skippedSteps = whole(s, "skipped_steps", summary);
        d.finalAccuracy = number(s, "test_accuracy", summary, kFraction);
        d.bestAccuracy = number(s, "best_test_accuracy", summary, kFraction);
        d.imagesPerSecond = number(s, "images_per_second", summary, kNonNegative).value_or(0.0);

        std::vector<std::string> layerNames;
        for (const char* key : {"underflow_fraction", "overflow_fraction", "lost_update_fraction",
                                "activation_grad_underflow_fraction", "weights_made_non_finite",
                                "optimizer_state_flushed", "optimizer_state_made_non_finite"})
            if (const auto it = s.find(key); it != s.end()) {
                if (!it->is_object()) refuseField(summary, key, "an object of layers", *it);
                for (const auto& [layer, v] : it->items()) addLayerName(layerNames, layer);
            }
        sortLayers(layerNames);
        const json none = json::object();
        const auto perLayer = [&](const char* key) -> const json& {
            const auto it = s.find(key);
            return it == s.end() ? none : *it;
        };
        for (const auto& name : layerNames) {
            // The summary's per-layer values: fractions, and a count of weights.
            const char* layer = name.c_str();
            LayerFractions f;
            f.layer = name;
            f.underflow = number(perLayer("underflow_fraction"), layer, Place{"the summary's underflow_fraction"}, kFraction);
            f.overflow = number(perLayer("overflow_fraction"), layer, Place{"the summary's overflow_fraction"}, kFraction);
            f.activationGradUnderflow = number(perLayer("activation_grad_underflow_fraction"), layer,
                                               Place{"the summary's activation_grad_underflow_fraction"}, kFraction);
            f.lostUpdate = number(perLayer("lost_update_fraction"), layer, Place{"the summary's lost_update_fraction"},
                                  kFraction);
            f.weightsMadeNonFinite = whole(perLayer("weights_made_non_finite"), layer,
                                           Place{"the summary's weights_made_non_finite"});
            // Records before the state was counted have none: 0.
            f.stateFlushed = whole(perLayer("optimizer_state_flushed"), layer, Place{"the summary's optimizer_state_flushed"});
            f.stateMadeNonFinite = whole(perLayer("optimizer_state_made_non_finite"), layer,
                                         Place{"the summary's optimizer_state_made_non_finite"});
            d.layers.push_back(std::move(f));
        }

        const json emptyList = json::array();
        for (const auto& st : entries(record, "steps", emptyList)) {
            StepPoint p;
            p.step = whole(st, "step", Place{"a step"});
            const Place at{"step", p.step};
            p.epoch = static_cast<int>(whole(st, "epoch", at));
            p.batch = static_cast<int>(whole(st, "batch", at, 1));
            p.loss = number(st, "loss", at, kFinite);
            p.lossScale = number(st, "loss_scale", at, kPositive).value_or(1.0);
            if (const auto it = st.find("skipped"); it != st.end() && !it->is_boolean())
                refuseField(at, "skipped", "true or false", *it);
            p.skipped = st.value("skipped", false);
            p.lr = number(st, "lr", at, kNonNegative).value_or(0.0);
            p.timeMs = number(st, "time_ms", at, kNonNegative).value_or(0.0);
            d.stepSeries.push_back(p);
        }
        for (const auto& e : entries(record, "evals", emptyList)) {
            const std::int64_t step = whole(e, "step", Place{"an evaluation"});
            const Place at{"the evaluation at step", step};
            d.evals.push_back({step, static_cast<int>(whole(e, "epoch", at)),
                               number(e, "test_accuracy", at, kFraction).value_or(0.0),
                               number(e, "test_loss", at, kFinite).value_or(0.0)});
        }
        for (const auto& t : entries(record, "telemetry", emptyList)) {
            TelemetryPoint p;
            p.step = whole(t, "step", Place{"a telemetry entry"});
            const Place at{"the telemetry at step", p.step};
            p.lossScale = number(t, "loss_scale", at, kPositive).value_or(1.0);
            for (const auto& l : t.value("layers", json::array())) p.layers.push_back(snapshotFromJson(l, at));
            d.telemetry.push_back(std::move(p));
        }
        const json mem = record.value("memory", json::object());
        d.memoryCategories = mem.value("categories", std::vector<std::string>{});
        const json peak = mem.value("peak", json::object());
        const Place peakPlace{"the memory peak"};
        for (const auto& c : d.memoryCategories) d.peakBytes.push_back(whole(peak, c.c_str(), peakPlace));
        d.peakTotal = whole(peak, "total", peakPlace);
        d.trainingPeakTotal = whole(mem.value("training_peak", json::object()), "total", Place{"the training peak"});
        d.evaluationPeakTotal = whole(mem.value("evaluation_peak", json::object()), "total", Place{"the evaluation peak"});
        for (const auto& m : entries(mem, "samples", emptyList)) {
            const std::int64_t step = whole(m, "step", Place{"a memory sample"});
            const Place at{"the memory sample at step", step};
            std::vector<std::int64_t> bytes;
            if (const auto it = m.find("bytes"); it != m.end()) {
                if (!it->is_array()) refuseField(at, "bytes", "an array of byte counts", *it);
                for (const json& b : *it) {
                    if (!b.is_number()) refuseField(at, "bytes", "an array of byte counts", *it);
                    try {
                        bytes.push_back(jsonWhole(b, 0, kMaxWhole, "bytes"));
                    } catch (const InputError&) {
                        refuseField(at, "bytes", "an array of byte counts", *it);
                    }
                }
            }
            d.memory.push_back({step, std::move(bytes), whole(m, "total", at)});
        }
    } catch (const json::exception& e) {
        throw bad(e.what());
    } catch (const InputError& e) {
        // A field's own check (a number out of range) names the field; this adds the file.
        const std::string what = e.what();
        if (what.rfind(origin, 0) == 0) throw;
        throw bad(what);
    }
    return d;
}

RunComparison compareRuns(std::vector<RunDigest> runs)
{
    RunComparison c;
    // Settings table: every key of every run, in the first run's order.
    std::vector<std::string> keys;
    for (const auto& r : runs)
        for (const auto& [k, v] : r.settings.items())
            if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
    for (const auto& k : keys) {
        SettingRow row;
        row.key = k;
        for (const auto& r : runs) row.values.push_back(r.settings.contains(k) ? settingValueText(r.settings[k]) : "-");
        row.differs = std::adjacent_find(row.values.begin(), row.values.end(), std::not_equal_to<>()) != row.values.end();
        c.settings.push_back(std::move(row));
    }

    // Labels: the record's name, else the recipe phrase; runs that share a label get the
    // settings (outside the recipe) in which they differ from each other.
    for (auto& r : runs) r.label = r.name.empty() ? r.recipePhrase : r.name;
    // Recipe keys are in the phrase already; a data folder and the files a run wrote (the
    // app saves every run's weights under its own name) tell nothing about the run.
    static const std::set<std::string> notInLabels = {
        "recipe", "compute", "master_weights", "optimizer_state", "update_rounding", "fp32_accumulate", "fp32_sensitive_ops", "loss_scale",
        "init_scale", "growth_factor", "backoff_factor", "growth_interval", "min_scale", "max_scale", "data_dir",
        "save_weights", "write_batches"};
    std::map<std::string, std::vector<std::size_t>> byLabel;
    for (std::size_t i = 0; i < runs.size(); ++i) byLabel[runs[i].label].push_back(i);
    for (const auto& [label, members] : byLabel) {
        if (members.size() < 2) continue;
        std::vector<std::string> extra(members.size());
        for (const auto& k : keys) {
            if (notInLabels.count(k)) continue;
            std::set<std::string> distinct;
            for (auto i : members) distinct.insert(runs[i].settings.contains(k) ? settingValueText(runs[i].settings[k]) : "-");
            if (distinct.size() < 2) continue;
            for (std::size_t m = 0; m < members.size(); ++m) {
                const auto& s = runs[members[m]].settings;
                extra[m] += ", " + k + " " + (s.contains(k) ? settingValueText(s[k]) : "-");
            }
        }
        for (std::size_t m = 0; m < members.size(); ++m) runs[members[m]].label += extra[m];
    }
    std::map<std::string, int> seen;   // still equal (identical settings): number them
    for (auto& r : runs)
        if (++seen[r.label] > 1) r.label += " (" + std::to_string(seen[r.label]) + ")";

    for (const auto& r : runs)
        for (const auto& l : r.layers) addLayerName(c.layerOrder, l.layer);
    sortLayers(c.layerOrder);
    c.runs = std::move(runs);
    return c;
}

std::string comparisonTableText(const RunComparison& comparison)
{
    const std::vector<std::string> head = {"run", "status", "steps", "skipped", "final acc", "best acc",
                                           "img/s", "peak memory", "max underflow"};
    std::vector<std::vector<std::string>> rows;
    for (const auto& r : comparison.runs) {
        std::string maxUnderflow = "-";
        double worst = -1.0;
        std::string worstLayer;
        for (const auto& l : r.layers)
            if (l.underflow && *l.underflow > worst) { worst = *l.underflow; worstLayer = l.layer; }
        if (worst >= 0.0) maxUnderflow = formatPercent(worst) + " " + worstLayer;
        char ips[32];
        std::snprintf(ips, sizeof ips, "%.0f", r.imagesPerSecond);
        rows.push_back({r.label, r.status, std::to_string(r.steps), std::to_string(r.skippedSteps),
                        formatAccuracy(r.finalAccuracy), formatAccuracy(r.bestAccuracy), ips,
                        formatMebibytes(r.peakTotal), maxUnderflow});
    }
    std::vector<std::size_t> width(head.size());
    for (std::size_t i = 0; i < head.size(); ++i) width[i] = head[i].size();
    for (const auto& row : rows)
        for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
    std::ostringstream out;
    auto line = [&](const std::vector<std::string>& cells) {
        for (std::size_t i = 0; i < cells.size(); ++i) {
            const std::string pad(width[i] - cells[i].size(), ' ');
            out << (i == 0 ? cells[i] + pad : pad + cells[i]) << (i + 1 < cells.size() ? "  " : "\n");
        }
    };
    line(head);
    for (const auto& row : rows) line(row);
    return out.str();
}

std::string formatPercent(double fraction)
{
    const double pct = 100.0 * fraction;
    char buf[48];
    if (pct == 0.0) return "0%";
    if (!std::isfinite(pct)) return "-";
    // Two significant digits, never in exponent form.
    const int magnitude = static_cast<int>(std::floor(std::log10(std::fabs(pct))));
    const int decimals = std::max(0, 1 - magnitude);
    std::snprintf(buf, sizeof buf, "%.*f%%", decimals, pct);
    return buf;
}

std::string formatAccuracy(std::optional<double> a)
{
    if (!a) return "-";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f%%", 100.0 * *a);
    return buf;
}

std::string formatMebibytes(std::int64_t bytes)
{
    char buf[32];
    const double mib = static_cast<double>(bytes) / (1024.0 * 1024.0);
    std::snprintf(buf, sizeof buf, mib < 10.0 ? "%.2f MiB" : "%.1f MiB", mib);
    return buf;
}

std::string formatCount(std::int64_t n)
{
    std::string digits = std::to_string(n < 0 ? -n : n);
    for (int i = static_cast<int>(digits.size()) - 3; i > 0; i -= 3) digits.insert(static_cast<std::size_t>(i), 1, ',');
    if (n < 0) digits.insert(0, 1, '-');
    return digits;
}

std::string settingValueText(const json& v)
{
    if (v.is_null()) return "-";
    if (v.is_string()) return v.get<std::string>();
    if (v.is_boolean()) return v.get<bool>() ? "on" : "off";
    if (v.is_number_float()) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%g", v.get<double>());
        return buf;
    }
    if (v.is_array()) {
        std::string out;
        for (const auto& e : v) {
            if (!out.empty()) out += ',';
            out += settingValueText(e);
        }
        return out.empty() ? "default" : out;
    }
    return v.dump();
}

}  // namespace plab
