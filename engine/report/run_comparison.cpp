// Digesting run records into RunDigest, labelling compared runs, the settings table and
// the terminal table. See run_comparison.h.
#include "report/run_comparison.h"

#include "json/json_input.h"

#include "amp/recipe.h"
#include "error.h"
#include "report/run_record.h"
#include "train/settings.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
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

std::optional<double> optionalNumber(const json& obj, const char* key)
{
    if (!obj.is_object()) return std::nullopt;
    const auto it = obj.find(key);
    if (it == obj.end() || !it->is_number()) return std::nullopt;
    return it->get<double>();
}

std::int64_t intOr(const json& obj, const char* key, std::int64_t fallback = 0)
{
    // Range-checked before conversion: 1e300 in a damaged record is refused, naming the key.
    const auto it = obj.find(key);
    return it != obj.end() && it->is_number() ? jsonWholeOr(obj, key, -(std::int64_t{1} << 62), std::int64_t{1} << 62)
                                              : fallback;
}

std::string textOr(const json& obj, const char* key, std::string fallback = {})
{
    const auto it = obj.find(key);
    return it != obj.end() && it->is_string() ? it->get<std::string>() : fallback;
}

std::string lossScalingPhrase(const json& ls)
{
    const std::string mode = textOr(ls, "mode", "off");
    if (mode == "off") return "without loss scaling";
    if (mode == "static") return "with static loss scale " + settingValueText(ls.value("init_scale", json(1.0)));
    return "with dynamic loss scaling";
}

// The preset's name plus each switch that differs from the preset, in words.
std::string recipePhraseOf(const json& recipe)
{
    const std::string preset = textOr(recipe, "preset", "custom");
    std::string phrase = textOr(recipe, "display_name", PrecisionRecipe::displayName(preset));
    const auto base = PrecisionRecipe::fromPreset(preset);
    if (!base || !recipe.value("custom", false)) return phrase;
    const json ref = recipeToJson(*base);
    std::vector<std::string> parts;
    if (recipe.value("compute", json()) != ref["compute"])
        parts.push_back(textOr(recipe, "compute") + " compute");
    if (recipe.value("master_weights", json()) != ref["master_weights"])
        parts.push_back(recipe.value("master_weights", true) ? "with fp32 master weights" : "without master weights");
    if (recipe.value("fp32_accumulate", json()) != ref["fp32_accumulate"])
        parts.push_back(recipe.value("fp32_accumulate", true) ? "with fp32 accumulation"
                                                              : "accumulating in " + textOr(recipe, "compute"));
    if (recipe.value("fp32_sensitive_ops", json()) != ref["fp32_sensitive_ops"])
        parts.push_back(recipe.value("fp32_sensitive_ops", true) ? "with fp32 softmax/loss"
                                                                 : "softmax/loss in " + textOr(recipe, "storage"));
    const json ls = recipe.value("loss_scaling", json::object());
    if (ls != ref["loss_scaling"]) {
        if (ls.value("mode", json()) != ref["loss_scaling"]["mode"] || textOr(ls, "mode") == "static")
            parts.push_back(lossScalingPhrase(ls));
        else
            parts.push_back("with custom loss scaling");
    }
    for (std::size_t i = 0; i < parts.size(); ++i) phrase += (i == 0 ? " " : ", ") + parts[i];
    return phrase;
}

LayerSnapshot snapshotFromJson(const json& l)
{
    LayerSnapshot s;
    s.layer = textOr(l, "layer");
    s.kind = textOr(l, "kind");
    s.stats = roundingStatsFromJson(l.value("stats", json::object()));
    s.updates.lost = intOr(l, "lost_updates");
    s.updates.nonzero = intOr(l, "nonzero_updates");
    s.updates.nonFinite = intOr(l, "non_finite_updates");
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
        d.name = textOr(record, "name");
        d.recipe = record["recipe"];
        d.settings = record["settings"];
        d.machine = record.value("machine", json::object());
        d.versions = record.value("versions", json::object());
        d.backend = record.value("backend", json::object());
        d.data = record.value("data", json::object());
        d.createdAt = textOr(record, "created_at");
        d.presetDisplayName = textOr(d.recipe, "display_name", "Custom");
        d.recipePhrase = recipePhraseOf(d.recipe);
        d.compute = textOr(d.recipe, "compute", "fp32");
        d.storage = textOr(d.recipe, "storage", d.compute);
        d.masterWeights = d.recipe.value("master_weights", true);
        d.lossScaleMode = textOr(d.recipe.value("loss_scaling", json::object()), "mode", "off");
        d.optimizer = textOr(d.settings, "optimizer", "adam");

        const json& s = record["summary"];
        d.status = textOr(s, "status", "running");
        // The schema's meaning, not only its types (docs/RUN_RECORD.md): a known status,
        // counts that cannot be negative, a batch of at least one, a loss that is a number.
        bool knownStatus = false;
        for (RunStatus st : {RunStatus::starting, RunStatus::running, RunStatus::paused, RunStatus::completed,
                             RunStatus::stopped, RunStatus::diverged, RunStatus::failed})
            knownStatus = knownStatus || d.status == runStatusName(st);
        if (!knownStatus) throw bad("\"status\" " + jsonExcerpt(s.value("status", json())) + " is not a run status");
        for (const char* key : {"steps", "skipped_steps"})
            if (intOr(s, key) < 0) throw bad(std::string("\"") + key + "\" in the summary is negative");
        d.message = textOr(s, "message");
        d.steps = intOr(s, "steps");
        d.skippedSteps = intOr(s, "skipped_steps");
        d.finalAccuracy = optionalNumber(s, "test_accuracy");
        d.bestAccuracy = optionalNumber(s, "best_test_accuracy");
        d.imagesPerSecond = optionalNumber(s, "images_per_second").value_or(0.0);

        std::vector<std::string> layerNames;
        for (const char* key : {"underflow_fraction", "lost_update_fraction", "activation_grad_underflow_fraction",
                                "weights_made_non_finite"})
            if (s.contains(key) && s[key].is_object())
                for (const auto& [layer, v] : s[key].items()) addLayerName(layerNames, layer);
        sortLayers(layerNames);
        for (const auto& name : layerNames) {
            LayerFractions f;
            f.layer = name;
            f.underflow = optionalNumber(s.value("underflow_fraction", json::object()), name.c_str());
            f.overflow = optionalNumber(s.value("overflow_fraction", json::object()), name.c_str());
            f.activationGradUnderflow =
                optionalNumber(s.value("activation_grad_underflow_fraction", json::object()), name.c_str());
            f.lostUpdate = optionalNumber(s.value("lost_update_fraction", json::object()), name.c_str());
            f.weightsMadeNonFinite = intOr(s.value("weights_made_non_finite", json::object()), name.c_str());   // range-checked
            d.layers.push_back(std::move(f));
        }

        for (const auto& st : record["steps"]) {
            StepPoint p;
            p.step = intOr(st, "step");
            p.epoch = static_cast<int>(intOr(st, "epoch"));
            if (p.step < 0) throw bad("a step's \"step\" is negative");
            if (st.contains("loss") && !st["loss"].is_number() && !st["loss"].is_null())
                throw bad("step " + std::to_string(p.step) + ": \"loss\" must be a number, got " + jsonExcerpt(st["loss"]));
            const std::int64_t batch = intOr(st, "batch");
            p.batch = static_cast<int>(batch);
            if (st.contains("batch") && batch < 1)
                throw bad("step " + std::to_string(p.step) + ": \"batch\" must be at least 1, got " + jsonExcerpt(st["batch"]));
            p.loss = optionalNumber(st, "loss");
            p.lossScale = optionalNumber(st, "loss_scale").value_or(1.0);
            p.skipped = st.value("skipped", false);
            p.lr = optionalNumber(st, "lr").value_or(0.0);
            p.timeMs = optionalNumber(st, "time_ms").value_or(0.0);
            d.stepSeries.push_back(p);
        }
        for (const auto& e : record.value("evals", json::array()))
            d.evals.push_back({intOr(e, "step"), static_cast<int>(intOr(e, "epoch")),
                               optionalNumber(e, "test_accuracy").value_or(0.0),
                               optionalNumber(e, "test_loss").value_or(0.0)});
        for (const auto& t : record.value("telemetry", json::array())) {
            TelemetryPoint p;
            p.step = intOr(t, "step");
            p.lossScale = optionalNumber(t, "loss_scale").value_or(1.0);
            for (const auto& l : t.value("layers", json::array())) p.layers.push_back(snapshotFromJson(l));
            d.telemetry.push_back(std::move(p));
        }
        const json mem = record.value("memory", json::object());
        d.memoryCategories = mem.value("categories", std::vector<std::string>{});
        const json peak = mem.value("peak", json::object());
        for (const auto& c : d.memoryCategories) d.peakBytes.push_back(intOr(peak, c.c_str()));
        d.peakTotal = intOr(peak, "total");
        d.trainingPeakTotal = intOr(mem.value("training_peak", json::object()), "total");
        d.evaluationPeakTotal = intOr(mem.value("evaluation_peak", json::object()), "total");
        for (const auto& m : mem.value("samples", json::array()))
            d.memory.push_back({intOr(m, "step"), m.value("bytes", std::vector<std::int64_t>{}), intOr(m, "total")});
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
    // Recipe keys are in the phrase already; a data folder tells nothing about the run.
    static const std::set<std::string> notInLabels = {
        "recipe", "compute", "master_weights", "fp32_accumulate", "fp32_sensitive_ops", "loss_scale",
        "init_scale", "growth_factor", "backoff_factor", "growth_interval", "min_scale", "max_scale", "data_dir"};
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
    for (int i = static_cast<int>(digits.size()) - 3; i > 0; i -= 3) digits.insert(static_cast<std::size_t>(i), ",");
    return (n < 0 ? "-" : "") + digits;
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
        for (const auto& e : v) out += (out.empty() ? "" : ",") + settingValueText(e);
        return out.empty() ? "default" : out;
    }
    return v.dump();
}

}  // namespace plab
