// A run record's JSON both ways (docs/RUN_RECORD.md): readRunRecord and runRecordToJson
// (run_record.h), each part's reader beside its writer. Building a record from events is in
// run_record.cpp.
#include "record/run_record.h"

#include "files/input_file.h"
#include "json/json_input.h"
#include "nn/model_kinds.h"
#include "numerics/format.h"
#include "numerics/minifloat.h"

#include "error.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <unordered_set>

#include <nlohmann/json.hpp>

namespace plab {

using nlohmann::json;

namespace {

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

[[noreturn]] void refuseField(const Place& at, const char* key, const std::string& must, const json& got)
{
    throw InputError(at.text() + ": \"" + key + "\" must be " + must + ", got " + jsonExcerpt(got));
}

constexpr std::int64_t kMaxWhole = std::int64_t{1} << 62;
constexpr std::int64_t kMaxInt = std::numeric_limits<int>::max();
constexpr std::size_t kMaxScalarName = 200;   // a logged scalar's name, in bytes (the probe checks the same)

// A whole number from lo to hi (counts, steps, epochs, batches); `fallback` when absent.
std::int64_t whole(const json& obj, const char* key, const Place& at, std::int64_t lo = 0, std::int64_t fallback = 0,
                   std::int64_t hi = kMaxWhole)
{
    const auto it = obj.find(key);
    if (it == obj.end()) return fallback;
    try {
        return jsonWhole(*it, lo, hi, key);
    } catch (const InputError&) {
        refuseField(at, key,
                    hi != kMaxWhole && hi != kMaxInt
                        ? "a whole number from " + std::to_string(lo) + " to " + std::to_string(hi)
                        : (lo == 0 ? "a whole number of at least 0" : "a whole number of at least 1"),
                    *it);
    }
}

int wholeInt(const json& obj, const char* key, const Place& at, std::int64_t lo = 0, std::int64_t fallback = 0)
{
    return static_cast<int>(whole(obj, key, at, lo, fallback, kMaxInt));
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
// was not finite). A document still in memory holds such a loss as the NaN or infinity
// itself, which its file form writes as null: read alike.
std::optional<double> number(const json& obj, const char* key, const Place& at, const Range& range)
{
    const auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return std::nullopt;
    if (it->is_number_float() && !std::isfinite(it->get<double>())) return std::nullopt;
    if (!it->is_number()) refuseField(at, key, range.must, *it);
    const double v = it->get<double>();
    if (!(v >= range.lo && v <= range.hi)) refuseField(at, key, range.must, *it);   // NaN fails too
    return v;
}

std::optional<std::string> text(const json& obj, const char* key, const Place& at)
{
    const auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return std::nullopt;
    if (!it->is_string()) refuseField(at, key, "text", *it);
    return it->get<std::string>();
}

// An object section; `empty` when absent.
const json& section(const json& obj, const char* key, const json& empty)
{
    const auto it = obj.find(key);
    if (it == obj.end()) return empty;
    if (!it->is_object()) throw InputError(std::string("\"") + key + "\" must be an object, got " + jsonExcerpt(*it));
    return *it;
}

// The elements of an array section, each an object.
const json& entries(const json& obj, const char* key, const json& empty)
{
    const auto it = obj.find(key);
    if (it == obj.end()) return empty;
    if (!it->is_array()) throw InputError(std::string("\"") + key + "\" must be an array, got " + jsonExcerpt(*it));
    for (const json& e : *it)
        if (!e.is_object())
            throw InputError(std::string("every entry of \"") + key + "\" must be an object, got " + jsonExcerpt(e));
    return *it;
}

// JSON holds no NaN or infinity: those are written as null (read back as NaN).
json finiteOrNull(double x) { return std::isfinite(x) ? json(x) : json(nullptr); }
// A share, or null when there was nothing to share (rounding_stats.h).
json shareJson(const std::optional<double>& share) { return share ? json(*share) : json(nullptr); }

json snapshotToJson(const LayerTelemetry& s)
{
    json j = {{"layer", s.layer},
              {"kind", std::string(tensorKindName(s.kind))},
              {"stats", roundingStatsToJson(s.stats)},
              {"histogram", histogramToJson(s.histogram)}};
    if (s.scaling.present && s.scaling.tensorScale) {
        j["scale"] = s.scaling.scale;
        j["amax"] = finiteOrNull(s.scaling.amax);
    }
    if (s.scaling.present && s.scaling.blocks) j["block_scales"] = histogramToJson(s.scaling.blockScales);
    if (s.kind == TensorKind::weightGrad) {
        j["lost_updates"] = s.update.lost;
        j["nonzero_updates"] = s.update.nonzero;
        j["non_finite_updates"] = s.update.nonFinite;
        j["state_flushed"] = s.update.stateFlushed;
        j["state_non_finite"] = s.update.stateNonFinite;
        if (s.update.accumulated > 0) {   // a run that accumulates gradients
            j["accumulated"] = s.update.accumulated;
            j["accumulation_lost"] = s.update.accumulationLost;
        }
    }
    return j;
}

// A record written before every entry had its histogram reads an absent one as empty.
LayerTelemetry snapshotFromJson(const json& l, const Place& at)
{
    LayerTelemetry s;
    s.layer = text(l, "layer", at).value_or("");
    const std::string kind = text(l, "kind", at).value_or("");
    const auto parsed = parseTensorKind(kind);
    if (!parsed) refuseField(at, "kind", "a tensor kind", l.at("kind"));
    s.kind = *parsed;
    s.stats = roundingStatsFromJson(section(l, "stats", json::object()));
    s.update.lost = whole(l, "lost_updates", at);
    s.update.nonzero = whole(l, "nonzero_updates", at);
    s.update.nonFinite = whole(l, "non_finite_updates", at);
    s.update.stateFlushed = whole(l, "state_flushed", at);   // older records: none
    s.update.stateNonFinite = whole(l, "state_non_finite", at);
    s.update.accumulated = whole(l, "accumulated", at);   // runs that do not accumulate: none
    s.update.accumulationLost = whole(l, "accumulation_lost", at);
    if (const auto h = l.find("histogram"); h != l.end() && h->is_object()) s.histogram = histogramFromJson(*h);
    if (l.contains("scale")) {
        s.scaling.present = s.scaling.tensorScale = true;
        s.scaling.scale = static_cast<float>(number(l, "scale", at, kFinite).value_or(1.0));
        s.scaling.amax = static_cast<float>(number(l, "amax", at, kFinite).value_or(std::numeric_limits<double>::quiet_NaN()));
    }
    if (const auto b = l.find("block_scales"); b != l.end()) {
        if (!b->is_object()) refuseField(at, "block_scales", "a histogram", *b);
        s.scaling.present = s.scaling.blocks = true;
        s.scaling.blockScales = histogramFromJson(*b);
    }
    return s;
}

std::string categoryName(int c) { return std::string(memoryCategoryName(static_cast<MemoryCategory>(c))); }

// A peak as an object of bytes per category and the total; {} when not recorded.
json peakToJson(const std::optional<MemoryPeaks>& p)
{
    json j = json::object();
    if (!p) return j;
    for (int c = 0; c < kMemoryCategories; ++c) j[categoryName(c)] = p->bytes[static_cast<std::size_t>(c)];
    j["total"] = p->total;
    return j;
}

// Each category this build knows by its name (0 where the record has none).
std::optional<MemoryPeaks> peakFromJson(const json& memory, const char* key)
{
    const auto it = memory.find(key);
    if (it == memory.end() || !it->is_object() || it->empty()) return std::nullopt;
    const Place at{key};
    MemoryPeaks p;
    for (int c = 0; c < kMemoryCategories; ++c) p.bytes[static_cast<std::size_t>(c)] = whole(*it, categoryName(c).c_str(), at);
    p.total = whole(*it, "total", at);
    return p;
}

// The summary's per-layer entries, in LayerShare's order: a share (null where nothing was
// there to share) or a count.
struct ShareKey {
    const char* key;
    const char* place;
    std::uint8_t bit;
    std::optional<double> LayerFractions::*fraction;
    std::int64_t LayerFractions::*count;
    bool writtenWhenEmpty = true;   // false: a key only runs that have it write
};
constexpr ShareKey kShareKeys[] = {
    {"underflow_fraction", "the summary's underflow_fraction", kListsUnderflow, &LayerFractions::underflow, nullptr},
    {"overflow_fraction", "the summary's overflow_fraction", kListsOverflow, &LayerFractions::overflow, nullptr},
    {"lost_update_fraction", "the summary's lost_update_fraction", kListsLostUpdate, &LayerFractions::lostUpdate,
     nullptr},
    {"activation_grad_underflow_fraction", "the summary's activation_grad_underflow_fraction",
     kListsActivationGradUnderflow, &LayerFractions::activationGradUnderflow, nullptr},
    {"weights_made_non_finite", "the summary's weights_made_non_finite", kListsWeightsMadeNonFinite, nullptr,
     &LayerFractions::weightsMadeNonFinite},
    {"optimizer_state_flushed", "the summary's optimizer_state_flushed", kListsStateFlushed, nullptr,
     &LayerFractions::stateFlushed},
    {"optimizer_state_made_non_finite", "the summary's optimizer_state_made_non_finite", kListsStateMadeNonFinite,
     nullptr, &LayerFractions::stateMadeNonFinite},
    {"accumulation_lost_fraction", "the summary's accumulation_lost_fraction", kListsAccumulationLost,
     &LayerFractions::accumulationLost, nullptr, false},
};

// An autoencoder's reconstructions: {"step", "images": [{"test_index", "original",
// "reconstruction"}]}, each picture 784 whole numbers from 0 to 255.
void readReconstructions(const json& j, RunRecord& r)
{
    constexpr std::size_t kPixels = 28 * 28;
    if (!j.is_object()) throw InputError("\"reconstructions\" must be an object, got " + jsonExcerpt(j));
    r.reconstructedAtStep = whole(j, "step", Place{"the reconstructions"});
    const json emptyList = json::array();
    const json& images = entries(j, "images", emptyList);
    if (images.size() > static_cast<std::size_t>(kReconstructedImages))
        throw InputError("\"reconstructions\" holds " + std::to_string(images.size()) + " images, more than the " +
                         std::to_string(kReconstructedImages) + " a run writes");
    for (const json& image : images) {
        ReconstructedImage& out = r.reconstructions.emplace_back();
        out.testIndex = whole(image, "test_index", Place{"a reconstruction"});
        const Place at{"the reconstruction of test image", out.testIndex};
        for (const char* key : {"original", "reconstruction"}) {
            const auto it = image.find(key);
            const auto bad = [&] { refuseField(at, key, "784 whole numbers from 0 to 255", it == image.end() ? json(nullptr) : *it); };
            if (it == image.end() || !it->is_array() || it->size() != kPixels) bad();
            std::vector<std::uint8_t>& pixels = std::string_view(key) == "original" ? out.original : out.reconstruction;
            pixels.reserve(kPixels);
            for (const json& v : *it) {
                if (!v.is_number_unsigned() || v.get<std::uint64_t>() > 255) bad();
                pixels.push_back(static_cast<std::uint8_t>(v.get<std::uint64_t>()));
            }
        }
    }
}

json summaryToJson(const RecordedSummary& s)
{
    json j = {{"status", s.status},
              {"message", s.message},
              {"steps", s.steps},
              {"skipped_steps", s.skippedSteps},
              {"test_accuracy", s.testAccuracy ? json(*s.testAccuracy) : json(nullptr)},
              {"best_test_accuracy", s.bestTestAccuracy ? json(*s.bestTestAccuracy) : json(nullptr)}};
    if (s.testMse) j["test_mse"] = *s.testMse;   // an autoencoder's only
    if (s.bestTestMse) j["best_test_mse"] = *s.bestTestMse;
    for (const ShareKey& share : kShareKeys) {
        json layers = json::object();
        for (const LayerFractions& f : s.layers)
            if (f.listed & share.bit)
                layers[f.layer] = share.fraction ? shareJson(f.*share.fraction) : json(f.*share.count);
        if (share.writtenWhenEmpty || !layers.empty()) j[share.key] = std::move(layers);
    }
    // Every rounding site's counts over every step of the run (the snapshots count only
    // theirs): what overflowed at a step no snapshot fell on is there too.
    if (s.hasRunRounding) {
        json sites = json::array();
        for (const auto& t : s.runRounding) {
            json site = {{"layer", t.layer}, {"kind", std::string(tensorKindName(t.kind))},
                         {"stats", roundingStatsToJson(t.stats)}};
            if (t.librarySteps > 0) site["library_steps"] = t.librarySteps;
            sites.push_back(std::move(site));
        }
        j["run_rounding"] = std::move(sites);
        j["run_rounding_through_step"] = s.runRoundingThroughStep;
    }
    // A finished run's speed and end.
    if (!s.finishedAt.empty()) {
        j["images_per_second"] = s.imagesPerSecond;
        j["finished_at"] = s.finishedAt;
    }
    return j;
}

void readSummary(const json& s, RecordedSummary& out)
{
    const Place summary{"the summary"};
    if (const auto it = s.find("status"); it != s.end() && !it->is_string())
        refuseField(summary, "status", "a run status", *it);
    out.status = jsonTextOr(s, "status", "running");
    if (!parseRunStatus(out.status))
        throw InputError("\"status\" " + jsonExcerpt(s.at("status")) + " is not a run status");
    out.message = text(s, "message", summary).value_or("");
    out.steps = whole(s, "steps", summary);
    out.skippedSteps = whole(s, "skipped_steps", summary);
    out.testAccuracy = number(s, "test_accuracy", summary, kFraction);
    out.bestTestAccuracy = number(s, "best_test_accuracy", summary, kFraction);
    out.testMse = number(s, "test_mse", summary, kNonNegative);
    out.bestTestMse = number(s, "best_test_mse", summary, kNonNegative);
    out.imagesPerSecond = number(s, "images_per_second", summary, kNonNegative).value_or(0.0);
    out.finishedAt = text(s, "finished_at", summary).value_or("");

    std::map<std::string, LayerFractions> byLayer;
    for (const ShareKey& share : kShareKeys) {
        const auto it = s.find(share.key);
        if (it == s.end()) continue;
        if (!it->is_object()) refuseField(summary, share.key, "an object of layers", *it);
        const Place at{share.place};
        for (const auto& [layer, v] : it->items()) {
            LayerFractions& f = byLayer[layer];
            f.layer = layer;
            f.listed |= share.bit;
            if (share.fraction)
                f.*share.fraction = number(*it, layer.c_str(), at, kFraction);
            else   // records before the optimizer state was counted have none: 0
                f.*share.count = whole(*it, layer.c_str(), at);
        }
    }
    out.layers = summaryLayersInOrder(std::move(byLayer));

    if (s.contains("run_rounding")) {
        out.hasRunRounding = true;
        const json none = json::array();
        const Place at{"the summary's run_rounding"};
        std::unordered_set<std::string> sites;   // "layer kind", each once
        for (const json& e : entries(s, "run_rounding", none)) {
            RecordedSummary::SiteTotals t;
            t.layer = text(e, "layer", at).value_or("");
            if (t.layer.empty()) refuseField(at, "layer", "a layer's name", e.value("layer", json()));
            const auto kind = parseTensorKind(text(e, "kind", at).value_or(""));
            if (!kind) refuseField(at, "kind", "a tensor kind", e.value("kind", json()));
            t.kind = *kind;
            const auto stats = e.find("stats");
            if (stats == e.end() || !stats->is_object()) refuseField(at, "stats", "an object of counts", e.value("stats", json()));
            try {
                t.stats = roundingStatsFromJson(*stats);
            } catch (const InputError& problem) {
                throw InputError(at.text() + " (" + t.layer + "): " + problem.what());
            }
            // Each element is counted once: zeros, NaN and infinities in, and of the others
            // those that underflowed or overflowed, are apart.
            // Summed without wrapping: each part is subtracted from what is left of the count.
            const RoundingStats& c = t.stats;
            std::uint64_t left = c.count;
            for (const std::uint64_t part : {c.zerosIn, c.nan, c.infIn, c.underflow, c.overflow}) {
                if (part > left)
                    throw InputError(at.text() + " (" + t.layer + "): counts above the " + std::to_string(c.count) +
                                     " values rounded");
                left -= part;
            }
            t.librarySteps = whole(e, "library_steps", at, 0, 0, out.steps);
            if (!sites.insert(t.layer + ' ' + std::string(tensorKindName(t.kind))).second)
                throw InputError(at.text() + ": " + t.layer + " " + std::string(tensorKindName(t.kind)) +
                                 " is listed twice");
            out.runRounding.push_back(std::move(t));
        }
        // Absent (records before the key): the run's steps; present: at most those.
        out.runRoundingThroughStep = whole(s, "run_rounding_through_step", at, 0, out.steps, out.steps);
    }
}

json stepToJson(const StepEvent& p)
{
    json j = {{"step", p.step},   {"epoch", p.epoch}, {"loss", p.lossFinite() ? json(p.loss) : json(nullptr)},
              {"loss_scale", p.lossScale}, {"skipped", p.skipped}, {"lr", p.lr},
              {"batch", p.batch}, {"time_ms", p.timeMs}};
    if (!p.nonFinite.empty()) j["non_finite"] = nonFiniteSitesToJson(p.nonFinite);
    return j;
}

StepEvent stepFromJson(const json& st)
{
    StepEvent p;
    p.step = whole(st, "step", Place{"a step"});
    const Place at{"step", p.step};
    p.epoch = wholeInt(st, "epoch", at);
    p.batch = wholeInt(st, "batch", at, 1);
    p.loss = number(st, "loss", at, kFinite).value_or(std::numeric_limits<double>::quiet_NaN());
    p.lossScale = number(st, "loss_scale", at, kPositive).value_or(1.0);
    if (const auto it = st.find("skipped"); it != st.end() && !it->is_boolean())
        refuseField(at, "skipped", "true or false", *it);
    p.skipped = st.value("skipped", false);
    p.lr = number(st, "lr", at, kNonNegative).value_or(0.0);
    p.timeMs = number(st, "time_ms", at, kNonNegative).value_or(0.0);
    const json empty = json::array();
    for (const json& site : entries(st, "non_finite", empty)) {
        NonFiniteSite n;
        n.layer = text(site, "layer", at).value_or("");
        if (n.layer.empty()) refuseField(at, "layer", "a layer's name", site.value("layer", json()));
        const auto kind = parseTensorKind(text(site, "kind", at).value_or(""));
        if (!kind) refuseField(at, "kind", "a tensor kind", site.value("kind", json()));
        n.kind = *kind;
        n.overflow = static_cast<std::uint64_t>(whole(site, "overflow", at));
        n.infIn = static_cast<std::uint64_t>(whole(site, "inf_in", at));
        n.nan = static_cast<std::uint64_t>(whole(site, "nan", at));
        n.largestFinite = number(site, "largest_finite", at, kNonNegative);
        n.format = text(site, "format", at).value_or("");
        if (!parseFormat(n.format) && !parseMiniFormat(n.format))
            refuseField(at, "format", "a format name (fp16, bf16, e4m3, ...)", site.value("format", json()));
        n.formatMax = number(site, "format_max", at, kNonNegative).value_or(0.0);
        if (!(n.formatMax > 0)) refuseField(at, "format_max", "the format's largest finite value", site.value("format_max", json()));
        p.nonFinite.push_back(std::move(n));
    }
    return p;
}

json eventToJson(const RecordedEvent& event)
{
    if (const auto* e = std::get_if<StatusEvent>(&event))
        return {{"step", e->step}, {"type", "status"}, {"status", std::string(runStatusName(e->status))},
                {"message", e->message}};
    if (const auto* e = std::get_if<SettingChangeEvent>(&event))
        return {{"step", e->step}, {"type", "setting_change"}, {"description", e->description},
                {"settings", settingsToJson(e->settings)}};
    const auto& e = std::get<ChangeRefusedEvent>(event);
    return {{"step", e.step}, {"type", "change_refused"}, {"description", e.description}, {"reason", e.reason}};
}

// nullopt for a type this build does not know (a newer writer's): skipped, as a reader of
// the same format version must.
std::optional<RecordedEvent> eventFromJson(const json& ev, std::size_t index, const std::string& origin)
{
    const std::int64_t step = whole(ev, "step", Place{"an event"});
    const Place at{"the event at step", step};
    const std::string type = text(ev, "type", at).value_or("");
    if (type == "setting_change") {
        const auto it = ev.find("settings");
        if (it == ev.end() || !it->is_object()) refuseField(at, "settings", "an object of settings", ev.value("settings", json()));
        return SettingChangeEvent{step, text(ev, "description", at).value_or(""),
                                  settingsFromJson(*it, origin + " events[" + std::to_string(index) + "] settings",
                                                   SettingsReading::stored)};
    }
    if (type == "change_refused")
        return ChangeRefusedEvent{step, text(ev, "description", at).value_or(""), text(ev, "reason", at).value_or("")};
    if (type == "status") {
        // An unknown status reads as failed.
        const auto status = parseRunStatus(text(ev, "status", at).value_or("")).value_or(RunStatus::failed);
        return StatusEvent{status, step, text(ev, "message", at).value_or("")};
    }
    return std::nullopt;
}

}  // namespace

json roundingStatsToJson(const RoundingStats& s)
{
    json j = {{"count", s.count},         {"zeros_in", s.zerosIn},   {"underflow", s.underflow},
              {"subnormal", s.subnormal}, {"overflow", s.overflow}, {"nan", s.nan},
              {"inf_in", s.infIn}};
    if (s.largestFinite > 0) j["largest_finite"] = s.largestFinite;
    return j;
}

json nonFiniteSitesToJson(const std::vector<NonFiniteSite>& sites)
{
    json out = json::array();
    for (const NonFiniteSite& n : sites) {
        json site = {{"layer", n.layer}, {"kind", tensorKindName(n.kind)}, {"overflow", n.overflow},
                     {"inf_in", n.infIn}, {"nan", n.nan}, {"format", n.format}, {"format_max", n.formatMax}};
        if (n.largestFinite) site["largest_finite"] = *n.largestFinite;
        out.push_back(std::move(site));
    }
    return out;
}

RoundingStats roundingStatsFromJson(const json& j)
{
    RoundingStats s;
    // Counts, range-checked before conversion (0 when absent).
    s.count = static_cast<std::uint64_t>(jsonWholeOr(j, "count", 0, kMaxWhole));
    s.zerosIn = static_cast<std::uint64_t>(jsonWholeOr(j, "zeros_in", 0, kMaxWhole));
    s.underflow = static_cast<std::uint64_t>(jsonWholeOr(j, "underflow", 0, kMaxWhole));
    s.subnormal = static_cast<std::uint64_t>(jsonWholeOr(j, "subnormal", 0, kMaxWhole));
    s.overflow = static_cast<std::uint64_t>(jsonWholeOr(j, "overflow", 0, kMaxWhole));
    s.nan = static_cast<std::uint64_t>(jsonWholeOr(j, "nan", 0, kMaxWhole));
    s.infIn = static_cast<std::uint64_t>(jsonWholeOr(j, "inf_in", 0, kMaxWhole));
    // The largest finite |x| rounded: fp32's range (records before the key: 0, not measured).
    constexpr Range kFp32Magnitude{0.0, std::numeric_limits<float>::max(), "a finite fp32 magnitude"};
    if (const auto v = number(j, "largest_finite", Place{"rounding counts"}, kFp32Magnitude))
        s.largestFinite = static_cast<float>(*v);
    return s;
}

json histogramToJson(const GradientHistogram& h)
{
    int first = GradientHistogram::kBins, last = -1;
    for (int b = 0; b < GradientHistogram::kBins; ++b)
        if (h.bins[static_cast<std::size_t>(b)]) {
            first = std::min(first, b);
            last = b;
        }
    json counts = json::array();
    for (int b = first; b <= last; ++b) counts.push_back(h.bins[static_cast<std::size_t>(b)]);
    return {{"first_exponent", last >= 0 ? GradientHistogram::exponentOf(first) : 0},
            {"counts", counts},
            {"zeros", h.zeros},
            {"non_finite", h.nonFinite}};
}

GradientHistogram histogramFromJson(const json& j)
{
    GradientHistogram h;
    const auto first = jsonWhole(j.at("first_exponent"), GradientHistogram::kMinExponent - 1,
                                 GradientHistogram::kMaxExponent + 1, "histogram \"first_exponent\"");
    const auto& counts = j.at("counts");
    // More counts than bins cannot all land in range (and first + i stays an int below).
    if (counts.size() > static_cast<std::size_t>(GradientHistogram::kBins)) throw InputError("histogram exponent out of range");
    for (std::size_t i = 0; i < counts.size(); ++i) {
        const int bin = GradientHistogram::binOf(static_cast<int>(first) + static_cast<int>(i));
        if (bin < 0 || bin >= GradientHistogram::kBins) throw InputError("histogram exponent out of range");
        h.bins[static_cast<std::size_t>(bin)] =
            static_cast<std::uint64_t>(jsonWhole(counts[i], 0, kMaxWhole, "histogram \"counts\""));
    }
    h.zeros = static_cast<std::uint64_t>(jsonWholeOr(j, "zeros", 0, kMaxWhole));
    h.nonFinite = static_cast<std::uint64_t>(jsonWholeOr(j, "non_finite", 0, kMaxWhole));
    return h;
}

namespace {

RunRecord readRecord(const json& doc, const std::string& origin, std::vector<StepEvent>* streamedSteps)
{
    auto bad = [&](const std::string& what) { return InputError(origin + ": not a usable run record: " + what); };
    if (!doc.is_object()) throw bad("expected a JSON object");
    for (const char* key : {"settings", "summary", "steps"})
        if (!doc.contains(key)) throw bad(std::string("the \"") + key + "\" section is missing");
    if (!doc["settings"].is_object() || !doc["summary"].is_object() || !doc["steps"].is_array())
        throw bad("settings and summary must be objects and steps an array");

    RunRecord r;
    try {
        const Place top{"the record"};
        r.formatVersion = wholeInt(doc, "format_version", top, 0, kRunRecordFormatVersion);
        r.name = text(doc, "name", top).value_or("");
        r.createdAt = text(doc, "created_at", top).value_or("");
        r.settings = settingsFromJson(doc["settings"], origin + " settings", SettingsReading::stored);
        for (const auto& [key, value] : doc["settings"].items()) r.settingKeys.push_back(key);

        const json none = json::object();
        const json& machine = section(doc, "machine", none);
        const Place machinePlace{"the machine"};
        r.machine.cpu = text(machine, "cpu", machinePlace);
        r.machine.os = text(machine, "os", machinePlace);
        r.machine.hostname = text(machine, "hostname", machinePlace);
        if (machine.contains("logical_cores")) r.machine.logicalCores = whole(machine, "logical_cores", machinePlace);
        if (machine.contains("threads")) r.machine.threads = whole(machine, "threads", machinePlace);
        const json& versions = section(doc, "versions", none);
        const Place versionsPlace{"the versions"};
        r.versions.precisionLab = text(versions, "precision_lab", versionsPlace);
        r.versions.compiler = text(versions, "compiler", versionsPlace);
        r.versions.nlohmannJson = text(versions, "nlohmann_json", versionsPlace);
        if (const auto it = versions.find("backend"); it != versions.end()) {
            if (!it->is_array()) refuseField(versionsPlace, "backend", "a list of libraries", *it);
            for (const json& v : *it) {
                if (!v.is_string()) refuseField(versionsPlace, "backend", "a list of libraries", *it);
                r.versions.backend.push_back(v.get<std::string>());
            }
        }
        const json& source = section(doc, "source", none);
        const Place sourcePlace{"the source"};
        r.sourceKind = text(source, "kind", sourcePlace).value_or("");
        r.sourceAsRun = text(source, "as_run", sourcePlace).value_or("");
        r.judgedFormat = text(source, "judged_format", sourcePlace).value_or("");
        if (!r.judgedFormat.empty() && !parseFormat(r.judgedFormat) && !parseMiniFormat(r.judgedFormat))
            refuseField(sourcePlace, "judged_format", "a format name (fp16, bf16, e4m3, ...)", source.at("judged_format"));
        const json& backend = section(doc, "backend", none);
        r.backend = text(backend, "name", Place{"the backend"}).value_or("cpu");
        r.arithmetic = text(backend, "arithmetic", Place{"the backend"});
        const json& data = section(doc, "data", none);
        const Place dataPlace{"the data"};
        r.data.name = text(data, "name", dataPlace).value_or("");
        r.data.description = text(data, "description", dataPlace).value_or("");
        r.data.trainImages = whole(data, "train_images", dataPlace);
        r.data.testImages = whole(data, "test_images", dataPlace);

        readSummary(doc["summary"], r.summary);

        const json emptyList = json::array();
        if (streamedSteps) r.steps = std::move(*streamedSteps);
        for (const auto& st : entries(doc, "steps", emptyList)) r.steps.push_back(stepFromJson(st));
        const json& events = entries(doc, "events", emptyList);
        for (std::size_t i = 0; i < events.size(); ++i)
            if (auto e = eventFromJson(events[i], i, origin)) r.events.push_back(std::move(*e));
        for (const auto& e : entries(doc, "evals", emptyList)) {
            const std::int64_t step = whole(e, "step", Place{"an evaluation"});
            const Place at{"the evaluation at step", step};
            r.evals.push_back({.step = step,
                               .epoch = wholeInt(e, "epoch", at),
                               .testAccuracy = number(e, "test_accuracy", at, kFraction).value_or(0.0),
                               .testLoss = number(e, "test_loss", at, kFinite).value_or(0.0),
                               .reconstructions = {}});
        }
        if (const auto it = doc.find("reconstructions"); it != doc.end()) readReconstructions(*it, r);
        for (const auto& v : entries(doc, "scalars", emptyList)) {
            ScalarEvent e;
            e.step = whole(v, "step", Place{"a logged scalar"});
            const Place at{"the logged scalar at step", e.step};
            const auto name = text(v, "name", at);
            if (!name || name->empty() || name->size() > kMaxScalarName)
                refuseField(at, "name", "a name of 1 to 200 characters", v.contains("name") ? v.at("name") : json());
            e.name = *name;
            e.value = number(v, "value", at, kFinite).value_or(std::numeric_limits<double>::quiet_NaN());
            r.scalars.push_back(std::move(e));
        }
        for (const auto& t : entries(doc, "telemetry", emptyList)) {
            TelemetryEvent p;
            p.step = whole(t, "step", Place{"a telemetry entry"});
            const Place at{"the telemetry at step", p.step};
            p.lossScale = number(t, "loss_scale", at, kPositive).value_or(1.0);
            for (const auto& l : entries(t, "layers", emptyList)) p.layers.push_back(snapshotFromJson(l, at));
            r.telemetry.push_back(std::move(p));
        }
        const json& mem = section(doc, "memory", none);
        // Where each of the record's categories goes in this build's order (-1: one it does
        // not know); records before the list wrote this build's order.
        std::vector<int> slots;
        if (const auto it = mem.find("categories"); it != mem.end()) {
            if (!it->is_array()) refuseField(Place{"the memory"}, "categories", "a list of names", *it);
            for (const json& c : *it) {
                if (!c.is_string()) refuseField(Place{"the memory"}, "categories", "a list of names", *it);
                int slot = -1;
                for (int k = 0; k < kMemoryCategories; ++k)
                    if (categoryName(k) == c.get<std::string>()) slot = k;
                slots.push_back(slot);
            }
        } else {
            for (int c = 0; c < kMemoryCategories; ++c) slots.push_back(c);
        }
        r.memory.peak = peakFromJson(mem, "peak");
        r.memory.trainingPeak = peakFromJson(mem, "training_peak");
        r.memory.evaluationPeak = peakFromJson(mem, "evaluation_peak");
        if (const auto phase = text(mem, "peak_phase", Place{"the memory"})) {
            r.memory.peakPhase = parseMemoryPhase(*phase);
            if (!r.memory.peakPhase) refuseField(Place{"the memory"}, "peak_phase", "training or evaluation", mem.at("peak_phase"));
        }
        if (mem.contains("device_before_run"))
            r.memory.deviceBeforeRun = static_cast<std::uint64_t>(whole(mem, "device_before_run", Place{"the memory"}));
        for (const auto& m : entries(mem, "samples", emptyList)) {
            MemoryEvent p;
            p.step = whole(m, "step", Place{"a memory sample"});
            const Place at{"the memory sample at step", p.step};
            if (const auto it = m.find("bytes"); it != m.end()) {
                if (!it->is_array()) refuseField(at, "bytes", "an array of byte counts", *it);
                for (std::size_t i = 0; i < it->size(); ++i) {
                    const json& b = (*it)[i];
                    if (!b.is_number()) refuseField(at, "bytes", "an array of byte counts", *it);
                    try {
                        const std::int64_t bytes = jsonWhole(b, 0, kMaxWhole, "bytes");
                        if (i < slots.size() && slots[i] >= 0) p.memory.live[static_cast<std::size_t>(slots[i])] = bytes;
                    } catch (const InputError&) {
                        refuseField(at, "bytes", "an array of byte counts", *it);
                    }
                }
            }
            p.memory.totalLive = whole(m, "total", at);
            p.elapsedMs = number(m, "elapsed_ms", at, kNonNegative).value_or(0.0);
            if (m.contains("device_used"))
                p.device = DeviceMemoryInfo{static_cast<std::uint64_t>(whole(m, "device_used", at)),
                                            static_cast<std::uint64_t>(whole(m, "device_total", at))};
            r.memory.samples.push_back(std::move(p));
        }
    } catch (const json::exception& e) {
        throw bad(e.what());
    } catch (const InputError& e) {
        // A field's own check (a number out of range) names the field; this adds the file.
        const std::string what = e.what();
        if (what.rfind(origin, 0) == 0) throw;
        throw bad(what);
    }
    return r;
}

}  // namespace

RunRecord readRunRecord(const json& doc, const std::string& origin) { return readRecord(doc, origin, nullptr); }

json machineToJson(const RecordedMachine& m)
{
    json j = json::object();
    if (m.cpu) j["cpu"] = *m.cpu;
    if (m.logicalCores) j["logical_cores"] = *m.logicalCores;
    if (m.threads) j["threads"] = *m.threads;
    if (m.os) j["os"] = *m.os;
    if (m.hostname) j["hostname"] = *m.hostname;
    return j;
}

json versionsToJson(const RecordedVersions& v)
{
    json j = json::object();
    if (v.precisionLab) j["precision_lab"] = *v.precisionLab;
    if (v.compiler) j["compiler"] = *v.compiler;
    if (v.nlohmannJson) j["nlohmann_json"] = *v.nlohmannJson;
    if (!v.backend.empty()) j["backend"] = v.backend;
    return j;
}

json runRecordToJson(const RunRecord& r)
{
    json doc = {{"format_version", r.formatVersion},
                {"name", r.name},
                {"created_at", r.createdAt},
                {"settings", settingsToJson(r.settings)},
                {"seed", r.settings.seed},   // the settings' own, at the top for people reading the file
                {"machine", machineToJson(r.machine)},
                {"versions", versionsToJson(r.versions)},
                {"backend", {{"name", r.backend}}},
                {"data", {{"name", r.data.name}, {"description", r.data.description},
                          {"train_images", r.data.trainImages}, {"test_images", r.data.testImages}}}};
    if (r.arithmetic) doc["backend"]["arithmetic"] = *r.arithmetic;
    if (!r.sourceKind.empty() || !r.sourceAsRun.empty() || !r.judgedFormat.empty()) {
        json& source = doc["source"] = json::object();
        if (!r.sourceKind.empty()) source["kind"] = r.sourceKind;
        if (!r.sourceAsRun.empty()) source["as_run"] = r.sourceAsRun;
        if (!r.judgedFormat.empty()) source["judged_format"] = r.judgedFormat;
    }
    json& steps = doc["steps"] = json::array();
    for (const StepEvent& p : r.steps) steps.push_back(stepToJson(p));
    json& events = doc["events"] = json::array();
    for (const RecordedEvent& e : r.events) events.push_back(eventToJson(e));
    json& evals = doc["evals"] = json::array();
    const bool classifies = modelTask(r.settings.model.kind) == ModelTask::classify;   // else no accuracy to write
    for (const EvalEvent& e : r.evals) {
        json& eval = evals.emplace_back(json{{"step", e.step}, {"epoch", e.epoch}});
        if (classifies) eval["test_accuracy"] = e.testAccuracy;
        eval["test_loss"] = e.testLoss;
    }
    if (!r.reconstructions.empty()) {
        json images = json::array();
        for (const ReconstructedImage& image : r.reconstructions)
            images.push_back({{"test_index", image.testIndex}, {"original", image.original},
                              {"reconstruction", image.reconstruction}});
        doc["reconstructions"] = {{"step", r.reconstructedAtStep}, {"images", std::move(images)}};
    }
    if (!r.scalars.empty()) {
        json& scalars = doc["scalars"] = json::array();
        for (const ScalarEvent& e : r.scalars)
            scalars.push_back({{"step", e.step}, {"name", e.name}, {"value", finiteOrNull(e.value)}});
    }
    json& telemetry = doc["telemetry"] = json::array();
    for (const TelemetryEvent& t : r.telemetry) {
        json layers = json::array();
        for (const LayerTelemetry& l : t.layers) layers.push_back(snapshotToJson(l));
        telemetry.push_back({{"step", t.step}, {"loss_scale", t.lossScale}, {"layers", std::move(layers)}});
    }
    const RecordedMemory& m = r.memory;
    json categories = json::array();
    for (int c = 0; c < kMemoryCategories; ++c) categories.push_back(categoryName(c));
    json memory = {{"categories", std::move(categories)}, {"samples", json::array()}, {"peak", peakToJson(m.peak)}};
    for (const MemoryEvent& p : m.samples) {
        json sample{{"step", p.step}, {"elapsed_ms", p.elapsedMs}, {"bytes", p.memory.live}, {"total", p.memory.totalLive}};
        if (p.device) {
            sample["device_used"] = p.device->used;
            sample["device_total"] = p.device->total;
        }
        memory["samples"].push_back(std::move(sample));
    }
    if (m.trainingPeak) memory["training_peak"] = peakToJson(m.trainingPeak);
    if (m.evaluationPeak) memory["evaluation_peak"] = peakToJson(m.evaluationPeak);
    if (m.peakPhase) memory["peak_phase"] = std::string(memoryPhaseName(*m.peakPhase));
    if (m.deviceBeforeRun) memory["device_before_run"] = *m.deviceBeforeRun;
    doc["memory"] = std::move(memory);
    doc["summary"] = summaryToJson(r.summary);
    return doc;
}

namespace {

void checkRunRecordDocument(const json& doc, const std::filesystem::path& file)
{
    if (!doc.is_object()) throw InputError(file.string() + ": not a run record (not a JSON object)");
    if (!doc.contains("format_version") || !doc["format_version"].is_number_integer())
        throw InputError(file.string() + ": not a run record (no format_version)");
    if (doc["format_version"].get<int>() > kRunRecordFormatVersion)
        throw InputError(file.string() + ": run record format " + jsonExcerpt(doc["format_version"]) +
                         " is newer than this version of Precision Lab understands");
}

}  // namespace

json loadRunRecordDocument(const std::filesystem::path& file)
{
    json doc = readJsonFile(file, file.string() + ": run record");
    checkRunRecordDocument(doc, file);
    return doc;
}

bool isRunRecordDocument(const json& doc) { return doc.is_object() && doc.contains("format_version"); }

RunRecord loadRunRecord(const std::filesystem::path& file)
{
    // The steps read as they are parsed: a record of 400,000 steps had stood in memory as
    // 3.2 million JSON values (about 400 MB) before any was read.
    const std::string origin = file.string();
    std::vector<StepEvent> steps;
    std::string badStep;   // the first step's problem, said after the document's own checks
    const json doc = parseJsonInputStreaming(
        readRegularFile(file, origin + ": run record", JsonLimits{}.maxBytes), origin + ": run record", "steps",
        [&](json&& step) {
            if (!badStep.empty()) return;
            if (!step.is_object()) {   // as entries() says it of a document's steps
                badStep = "every entry of \"steps\" must be an object, got " + jsonExcerpt(step);
                return;
            }
            try {
                steps.push_back(stepFromJson(step));
            } catch (const std::exception& e) {   // InputError, or a JSON type error
                badStep = e.what();
            }
        });
    checkRunRecordDocument(doc, file);
    if (!badStep.empty()) throw InputError(origin + ": not a usable run record: " + badStep);
    return readRecord(doc, origin, &steps);
}

}  // namespace plab
