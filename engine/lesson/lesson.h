// A lesson for the classroom, as data (docs/ARCHITECTURE.md#lessons, schema in docs/LESSONS.md):
// a question, the runs that answer it, the view each chart opens on, machine-checked
// expectations that back each sentence of the explanation, placeholders in the text
// filled from the runs just measured, and an optional prediction asked before the runs.
// Loading checks everything before anything runs and throws one sentence naming the file
// and the key. Qt-free: the CLI's `plab lesson` and the app read lessons through this.
#pragma once

#include "train/settings.h"

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace plab {

inline constexpr int kLessonFormat = 2;   // format 1 (no view, no expectations) still loads

struct LessonRun {
    std::string id;            // short name used by views, expectations and placeholders
    std::string name;          // shown to people
    TrainSettings settings;
};

// One side of an expectation or placeholder: a metric (lesson_metrics.h) of one run, or a
// format fact (run empty).
struct MetricRef {
    std::string run;           // a LessonRun id; empty for format facts
    std::string metric;        // "test_accuracy", "lost_updates:fc1", "format_max:fp16", ...
    bool operator==(const MetricRef&) const = default;
};

enum class ExpectOp { less, lessEqual, greater, greaterEqual, equal, within, diverged, completed };
std::string_view expectOpName(ExpectOp op);

// A claim checked against the run records:
//   left op value                   (no `than`)
//   left op factor * than + offset  (with `than`); `within`: |left - than| <= value
//   diverged / completed            (the run's final status)
struct Expectation {
    std::string id;
    MetricRef left;
    ExpectOp op = ExpectOp::greater;
    std::optional<double> value;
    std::optional<MetricRef> than;
    double factor = 1.0;
    double offset = 0.0;
    std::string backs;         // the sentence of the explanation this backs (exact text)
};

// A sentence of the explanation that states how the method works rather than what was
// measured; shown with its source so students can tell the two apart.
struct BackgroundSentence {
    std::string sentence;
    std::string source;
};

struct HistogramView {
    std::string layer;         // "loss", "conv1", ...
    std::string kind;          // "activation", "activation_grad", "weight_grad"
    std::int64_t step = 0;     // a telemetry step of the watched run; 0: the last
};

struct LessonView {
    std::string watch;                  // run id the charts show; empty: the last run
    std::vector<std::string> overlay;   // run ids overlaid; empty with overlayAll: every other run
    bool overlayAll = true;
    std::optional<HistogramView> histogram;
    std::string underflowKind;          // the underflow/overflow panels' tensor kind; empty: default
};

struct Prediction {
    std::string prompt;
    std::vector<std::string> choices;   // empty: a number is asked
    std::string unit;                   // for a number, e.g. "%"
    std::string answer;                 // a placeholder ("{off.test_accuracy|pct}") shown on Reveal
};

struct Lesson {
    int format = kLessonFormat;
    std::string title;
    std::string question;
    std::vector<LessonRun> runs;
    std::vector<std::string> charts;    // lessonChartNames()
    LessonView view;
    std::vector<Expectation> expectations;
    std::vector<BackgroundSentence> background;
    std::optional<Prediction> predict;
    std::string explanation;            // may hold placeholders {run.metric|style}
    std::string origin;                 // "lesson 01-underflow.json", for messages

    const LessonRun* run(std::string_view id) const;
    int runIndex(std::string_view id) const;   // -1 when absent
    // Index of the watched run (view.watch, else the last).
    int watchedRun() const;
    // Optimizer steps of all runs together (epochs of `trainingImages` capped by max_steps,
    // as the trainer plans them; max_steps alone when the set's size is not given).
    std::int64_t plannedSteps(std::int64_t trainingImages = 0) const;
};

// The chart groups a lesson may show, in the app's order.
const std::vector<std::string>& lessonChartNames();

// A lesson's runs together may train on at most this many images (steps x batch, an
// epoch counted as 60000 images, MNIST's training set): ten times the largest shipped
// lesson. More is refused when the lesson is loaded (`plab lesson --check`, the app).
inline constexpr std::int64_t kLessonImageBudget = 2'000'000;
inline constexpr std::int64_t kLessonBudgetTrainingSet = 60'000;
inline constexpr std::int64_t kLessonBudgetTestSet = 10'000;   // MNIST's test images, each evaluation

// The work of one run, in multiply-adds, as the budget counts it: its planned steps x
// batch x 3 (the forward pass and the two gradients of each product) plus its evaluations
// (each epoch's end, every eval_every steps, the last) x 10000 test images, each times its
// model's forward multiply-adds per image (model_kinds.h).
double runWork(const TrainSettings& settings);
// And the budget of a lesson's runs together: ten times the largest shipped lesson's work
// (lesson 12's five runs, about 1.3e12: a minute or two on two cores). A wide deep-mlp
// (widths 4096,16, batch 1000, 2000 steps: 1.4e15) had passed the image budget alone and
// would have trained for hours.
inline constexpr double kLessonWorkBudget = 1.3e13;

// Parses lesson JSON text; throws InputError "<origin>: <problem>." naming the key. A
// lesson names no output file (save_weights, write_batches, out) and no data_dir; the
// inputs it names (init_weights, read_batches) are relative paths without "..", left
// as written until resolveLessonInputs.
Lesson parseLesson(std::string_view json, const std::string& origin);
// Reads a regular file (a FIFO or a device is refused); the origin is "lesson <file
// name>"; its inputs are resolved against the file's folder.
Lesson loadLessonFile(const std::filesystem::path& file);
// Why `path` cannot be a lesson's input file, or empty: absolute, "~", "..", a control
// character.
std::string lessonInputProblem(const std::string& path);
// Makes every run's init_weights and read_batches an absolute path inside `folder`
// after checking each is a regular file there; throws InputError naming the run and key.
void resolveLessonInputs(Lesson& lesson, const std::filesystem::path& folder);
// The lesson's JSON form (format 2), the inverse of parseLesson: runs' settings are
// written in full, so the file opens the same elsewhere.
nlohmann::json lessonToJson(const Lesson& lesson);

// A sentence as compared with `backs`: trimmed, without its closing punctuation.
std::string sentenceKey(std::string_view sentence);
// The explanation split into sentences (at ". ", "! ", "? " and the end), trimmed.
std::vector<std::string> explanationSentences(std::string_view text);

}  // namespace plab
