// Sentences of the report summary, each from one kind of evidence in the run records.
// See report_summary.h. Every number in a sentence is read from a record (or computed
// from a format's definition); a sentence whose evidence is absent is not written.
#include "report/report_summary.h"

#include "backend/backend.h"
#include "numerics/format.h"
#include "optim/optimizer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

namespace plab {

namespace {

std::string numberText(double v, const char* fmt = "%g")
{
    char buf[48];
    std::snprintf(buf, sizeof buf, fmt, v);
    return buf;
}

// "65536 (2^16)" for powers of two, else "%g".
std::string scaleText(double s)
{
    int e = 0;
    const double m = std::frexp(s, &e);
    std::string t = numberText(s);
    if (m == 0.5 && e - 1 != 0) t += " (2^" + std::to_string(e - 1) + ")";
    return t;
}

std::string layerPossessive(const std::string& layer)
{
    return layer == "loss" ? "the loss gradient (w.r.t. the logits)" : "layer " + layer + "'s";
}

// "a", "a and b", "a, b and c".
std::string joinWords(const std::vector<std::string>& words)
{
    std::string out;
    for (std::size_t i = 0; i < words.size(); ++i) {
        if (i > 0) out += i + 1 == words.size() ? " and " : ", ";
        out += words[i];
    }
    return out;
}

std::string lossScalingWords(const RunDigest& r)
{
    if (r.lossScaleMode == "dynamic") return "with dynamic loss scaling";
    if (r.lossScaleMode == "static")
        return "with a static loss scale of " + scaleText(r.recipe().lossScaling.initScale);
    return "without loss scaling";
}

// Settings that decide what a run trains, apart from its loss scaling (the thing compared):
// the keys whose rows say they train (SettingRole).
std::string settingsWithoutLossScaling(const RunDigest& r)
{
    std::string text;
    for (const std::string& key : r.record.settingKeys)
        if (const SettingKey* k = findSettingKey(key); k && k->role == SettingRole::trains)
            text += key + '=' + settingText(r.record.settings, key) + '\n';
    return text;
}

Format formatOr(const std::string& name, Format fallback)
{
    return parseFormat(name).value_or(fallback);
}

void accuracySentences(const RunComparison& c, std::vector<SummarySentence>& out)
{
    std::vector<const RunDigest*> finished;
    for (const auto& r : c.runs)
        if (r.summary().testAccuracy && r.summary().status != "diverged") finished.push_back(&r);
    if (c.runs.size() == 1 && finished.size() == 1) {
        const auto& r = *finished.front();
        std::string t = r.label + " " + (r.summary().status == "completed" ? "completed" : "ran") + " " +
                        formatCount(r.summary().steps) +
                        " steps; final test accuracy " + formatAccuracy(r.summary().testAccuracy);
        if (const auto best = r.summary().bestTestAccuracy; best && *best != *r.summary().testAccuracy)
            t += " (best " + formatAccuracy(best) + ")";
        out.push_back({"accuracy", t + "."});
        return;
    }
    if (finished.size() < 2) return;
    const auto [lo, hi] = std::minmax_element(finished.begin(), finished.end(), [](auto* a, auto* b) {
        return *a->summary().testAccuracy < *b->summary().testAccuracy;
    });
    const double low = *(*lo)->summary().testAccuracy, high = *(*hi)->summary().testAccuracy;
    auto labelsAt = [&](double acc) {
        std::vector<std::string> names;
        for (auto* r : finished)
            if (formatAccuracy(r->summary().testAccuracy) == formatAccuracy(acc)) names.push_back(r->label);
        return joinWords(names);
    };
    if (formatAccuracy(low) == formatAccuracy(high)) {
        out.push_back({"accuracy", "All " + std::to_string(finished.size()) + " finished runs reached a final test accuracy of " +
                                       formatAccuracy(high) + "."});
        return;
    }
    out.push_back({"accuracy", "Final test accuracy ranged from " + formatAccuracy(low) + " (" + labelsAt(low) + ") to " +
                                   formatAccuracy(high) + " (" + labelsAt(high) + ")."});
}

// An autoencoder's result: its test MSE and PSNR, per run, lowest MSE first.
void mseSentences(const RunComparison& c, std::vector<SummarySentence>& out)
{
    std::vector<const RunDigest*> finished;
    for (const auto& r : c.runs)
        if (r.summary().testMse && r.summary().status != "diverged") finished.push_back(&r);
    std::stable_sort(finished.begin(), finished.end(),
                     [](auto* a, auto* b) { return *a->summary().testMse < *b->summary().testMse; });
    if (finished.empty()) return;
    std::string t = finished.size() == 1 ? "Final result of " : "Final results, lowest error first: ";
    for (std::size_t i = 0; i < finished.size(); ++i)
        t += (i ? "; " : "") + finished[i]->label + ": " +
             testResultText(ModelTask::reconstruct, 0.0, *finished[i]->summary().testMse);
    out.push_back({"accuracy", t + "."});
}

// First step from which the loss stayed non-finite to the end, if it did.
std::optional<std::int64_t> firstOfTrailingNonFinite(const RunDigest& r)
{
    std::optional<std::int64_t> first;
    for (auto it = r.record.steps.rbegin(); it != r.record.steps.rend() && !it->lossFinite(); ++it) first = it->step;
    return first;
}

// What the optimizer state's format did to the state itself, for any run: elements flushed
// to 0 where fp32 keeps them (fp16 second moments), elements made inf or NaN.
void optimizerStateSentences(const RunDigest& r, std::vector<SummarySentence>& out)
{
    std::vector<std::string> flushed, madeNonFinite;
    for (const auto& l : r.summary().layers) {
        if (l.stateFlushed > 0) flushed.push_back(formatCount(l.stateFlushed) + " in " + l.layer);
        if (l.stateMadeNonFinite > 0) madeNonFinite.push_back(formatCount(l.stateMadeNonFinite) + " in " + l.layer);
    }
    if (!flushed.empty())
        out.push_back({"underflow", r.label + ": its " + std::string(formatName(formatOr(r.optimizerState, Format::fp32))) +
                                        " optimizer state was flushed to 0 where fp32 keeps a nonzero value, " +
                                        "counted per element and step over the run: " + joinWords(flushed) + "."});
    if (!madeNonFinite.empty())
        out.push_back({"divergence", r.label + ": optimizer steps turned finite optimizer-state elements into inf or "
                                         "NaN, counted per element and step: " + joinWords(madeNonFinite) + "."});
}

void divergenceSentences(const RunDigest& r, std::vector<SummarySentence>& out)
{
    const RecordedSummary& s = r.summary();
    if (s.status == "stopped") out.push_back({"divergence", r.label + " was stopped at step " + formatCount(s.steps) + "."});
    if (s.status == "failed")
        out.push_back({"divergence", r.label + " failed at step " + formatCount(s.steps) + ": " + s.message + "."});
    if (s.status == "running")
        out.push_back({"divergence", r.label + "'s record ends at step " + formatCount(s.steps) +
                                         " without a final summary: the run was cut short."});
    if (s.status != "diverged") return;
    std::string t = r.label + " diverged at step " + formatCount(s.steps);
    if (const auto first = firstOfTrailingNonFinite(r)) t += ": its loss was not finite from step " + formatCount(*first) + " on";
    out.push_back({"divergence", t + "."});

    // Weights that updates made inf or NaN, by layer, and the first snapshot showing it.
    std::vector<std::string> perLayer;
    for (const auto& l : r.summary().layers) {
        if (l.weightsMadeNonFinite <= 0) continue;
        std::int64_t size = 0;
        if (!r.record.telemetry.empty())
            if (const auto* grads = r.record.telemetry.front().find(l.layer, TensorKind::weightGrad))
                size = static_cast<std::int64_t>(grads->stats.count);
        perLayer.push_back(size == l.weightsMadeNonFinite ? "all " + formatCount(size) + " of " + l.layer + "'s"
                                                          : formatCount(l.weightsMadeNonFinite) + " of " + l.layer + "'s");
    }
    if (perLayer.empty()) return;
    std::string first;
    for (const auto& snap : r.record.telemetry) {
        for (const auto& l : snap.layers)
            if (l.kind == TensorKind::weightGrad && l.update.nonFinite > 0) {
                first = "; the first snapshot showing it, at step " + formatCount(snap.step) + ", has " +
                        formatCount(l.update.nonFinite) + " in " + l.layer;
                break;
            }
        if (!first.empty()) break;
    }
    out.push_back({"divergence", "Optimizer updates turned finite parameters into inf or NaN: " + joinWords(perLayer) + first + "."});

    // A fact of the format: Adam's eps may not exist in the format of the optimizer state.
    const Format state = formatOr(r.optimizerState, Format::fp32);
    // Settings carry no eps: runs use OptimizerConfig's.
    const double eps = OptimizerConfig{}.eps;
    if (r.record.settings.optimizer.kind == "adam" && roundDoubleTo(state, eps) == 0.0f)
        out.push_back({"divergence", "Adam's eps (" + numberText(eps) + ") is 0 in " + std::string(formatName(state)) +
                                         ", the format of this run's optimizer state: where the second moment "
                                         "also rounds to 0, the update divides by zero."});
}

void underflowSentences(const RunComparison& c, std::vector<SummarySentence>& out)
{
    std::map<std::string, std::vector<const RunDigest*>> groups;
    for (const auto& r : c.runs) groups[settingsWithoutLossScaling(r)].push_back(&r);
    for (const auto& [key, runs] : groups) {
        for (const RunDigest* off : runs) {
            if (off->lossScaleMode != "off") continue;
            std::vector<const RunDigest*> scaled;
            for (const RunDigest* r : runs)
                if (r->lossScaleMode != "off") scaled.push_back(r);
            if (scaled.empty()) continue;
            // The layer whose weight gradients underflowed most without scaling.
            const LayerFractions* worst = nullptr;
            for (const auto& l : off->summary().layers)
                if (l.underflow && *l.underflow > 0.0 && (!worst || *l.underflow > *worst->underflow)) worst = &l;
            if (worst) {
                std::string t = off->label + " lost " + formatPercent(*worst->underflow) + " of layer " + worst->layer +
                                "'s weight gradients to underflow over the run";
                for (const RunDigest* s : scaled) {
                    const auto* l = s->layer(worst->layer);
                    if (!l || !l->underflow) continue;
                    t += "; " + lossScalingWords(*s) + " (" + s->label + "), " + formatPercent(*l->underflow);
                }
                out.push_back({"underflow", t + "."});
            }
            const LayerFractions* worstAct = nullptr;
            for (const auto& l : off->summary().layers)
                if (l.activationGradUnderflow && *l.activationGradUnderflow > 0.0 &&
                    (!worstAct || *l.activationGradUnderflow > *worstAct->activationGradUnderflow))
                    worstAct = &l;
            if (worstAct) {
                std::string t = "Of the activation gradients, " + layerPossessive(worstAct->layer) + " lost most to underflow: " +
                                formatPercent(*worstAct->activationGradUnderflow) + " " + lossScalingWords(*off);
                for (const RunDigest* s : scaled) {
                    const auto* l = s->layer(worstAct->layer);
                    if (!l || !l->activationGradUnderflow) continue;
                    t += ", " + formatPercent(*l->activationGradUnderflow) + " " + lossScalingWords(*s);
                }
                out.push_back({"underflow", t + "."});
            }
        }
    }
    // A single run: where its gradients underflowed most.
    if (c.runs.size() == 1) {
        const RunDigest& r = c.runs.front();
        const LayerFractions* worst = nullptr;
        for (const auto& l : r.summary().layers)
            if (l.underflow && (!worst || *l.underflow > *worst->underflow)) worst = &l;
        // A probe's record measured what a format would do to tensors that ran in another
        // (an fp32 run judged against fp16): it says "would", and what ran.
        const bool judged = !r.record.judgedFormat.empty();
        const std::string ranAs = r.record.sourceAsRun.empty() ? std::string() : " (which ran as " + r.record.sourceAsRun + ")";
        if (worst && *worst->underflow > 0.0 && judged)
            out.push_back({"underflow", r.record.judgedFormat + " rounding would flush " + formatPercent(*worst->underflow) +
                                            " of layer " + worst->layer + "'s weight gradients of " + r.label + ranAs +
                                            " to 0, the most of any layer."});
        else if (worst && *worst->underflow > 0.0)
            out.push_back({"underflow", r.label + " lost " + formatPercent(*worst->underflow) + " of layer " + worst->layer +
                                            "'s weight gradients to underflow over the run, the most of any layer."});
        else if (worst && judged)
            out.push_back({"underflow", "No weight gradient of " + r.label + ranAs + " would underflow in " +
                                            r.record.judgedFormat + "."});
        else if (worst)
            out.push_back({"underflow", "No weight gradient of " + r.label + " underflowed to 0."});
    }
}

void lostUpdateSentences(const RunComparison& c, std::vector<SummarySentence>& out)
{
    for (const auto& r : c.runs) {
        if (r.recipe().masterWeights || r.storage == "fp32" || r.summary().status == "diverged") continue;
        const LayerFractions* worst = nullptr;
        for (const auto& l : r.summary().layers)
            if (l.lostUpdate && *l.lostUpdate > 0.0 && (!worst || *l.lostUpdate > *worst->lostUpdate)) worst = &l;
        if (!worst) continue;
        std::string t = r.label + " lost " + formatPercent(*worst->lostUpdate) + " of layer " + worst->layer +
                        "'s weight updates: the update was nonzero, but the " + r.storage + " weight did not change";
        for (const auto& m : c.runs) {
            if (!m.recipe().masterWeights || m.compute != r.compute || m.summary().status == "diverged") continue;
            const auto* l = m.layer(worst->layer);
            if (l && l->lostUpdate) t += "; with fp32 master weights (" + m.label + "), " + formatPercent(*l->lostUpdate);
        }
        out.push_back({"lost_updates", t + "."});
    }
}

void lossScaleSentences(const RunComparison& c, std::vector<SummarySentence>& out)
{
    for (const auto& r : c.runs) {
        if (r.lossScaleMode != "dynamic" || r.record.steps.empty()) continue;
        double lo = r.record.steps.front().lossScale, hi = lo;
        for (const auto& p : r.record.steps) {
            lo = std::min(lo, p.lossScale);
            hi = std::max(hi, p.lossScale);
        }
        const double first = r.record.steps.front().lossScale, last = r.record.steps.back().lossScale;
        std::string t = r.label + (r.summary().skippedSteps == 0 ? " skipped no steps"
                                                       : " skipped " + formatCount(r.summary().skippedSteps) + " of " +
                                                             formatCount(r.summary().steps) + " steps for non-finite gradients");
        if (lo == hi) t += "; its loss scale stayed at " + scaleText(first);
        else {
            t += "; its loss scale went from " + scaleText(first) + " to " + scaleText(last);
            if (lo < std::min(first, last)) t += ", lowest " + scaleText(lo);
        }
        out.push_back({"loss_scale", t + "."});
    }
}

void memoryAndSpeedSentences(const RunComparison& c, std::vector<SummarySentence>& out)
{
    std::vector<const RunDigest*> withMemory, withSpeed;
    for (const auto& r : c.runs) {
        if (r.peakTotal > 0) withMemory.push_back(&r);
        if (r.summary().imagesPerSecond > 0 && r.summary().status == "completed") withSpeed.push_back(&r);
    }
    auto largestCategory = [](const RunDigest& r) {
        std::size_t best = 0;
        for (std::size_t i = 1; i < r.peakBytes.size(); ++i)
            if (r.peakBytes[i] > r.peakBytes[best]) best = i;
        return best < r.memoryCategories.size() ? r.memoryCategories[best] : std::string();
    };
    if (withMemory.size() == 1) {
        const auto& r = *withMemory.front();
        out.push_back({"memory", r.label + " peaked at " + formatMebibytes(r.peakTotal) +
                                     " of modelled memory; its largest category was " + largestCategory(r) + "."});
    } else if (withMemory.size() > 1) {
        const auto [lo, hi] = std::minmax_element(withMemory.begin(), withMemory.end(),
                                                  [](auto* a, auto* b) { return a->peakTotal < b->peakTotal; });
        if ((*lo)->peakTotal != (*hi)->peakTotal)
            out.push_back({"memory", "Peak modelled memory ranged from " + formatMebibytes((*lo)->peakTotal) + " (" +
                                         (*lo)->label + ") to " + formatMebibytes((*hi)->peakTotal) + " (" + (*hi)->label +
                                         "), " + numberText(double((*hi)->peakTotal) / double((*lo)->peakTotal), "%.1f") +
                                         " times as much; the largest category of the largest was " +
                                         largestCategory(**hi) + "."});
    }
    // Which arithmetic a run's products ran in, as its record says: ", hardware
    // arithmetic" / ", exact arithmetic"; nothing for fp32 or an older record.
    auto arithmetic = [](const RunDigest& r) {
        if (!r.record.arithmetic) return std::string();
        const std::string_view kind = arithmeticKind(*r.record.arithmetic);
        return kind.empty() ? std::string() : ", " + std::string(kind) + " arithmetic";
    };
    if (withSpeed.size() == 1) {
        const auto& r = *withSpeed.front();
        out.push_back({"throughput", r.label + " trained at " + numberText(r.summary().imagesPerSecond, "%.0f") +
                                         " images/s on the " + r.record.backend + " backend" +
                                         arithmetic(r) + "."});
    } else if (withSpeed.size() > 1) {
        const auto [lo, hi] = std::minmax_element(withSpeed.begin(), withSpeed.end(),
                                                  [](auto* a, auto* b) {
                                                      return a->summary().imagesPerSecond < b->summary().imagesPerSecond;
                                                  });
        out.push_back({"throughput", "Throughput ranged from " + numberText((*lo)->summary().imagesPerSecond, "%.0f") +
                                         " images/s (" + (*lo)->label + arithmetic(**lo) + ") to " +
                                         numberText((*hi)->summary().imagesPerSecond, "%.0f") + " images/s (" + (*hi)->label +
                                         arithmetic(**hi) + ")."});
    }
}

}  // namespace

std::vector<SummarySentence> summarizeRuns(const RunComparison& comparison)
{
    std::vector<SummarySentence> out;
    accuracySentences(comparison, out);
    mseSentences(comparison, out);
    for (const auto& r : comparison.runs) {
        divergenceSentences(r, out);
        optimizerStateSentences(r, out);
    }
    underflowSentences(comparison, out);
    lostUpdateSentences(comparison, out);
    lossScaleSentences(comparison, out);
    memoryAndSpeedSentences(comparison, out);
    return out;
}

}  // namespace plab
