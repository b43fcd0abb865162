// Over 500 lines: the lesson schema read, checked and written in one place, so its keys and their checks cannot drift apart.
// Loading and checking lesson files (see lesson.h).
#include "lesson/lesson.h"

#include "error.h"
#include "data/batch_file.h"
#include "files/input_file.h"
#include "json/json_input.h"
#include "lesson/lesson_metrics.h"
#include "lesson/lesson_text.h"
#include "nn/model_kinds.h"
#include "telemetry/telemetry.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <set>

#include <nlohmann/json.hpp>

namespace plab {

using nlohmann::json;

namespace {

// The work of a run of `steps` steps on `images` images in all.
double workOf(const TrainSettings& s, double steps, double images)
{
    const ModelKind* kind = findModelKind(s.model.kind);
    if (!kind) return 0.0;
    const std::vector<int> widths = s.model.widths.empty() ? defaultWidths(*kind) : s.model.widths;
    const double perImage = kind->multiplyAdds(widths);
    const double epochs = std::ceil(images / static_cast<double>(kLessonBudgetTrainingSet));
    const double evaluations = (s.evalEvery > 0 ? std::floor(steps / s.evalEvery) : 0.0) + epochs + 1.0;
    return perImage * (3.0 * images + evaluations * static_cast<double>(kLessonBudgetTestSet));
}

// The sentence for runs whose work, summed up to the run `id` (its own `runCost`), is past
// kLessonWorkBudget: by how much.
std::string overBudget(double work, const std::string& id, double runCost)
{
    char text[160];
    std::snprintf(text, sizeof text,
                  "its runs would take about %.2g multiply-adds, %.1f times the budget of %.2g (run %s alone: %.2g)", work,
                  work / kLessonWorkBudget, kLessonWorkBudget, quotedExcerpt(id).c_str(), runCost);
    return text;
}

}  // namespace

double runWork(const TrainSettings& s)
{
    const double steps = static_cast<double>(plannedSteps(s, kLessonBudgetTrainingSet));
    return workOf(s, steps, steps * s.batch);
}

std::string lessonInputProblem(const std::string& path)
{
    if (path.empty()) return "must be the name of a file beside the lesson";
    if (hasControlCharacter(path)) return "holds a control character";
    const std::filesystem::path p(path);
    if (p.is_absolute() || path.front() == '~')
        return "must be a file beside the lesson (a relative path), not a path of one machine";
    for (const auto& part : p)
        if (part == "..") return "must stay beside the lesson (no \"..\")";
    return {};
}

void resolveLessonInputs(Lesson& lesson, const std::filesystem::path& folder)
{
    int index = 0;
    for (LessonRun& run : lesson.runs) {
        ++index;
        for (auto [key, value] : {std::pair{"init_weights", &run.settings.initWeights}, std::pair{"read_batches", &run.settings.readBatches}}) {
            if (value->empty()) continue;
            const std::string where = lesson.origin + ": run " + std::to_string(index) + ": \"" + key + "\" " + quotedExcerpt(*value);
            if (const std::string why = lessonInputProblem(*value); !why.empty()) throw InputError(where + ": " + why + ".");
            const std::filesystem::path base = folder.empty() ? std::filesystem::path(".") : folder;
            const std::filesystem::path file = base / *value;
            try {
                openRegularFile(file, where);   // a regular file that exists: a FIFO or a device is refused here
            } catch (const InputError& e) {
                throw InputError(std::string(e.what()) + ".");
            }
            // Checked where it leads, not by its text: a link beside the lesson to a file
            // elsewhere (/etc/shadow) is refused, and the run reads the file that was checked.
            std::error_code fileError, folderError;
            const auto real = std::filesystem::canonical(file, fileError);
            const auto home = std::filesystem::canonical(base, folderError);
            const auto rel = real.lexically_relative(home);
            if (fileError || folderError || rel.empty() || *rel.begin() == "..")
                throw InputError(where + ": it leads outside the lesson's folder (a link to a file elsewhere).");
            *value = real.string();
        }
    }
    // With a batch file a run trains its lines, each as wide as it is, not epochs of its
    // batch: the budget is counted again with the files' work (a lesson could pass it otherwise).
    if (std::none_of(lesson.runs.begin(), lesson.runs.end(), [](const LessonRun& r) { return !r.settings.readBatches.empty(); }))
        return;
    double work = 0.0;
    for (const LessonRun& run : lesson.runs) {
        double cost = runWork(run.settings);
        if (!run.settings.readBatches.empty()) {
            const StepBatches batches = readBatchFile(run.settings.readBatches, std::numeric_limits<std::int64_t>::max());
            std::size_t steps = batches.size();
            if (run.settings.maxSteps > 0) steps = std::min<std::size_t>(steps, static_cast<std::size_t>(run.settings.maxSteps));
            double images = 0.0;
            for (std::size_t i = 0; i < steps; ++i) images += static_cast<double>(batches[i].size());
            cost = workOf(run.settings, static_cast<double>(steps), images);
        }
        work += cost;
        if (work > kLessonWorkBudget)
            throw InputError(lesson.origin + ": " + overBudget(work, run.id, cost) +
                             " (with its batch file): give \"max_steps\" or a shorter \"read_batches\" file.");
    }
}

namespace {

// Problems are thrown as std::runtime_error without the origin; parseLesson adds it.
[[noreturn]] void fail(const std::string& what) { throw std::runtime_error(what); }

void onlyKeys(const json& obj, const std::string& where, std::initializer_list<const char*> known)
{
    for (const auto& item : obj.items()) {
        const std::string& key = item.key();   // not a structured binding: clang 14 cannot capture one
        if (std::none_of(known.begin(), known.end(), [&](const char* k) { return key == k; }))
            fail(where + "unknown key \"" + jsonExcerpt(json(key), 40).substr(1, 40) + "\"");
    }
}

std::string text(const json& obj, const char* key, const std::string& where, bool required = true)
{
    if (!obj.contains(key)) {
        if (required) fail(where + "the key \"" + key + "\" is missing");
        return {};
    }
    if (!obj.at(key).is_string() || obj.at(key).get_ref<const std::string&>().empty())
        fail(where + "\"" + key + "\" must be a non-empty string");
    return obj.at(key).get<std::string>();
}

std::vector<std::string> stringList(const json& obj, const char* key, const std::string& where)
{
    std::vector<std::string> out;
    if (!obj.contains(key)) return out;
    if (!obj.at(key).is_array()) fail(where + "\"" + key + "\" must be an array of strings");
    for (const auto& v : obj.at(key)) {
        if (!v.is_string()) fail(where + "\"" + key + "\" must be an array of strings");
        out.push_back(v.get<std::string>());
    }
    return out;
}

// Files: a lesson may come from anyone, so it names no output (its runs write only into the
// lesson session's folder), and the inputs it names are files beside it: a relative path
// without "..", resolved against the lesson's folder when it is loaded from a file.
void checkLessonFileKeys(const json& settings, const std::string& where)
{
    for (const char* key : {"save_weights", "write_batches", "out"})
        if (settings.contains(key))
            fail(where + "\"" + key + "\" names an output file, which a lesson may not: its runs write only into the "
                                      "lesson's own runs folder");
    if (settings.contains("data_dir"))
        fail(where + "\"data_dir\" names a folder of this machine, which a lesson may not: its runs use the data "
                     "folder of whoever opens it");
    for (const char* key : {"init_weights", "read_batches"}) {
        if (!settings.contains(key)) continue;
        const json& v = settings.at(key);
        const std::string path = v.is_string() ? v.get<std::string>() : std::string();
        if (const std::string why = lessonInputProblem(path); !why.empty())
            fail(where + "\"" + key + "\" " + (v.is_string() ? quotedExcerpt(path) : jsonExcerpt(v, 40)) + ": " + why);
    }
}

bool validId(const std::string& id)
{
    return !id.empty() && id.size() <= 40 &&
           std::all_of(id.begin(), id.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-'; });
}

void checkMetricOf(const Lesson& lesson, const MetricRef& ref, const std::string& where)
{
    const MetricInfo* info = findMetric(ref.metric);
    const LessonRun* run = ref.run.empty() ? nullptr : lesson.run(ref.run);
    if (!ref.run.empty() && !run) fail(where + "no run has the id " + quotedExcerpt(ref.run));
    if (info && info->perRun && !run) fail(where + "metric " + quotedExcerpt(ref.metric) + " needs a run");
    if (info && !info->perRun && run) fail(where + "metric " + quotedExcerpt(ref.metric) + " is a format fact and takes no run");
    if (const std::string problem = checkMetric(ref.metric, run ? &run->settings : nullptr); !problem.empty())
        fail(where + problem);
}

void checkPlaceholders(const Lesson& lesson, const std::string& textValue, const std::string& where)
{
    std::vector<Placeholder> found;
    try {
        found = placeholdersOf(textValue);
    } catch (const std::invalid_argument& e) {
        fail(where + e.what());
    }
    for (const Placeholder& p : found) {
        checkMetricOf(lesson, p.left, where);
        if (p.right) checkMetricOf(lesson, *p.right, where);
    }
}

MetricRef metricRef(const json& obj, const std::string& where)
{
    MetricRef ref;
    if (obj.contains("run")) {
        if (!obj.at("run").is_string()) fail(where + "\"run\" must be a run id");
        ref.run = obj.at("run").get<std::string>();
    }
    ref.metric = text(obj, "metric", where);
    return ref;
}

double number(const json& obj, const char* key, const std::string& where)
{
    const json& v = obj.at(key);
    if (!v.is_number() || !std::isfinite(v.get<double>())) fail(where + "\"" + key + "\" must be a finite number");
    return v.get<double>();
}

Expectation expectationFromJson(const Lesson& lesson, const json& e, const std::string& where)
{
    if (!e.is_object()) fail(where + "an expectation must be an object");
    onlyKeys(e, where, {"id", "run", "metric", "op", "value", "than", "factor", "offset", "backs"});
    Expectation x;
    x.id = e.contains("id") ? text(e, "id", where) : std::string();
    const std::string op = text(e, "op", where);
    static const std::pair<const char*, ExpectOp> ops[] = {
        {"<", ExpectOp::less}, {"<=", ExpectOp::lessEqual}, {">", ExpectOp::greater}, {">=", ExpectOp::greaterEqual},
        {"==", ExpectOp::equal}, {"within", ExpectOp::within}, {"diverged", ExpectOp::diverged}, {"completed", ExpectOp::completed}};
    const auto* found = std::find_if(std::begin(ops), std::end(ops), [&](const auto& p) { return op == p.first; });
    if (found == std::end(ops)) fail(where + "\"op\" must be one of <, <=, >, >=, ==, within, diverged, completed");
    x.op = found->second;
    x.backs = text(e, "backs", where);
    if (x.op == ExpectOp::diverged || x.op == ExpectOp::completed) {
        x.left.run = text(e, "run", where);
        if (!lesson.run(x.left.run)) fail(where + "no run has the id " + quotedExcerpt(x.left.run));
        for (const char* k : {"metric", "value", "than", "factor", "offset"})
            if (e.contains(k)) fail(where + "\"" + op + "\" takes only a run, not \"" + k + "\"");
        return x;
    }
    x.left = metricRef(e, where);
    checkMetricOf(lesson, x.left, where);
    if (e.contains("value")) x.value = number(e, "value", where);
    if (e.contains("than")) {
        const json& t = e.at("than");
        MetricRef other;
        if (t.is_string()) {
            other = {t.get<std::string>(), x.left.metric};   // the same metric of another run
        } else if (t.is_object()) {
            onlyKeys(t, where + "\"than\": ", {"run", "metric"});
            other = metricRef(t, where + "\"than\": ");
        } else {
            fail(where + "\"than\" must be a run id or {\"run\", \"metric\"}");
        }
        checkMetricOf(lesson, other, where + "\"than\": ");
        x.than = other;
    }
    if (e.contains("factor")) x.factor = number(e, "factor", where);
    if (e.contains("offset")) x.offset = number(e, "offset", where);
    if (x.op == ExpectOp::within) {
        if (!x.than || !x.value) fail(where + "\"within\" needs \"than\" and \"value\" (the largest difference)");
    } else if (x.than == std::nullopt && x.value == std::nullopt) {
        fail(where + "a comparison needs \"value\" or \"than\"");
    } else if (x.than && x.value) {
        fail(where + "give \"value\" or \"than\", not both (use \"offset\" with \"than\")");
    }
    return x;
}

void viewFromJson(Lesson& lesson, const json& v)
{
    const std::string where = "view: ";
    if (!v.is_object()) fail("\"view\" must be an object");
    onlyKeys(v, where, {"watch", "overlay", "histogram", "underflow"});
    if (v.contains("watch")) {
        lesson.view.watch = text(v, "watch", where);
        if (!lesson.run(lesson.view.watch)) fail(where + "\"watch\": no run has the id " + quotedExcerpt(lesson.view.watch));
    }
    if (v.contains("overlay")) {
        lesson.view.overlay = stringList(v, "overlay", where);
        lesson.view.overlayAll = false;
        for (const auto& id : lesson.view.overlay)
            if (!lesson.run(id)) fail(where + "\"overlay\": no run has the id " + quotedExcerpt(id));
    }
    const LessonRun& watched = lesson.runs[static_cast<std::size_t>(lesson.watchedRun())];
    const auto layers = telemetryLayers(watched.settings.model);
    const auto checkLayer = [&](const std::string& layer, const std::string& key) {
        if (std::find(layers.begin(), layers.end(), layer) == layers.end()) {
            std::string list;
            for (const auto& l : layers) list += (list.empty() ? "" : ", ") + l;
            fail(where + key + ": the model " + watched.settings.model.kind + " has no layer " + quotedExcerpt(layer) + " (it has " + list + ")");
        }
    };
    const auto checkKind = [&](const std::string& kind, const std::string& key) {
        if (!parseTensorKind(kind)) fail(where + key + ": \"kind\" must be activation, activation_grad or weight_grad");
    };
    if (v.contains("histogram")) {
        const json& h = v.at("histogram");
        if (!h.is_object()) fail(where + "\"histogram\" must be an object");
        onlyKeys(h, where + "\"histogram\": ", {"layer", "kind", "step"});
        HistogramView hv;
        hv.layer = text(h, "layer", where + "\"histogram\": ");
        hv.kind = text(h, "kind", where + "\"histogram\": ");
        checkLayer(hv.layer, "\"histogram\"");
        checkKind(hv.kind, "\"histogram\"");
        if (h.contains("step")) {
            if (!h.at("step").is_number_integer() || h.at("step").get<std::int64_t>() < 1)
                fail(where + "\"histogram\": \"step\" must be a positive whole number");
            hv.step = h.at("step").get<std::int64_t>();
            const std::string problem = checkMetric("snapshot_underflow:" + hv.layer + "," + hv.kind + "," +
                                                        std::to_string(hv.step), &watched.settings);
            if (!problem.empty()) fail(where + "\"histogram\": \"step\" " + std::to_string(hv.step) + " is not a telemetry step of the watched run");
        }
        lesson.view.histogram = hv;
    }
    if (v.contains("underflow")) {
        const json& u = v.at("underflow");
        if (!u.is_object()) fail(where + "\"underflow\" must be an object");
        onlyKeys(u, where + "\"underflow\": ", {"kind"});
        lesson.view.underflowKind = text(u, "kind", where + "\"underflow\": ");
        checkKind(lesson.view.underflowKind, "\"underflow\"");
    }
}

Lesson lessonFromJson(const json& doc, const std::string& origin)
{
    if (!doc.is_object()) fail("a lesson must be a JSON object");
    if (!doc.contains("format") || !doc.at("format").is_number_integer() ||
        (doc.at("format").get<std::int64_t>() != 1 && doc.at("format").get<std::int64_t>() != kLessonFormat))
        fail("\"format\" must be 1 or 2 (the lesson formats this version reads)");
    Lesson lesson;
    lesson.origin = origin;
    lesson.format = doc.at("format").get<int>();
    if (lesson.format == 1)
        onlyKeys(doc, "", {"format", "title", "question", "runs", "charts", "explanation"});
    else
        onlyKeys(doc, "", {"format", "title", "question", "predict", "runs", "charts", "view", "expect", "background",
                           "explanation"});
    lesson.title = text(doc, "title", "");
    lesson.question = text(doc, "question", "");
    lesson.explanation = text(doc, "explanation", "");

    if (!doc.contains("runs") || !doc.at("runs").is_array() || doc.at("runs").empty())
        fail("\"runs\" must be a non-empty array");
    if (doc.at("runs").size() > 12) fail("\"runs\" holds at most 12 runs");
    int index = 0;
    for (const auto& run : doc.at("runs")) {
        ++index;
        const std::string where = "run " + std::to_string(index);
        if (!run.is_object() || !run.contains("name") || !run.at("name").is_string() || !run.contains("settings"))
            fail(where + " must be an object with \"name\" and \"settings\"");
        onlyKeys(run, where + ": ", {"id", "name", "settings"});
        if (!run.at("settings").is_object()) fail(where + ": \"settings\" must be an object");
        LessonRun r;
        r.id = run.contains("id") ? text(run, "id", where + ": ") : "run" + std::to_string(index);
        if (!validId(r.id)) fail(where + ": \"id\" must be letters, digits, _ or - (at most 40)");
        if (lesson.run(r.id)) fail(where + ": the id \"" + r.id + "\" is used twice");
        r.name = run.at("name").get<std::string>();
        checkLessonFileKeys(run.at("settings"), where + ": ");
        // settingsFromJson names the key and the problem; its message starts with `where`.
        r.settings = settingsFromJson(run.at("settings"), where);
        // A lesson's numbers (and the expectations checked against them) are the same on
        // every CPU: its runs use the exact arithmetic unless the lesson asks otherwise.
        if (!run.at("settings").contains("arithmetic")) r.settings.arithmetic = Arithmetic::exact;
        if (const std::string problem = validateSettings(r.settings); !problem.empty()) fail(where + ": " + problem);
        lesson.runs.push_back(std::move(r));
    }

    // A lesson is a demonstration of minutes: one that would train for hours (epochs:
    // 100000 and no max_steps, or a model a thousand times wider) is refused before
    // anything runs, saying by how much it is over.
    std::int64_t images = 0;
    double work = 0.0;
    for (const LessonRun& r : lesson.runs) {
        const std::int64_t runImages = plannedSteps(r.settings, kLessonBudgetTrainingSet) * r.settings.batch;
        images = runImages > kLessonImageBudget ? kLessonImageBudget + 1 : images + runImages;
        if (images > kLessonImageBudget)
            fail("its runs would train on more than " + std::to_string(kLessonImageBudget) +
                 " images in all (steps x batch, counting 60000 training images an epoch): give \"max_steps\" or fewer "
                 "\"epochs\" (run " + quotedExcerpt(r.id) + " alone trains on " + std::to_string(runImages) + ")");
        const double runCost = runWork(r.settings);
        work += runCost;
        if (work > kLessonWorkBudget)
            fail(overBudget(work, r.id, runCost) +
                 ": give \"max_steps\", fewer \"epochs\", a smaller batch or narrower \"widths\"");
    }

    if (!doc.contains("charts") || !doc.at("charts").is_array() || doc.at("charts").empty())
        fail("\"charts\" must be a non-empty array of chart names");
    for (const auto& c : doc.at("charts")) {
        const std::string name = c.is_string() ? c.get<std::string>() : std::string();
        const auto& known = lessonChartNames();
        if (std::find(known.begin(), known.end(), name) == known.end()) {
            std::string list;
            for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
            fail("unknown chart " + jsonExcerpt(c, 40) + " (known: " + list + ")");
        }
        lesson.charts.push_back(name);
    }

    if (doc.contains("view")) viewFromJson(lesson, doc.at("view"));
    if (doc.contains("expect")) {
        if (!doc.at("expect").is_array()) fail("\"expect\" must be an array");
        int n = 0;
        for (const auto& e : doc.at("expect")) {
            ++n;
            lesson.expectations.push_back(expectationFromJson(lesson, e, "expectation " + std::to_string(n) + ": "));
        }
    }
    if (doc.contains("background")) {
        if (!doc.at("background").is_array()) fail("\"background\" must be an array");
        int n = 0;
        for (const auto& b : doc.at("background")) {
            const std::string where = "background " + std::to_string(++n) + ": ";
            if (!b.is_object()) fail(where + "must be an object with \"sentence\" and \"source\"");
            onlyKeys(b, where, {"sentence", "source"});
            lesson.background.push_back({text(b, "sentence", where), text(b, "source", where)});
        }
    }
    if (doc.contains("predict")) {
        const json& p = doc.at("predict");
        const std::string where = "predict: ";
        if (!p.is_object()) fail("\"predict\" must be an object");
        onlyKeys(p, where, {"prompt", "choices", "unit", "answer"});
        Prediction pred;
        pred.prompt = text(p, "prompt", where);
        pred.choices = stringList(p, "choices", where);
        if (p.contains("choices") && pred.choices.size() < 2) fail(where + "\"choices\" needs at least two");
        pred.unit = p.contains("unit") ? text(p, "unit", where) : std::string();
        pred.answer = text(p, "answer", where);
        checkPlaceholders(lesson, pred.answer, where + "\"answer\": ");
        if (placeholdersOf(pred.answer).empty()) fail(where + "\"answer\" must hold a placeholder such as {run.test_accuracy}");
        lesson.predict = pred;
    }
    checkPlaceholders(lesson, lesson.explanation, "\"explanation\": ");
    for (const Expectation& e : lesson.expectations) checkPlaceholders(lesson, e.backs, "expectation \"backs\": ");
    return lesson;
}

}  // namespace

std::string sentenceKey(std::string_view sentence)
{
    std::string s(sentence);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
    if (!s.empty() && (s.back() == '.' || s.back() == '!' || s.back() == '?')) s.pop_back();
    std::size_t start = 0;
    while (start < s.size() && std::isspace(static_cast<unsigned char>(s[start]))) ++start;
    return s.substr(start);
}

std::string_view expectOpName(ExpectOp op)
{
    switch (op) {
    case ExpectOp::less: return "<";
    case ExpectOp::lessEqual: return "<=";
    case ExpectOp::greater: return ">";
    case ExpectOp::greaterEqual: return ">=";
    case ExpectOp::equal: return "==";
    case ExpectOp::within: return "within";
    case ExpectOp::diverged: return "diverged";
    case ExpectOp::completed: return "completed";
    }
    return "?";
}

const std::vector<std::string>& lessonChartNames()
{
    static const std::vector<std::string> names{"loss", "scale", "histogram", "underflow", "updates", "memory", "throughput"};
    return names;
}

const LessonRun* Lesson::run(std::string_view id) const
{
    for (const auto& r : runs)
        if (r.id == id) return &r;
    return nullptr;
}

int Lesson::runIndex(std::string_view id) const
{
    for (std::size_t i = 0; i < runs.size(); ++i)
        if (runs[i].id == id) return static_cast<int>(i);
    return -1;
}

int Lesson::watchedRun() const
{
    const int i = view.watch.empty() ? -1 : runIndex(view.watch);
    return i >= 0 ? i : static_cast<int>(runs.size()) - 1;
}

std::int64_t Lesson::plannedSteps(std::int64_t trainingImages) const
{
    std::int64_t steps = 0;
    for (const LessonRun& r : runs)   // without the set's size, max_steps is the best guess
        steps += trainingImages > 0 ? plab::plannedSteps(r.settings, trainingImages) : r.settings.maxSteps;
    return steps;
}

namespace {

// Lessons are small: 1 MiB and 32 levels are far more than any needs.
constexpr JsonLimits kLessonLimits{std::size_t{1} << 20, 32};

Lesson lessonFromDocument(const json& doc, const std::string& origin)
{
    try {
        return lessonFromJson(doc, origin);
    } catch (const InputError& e) {   // settingsFromJson's sentences start with "run N"
        std::string why = e.what();
        if (!why.empty() && why.back() == '.') why.pop_back();
        throw InputError(origin + ": " + why + ".");
    } catch (const std::exception& e) {
        std::string why = e.what();
        if (!why.empty() && why.back() == '.') why.pop_back();
        throw InputError(origin + ": " + why + ".");
    }
}

}  // namespace

// The reader's sentences, ending with a full stop like the lesson's own.
template <typename Read>
json readLessonJson(Read read)
{
    try {
        return read();
    } catch (const InputError& e) {
        std::string why = e.what();
        if (!why.empty() && why.back() != '.') why += '.';
        throw InputError(why);
    }
}

Lesson parseLesson(std::string_view jsonText, const std::string& origin)
{
    return lessonFromDocument(readLessonJson([&] { return parseJsonInput(jsonText, origin, kLessonLimits); }), origin);
}

Lesson loadLessonFile(const std::filesystem::path& file)
{
    const std::string origin = "lesson " + file.filename().string();
    Lesson lesson = lessonFromDocument(readLessonJson([&] { return readJsonFile(file, origin, kLessonLimits); }), origin);
    resolveLessonInputs(lesson, file.parent_path());
    return lesson;
}

json lessonToJson(const Lesson& lesson)
{
    json doc{{"format", kLessonFormat}, {"title", lesson.title}, {"question", lesson.question}};
    if (lesson.predict) {
        json p{{"prompt", lesson.predict->prompt}, {"answer", lesson.predict->answer}};
        if (!lesson.predict->choices.empty()) p["choices"] = lesson.predict->choices;
        if (!lesson.predict->unit.empty()) p["unit"] = lesson.predict->unit;
        doc["predict"] = p;
    }
    json runs = json::array();
    for (const auto& r : lesson.runs) {
        json s = settingsToJson(r.settings);
        // No file of this machine: the app's own data folder wherever the lesson is opened,
        // outputs only in the lesson's runs folder, and inputs as the caller put them (a
        // name beside the lesson, or absent: lessonInputProblem).
        for (const char* key : {"data_dir", "save_weights", "write_batches"}) s.erase(key);
        for (const char* key : {"init_weights", "read_batches"})
            if (s.value(key, std::string()).empty()) s.erase(key);
        runs.push_back({{"id", r.id}, {"name", r.name}, {"settings", s}});
    }
    doc["runs"] = runs;
    doc["charts"] = lesson.charts;
    json view = json::object();
    if (!lesson.view.watch.empty()) view["watch"] = lesson.view.watch;
    if (!lesson.view.overlayAll) view["overlay"] = lesson.view.overlay;
    if (lesson.view.histogram) {
        json h{{"layer", lesson.view.histogram->layer}, {"kind", lesson.view.histogram->kind}};
        if (lesson.view.histogram->step > 0) h["step"] = lesson.view.histogram->step;
        view["histogram"] = h;
    }
    if (!lesson.view.underflowKind.empty()) view["underflow"] = {{"kind", lesson.view.underflowKind}};
    if (!view.empty()) doc["view"] = view;
    json expect = json::array();
    for (const auto& e : lesson.expectations) {
        json j;
        if (!e.id.empty()) j["id"] = e.id;
        if (!e.left.run.empty()) j["run"] = e.left.run;
        if (!e.left.metric.empty()) j["metric"] = e.left.metric;
        j["op"] = std::string(expectOpName(e.op));
        if (e.value) j["value"] = *e.value;
        if (e.than) {
            if (e.than->metric == e.left.metric) j["than"] = e.than->run;
            else {
                json t{{"metric", e.than->metric}};
                if (!e.than->run.empty()) t["run"] = e.than->run;
                j["than"] = t;
            }
        }
        if (e.factor != 1.0) j["factor"] = e.factor;
        if (e.offset != 0.0) j["offset"] = e.offset;
        j["backs"] = e.backs;
        expect.push_back(j);
    }
    if (!expect.empty()) doc["expect"] = expect;
    json background = json::array();
    for (const auto& b : lesson.background) background.push_back({{"sentence", b.sentence}, {"source", b.source}});
    if (!background.empty()) doc["background"] = background;
    doc["explanation"] = lesson.explanation;
    return doc;
}

std::vector<std::string> explanationSentences(std::string_view textValue)
{
    std::vector<std::string> out;
    std::string current;
    int braces = 0;
    for (std::size_t i = 0; i < textValue.size(); ++i) {
        const char c = textValue[i];
        current += c;
        if (c == '{') ++braces;
        if (c == '}' && braces > 0) --braces;
        const bool end = braces == 0 && (c == '.' || c == '!' || c == '?') &&
                         (i + 1 == textValue.size() || textValue[i + 1] == ' ' || textValue[i + 1] == '\n');
        if (end) {
            if (auto s = sentenceKey(current); !s.empty()) out.push_back(current);
            current.clear();
        }
    }
    if (!sentenceKey(current).empty()) out.push_back(current);
    for (auto& s : out) {
        std::size_t a = 0, b = s.size();
        while (a < b && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
        while (b > a && std::isspace(static_cast<unsigned char>(s[b - 1]))) --b;
        s = s.substr(a, b - a);
    }
    return out;
}

}  // namespace plab
