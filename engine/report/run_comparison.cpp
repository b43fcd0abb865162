// Digesting run records into RunDigest, labelling compared runs, the settings table and
// the terminal table. See run_comparison.h.
#include "report/run_comparison.h"

#include "json/json_input.h"

#include "amp/recipe.h"
#include "error.h"
#include "report/recipe_phrase.h"
#include "telemetry/non_finite_sites.h"
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

#include <nlohmann/json.hpp>

namespace plab {

using nlohmann::json;

namespace {

void addLayerName(std::vector<std::string>& order, const std::string& layer)
{
    if (std::find(order.begin(), order.end(), layer) == order.end()) order.push_back(layer);
}

}  // namespace

const LayerFractions* RunDigest::layer(const std::string& name) const
{
    for (const auto& l : record.summary.layers)
        if (l.layer == name) return &l;
    return nullptr;
}

RunDigest digestRunRecord(const RunRecord& record, const std::string& origin)
{
    RunDigest d;
    d.record = record;
    d.origin = origin;
    const PrecisionRecipe& recipe = record.settings.recipe;
    d.presetDisplayName = PrecisionRecipe::displayName(recipe.preset);
    d.recipePhrase = recipePhraseOf(recipe);
    d.compute = std::string(formatName(recipe.compute));
    d.storage = std::string(formatName(recipe.storage()));
    d.optimizerState = std::string(formatName(recipe.optimizerStateFormat()));
    d.lossScaleMode = lossScaleModeName(recipe.lossScaling.mode);
    for (int c = 0; c < kMemoryCategories; ++c)
        d.memoryCategories.emplace_back(memoryCategoryName(static_cast<MemoryCategory>(c)));
    const MemoryPeaks none;
    const MemoryPeaks& peak = record.memory.peak.value_or(none);
    d.peakBytes.assign(peak.bytes.begin(), peak.bytes.end());
    d.peakTotal = peak.total;
    d.trainingPeakTotal = record.memory.trainingPeak.value_or(none).total;
    d.evaluationPeakTotal = record.memory.evaluationPeak.value_or(none).total;
    return d;
}

RunComparison compareRuns(std::vector<RunDigest> runs)
{
    RunComparison c;
    // Settings table: every key of every run, in the first run's order; a run whose record
    // lacks a key (older than it) shows "-".
    std::vector<std::map<std::string, std::string>> texts;   // per run: key -> value as the table shows it
    std::vector<std::string> keys;
    for (const auto& r : runs) {
        const json all = settingsToJson(r.record.settings);
        auto& text = texts.emplace_back();
        for (const std::string& k : r.record.settingKeys) {
            text[k] = settingValueText(all.at(k));
            if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
        }
    }
    const auto valueOf = [&](std::size_t run, const std::string& key) {
        const auto it = texts[run].find(key);
        return it == texts[run].end() ? std::string("-") : it->second;
    };
    for (const auto& k : keys) {
        SettingRow row;
        row.key = k;
        for (std::size_t i = 0; i < runs.size(); ++i) row.values.push_back(valueOf(i, k));
        // The arithmetic as the run's products ran (the record's backend says, "exact: this CPU
        // has no native fp16 ..."), and what was asked where that differs: asked for hardware
        // units, an AMP FP16 run on a CPU without them ran exact.
        if (k == "arithmetic") {
            row.key = "arithmetic (as run)";
            for (std::size_t i = 0; i < runs.size(); ++i) {
                if (!runs[i].record.arithmetic || runs[i].record.arithmetic->empty()) continue;
                const std::string ran = runs[i].record.arithmetic->substr(0, runs[i].record.arithmetic->find(':'));
                if (ran != row.values[i]) row.values[i] = ran + " (asked: " + row.values[i] + ")";
            }
        }
        row.differs = std::adjacent_find(row.values.begin(), row.values.end(), std::not_equal_to<>()) != row.values.end();
        c.settings.push_back(std::move(row));
    }

    // Labels: the record's name, else the recipe phrase; runs that share a label get the
    // settings (outside the recipe) in which they differ from each other.
    for (auto& r : runs) r.label = r.record.name.empty() ? r.recipePhrase : r.record.name;
    // The recipe's keys are in the phrase already; where a run reads its data and writes its
    // files (the app saves every run's weights under its own name) tell nothing about it.
    const auto inLabels = [](const std::string& key) {
        const SettingKey* k = findSettingKey(key);
        return !recipePhraseSays(key) && !(k && k->group == SettingGroup::files && k->role == SettingRole::observes);
    };
    std::map<std::string, std::vector<std::size_t>> byLabel;
    for (std::size_t i = 0; i < runs.size(); ++i) byLabel[runs[i].label].push_back(i);
    for (const auto& [label, members] : byLabel) {
        if (members.size() < 2) continue;
        std::vector<std::string> extra(members.size());
        for (const auto& k : keys) {
            if (!inLabels(k)) continue;
            std::set<std::string> distinct;
            for (auto i : members) distinct.insert(valueOf(i, k));
            if (distinct.size() < 2) continue;
            for (std::size_t m = 0; m < members.size(); ++m) extra[m] += ", " + k + " " + valueOf(members[m], k);
        }
        for (std::size_t m = 0; m < members.size(); ++m) runs[members[m]].label += extra[m];
    }
    std::map<std::string, int> seen;   // still equal (identical settings): number them
    for (auto& r : runs)
        if (++seen[r.label] > 1) r.label += " (" + std::to_string(seen[r.label]) + ")";

    for (const auto& r : runs)
        for (const auto& l : r.summary().layers) addLayerName(c.layerOrder, l.layer);
    sortLayersInModelOrder(c.layerOrder);
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
        for (const auto& l : r.summary().layers)
            if (l.underflow && *l.underflow > worst) { worst = *l.underflow; worstLayer = l.layer; }
        if (worst >= 0.0) maxUnderflow = formatPercent(worst) + " " + worstLayer;
        char ips[32];
        std::snprintf(ips, sizeof ips, "%.0f", r.summary().imagesPerSecond);
        rows.push_back({r.label, r.summary().status, std::to_string(r.summary().steps), std::to_string(r.summary().skippedSteps),
                        finalResultText(r.summary().testAccuracy, r.summary().testMse),
                        finalResultText(r.summary().bestTestAccuracy, r.summary().bestTestMse), ips,
                        r.peakTotal > 0 ? formatMebibytes(r.peakTotal) : "not measured", maxUnderflow});
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
    for (const auto& r : comparison.runs) {
        const auto why = skipCauseRows(r.record.steps);
        if (why.empty()) continue;
        out << "\nWhy " << r.label << " skipped:\n";
        for (const auto& row : why) out << "  " << row.steps << ": " << row.cause << '\n';
    }
    return out.str();
}

std::vector<SkipCauseRow> skipCauseRows(const std::vector<StepEvent>& steps, std::size_t maxRows)
{
    // The site a stretch is about: its first cause's layer and kind, and whether it overflowed.
    auto siteOf = [](const StepEvent& p) -> std::string {
        const NonFiniteSite* s = firstNonFiniteCause(p.nonFinite);
        if (!s) return {};
        return siteName(*s) + (s->overflow > 0 ? " overflowed" : " met");
    };
    std::vector<SkipCauseRow> rows;
    std::vector<std::int64_t> members;   // the current stretch's steps
    std::string site;
    std::int64_t leftOut = 0;
    const StepEvent* first = nullptr;
    auto close = [&] {
        if (members.empty()) return;
        if (rows.size() >= maxRows) {
            leftOut += static_cast<std::int64_t>(members.size());
        } else {
            SkipCauseRow row{members.front(), members.back(), static_cast<std::int64_t>(members.size()), {}, {}};
            const bool contiguous = row.lastStep - row.firstStep + 1 == row.count;
            if (row.count == 1) row.steps = "step " + std::to_string(row.firstStep);
            else if (row.count == 2) row.steps = "steps " + std::to_string(row.firstStep) + ", " + std::to_string(row.lastStep);
            else
                row.steps = "steps " + std::to_string(row.firstStep) + (contiguous ? "-" : " to ") +
                            std::to_string(row.lastStep) + " (" + formatCount(row.count) + " skipped)";
            row.cause = first->nonFinite.empty() ? "the record names no site that made inf or NaN"
                                                 : skipCauseText(first->nonFinite) + (row.count > 1 ? ", at the first" : "");
            rows.push_back(std::move(row));
        }
        members.clear();
    };
    for (const StepEvent& p : steps) {
        if (!p.skipped) continue;
        std::string s = siteOf(p);
        if (members.empty() || s != site) {
            close();
            site = std::move(s);
            first = &p;
        }
        members.push_back(p.step);
    }
    close();
    if (leftOut > 0)
        rows.push_back({0, 0, leftOut, "and " + formatCount(leftOut) + " more skipped steps",
                        "not listed (the first " + std::to_string(maxRows) + " stretches are)"});
    return rows;
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

std::string finalResultText(std::optional<double> accuracy, std::optional<double> mse)
{
    if (!mse) return formatAccuracy(accuracy);
    char text[32];
    std::snprintf(text, sizeof text, "MSE %.4f", *mse);
    return text;
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
    return formatMebibytes(bytes, static_cast<double>(bytes) < 10.0 * 1024.0 * 1024.0 ? 2 : 1);
}

std::string formatMebibytes(std::int64_t bytes, int decimals)
{
    char buf[48];
    std::snprintf(buf, sizeof buf, "%.*f MiB", decimals, static_cast<double>(bytes) / (1024.0 * 1024.0));
    return buf;
}

int mebibyteDecimals(const std::vector<std::int64_t>& column)
{
    std::int64_t largest = 0;
    for (std::int64_t b : column) largest = std::max(largest, b);
    return static_cast<double>(largest) < 10.0 * 1024.0 * 1024.0 ? 2 : 1;
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
