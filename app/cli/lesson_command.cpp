// `plab lesson FILE`: runs a lesson's runs headless, one after another, writes their
// records, then judges every expectation of the lesson against them and prints each as
// held or NOT HELD with the measured values, the explanation with its placeholders filled,
// and any sentence of the explanation that nothing backs. Exit 0 when every expectation
// held and every sentence is backed; 4 when not (the lesson suite in CTest runs this for
// seeds 1-3). `--check` only loads the lesson; `--metrics` lists what a lesson can claim.
#include "commands.h"

#include "files/output_paths.h"
#include "progress_printer.h"
#include "train_options.h"

#include "error.h"
#include "lesson/lesson.h"
#include "lesson/lesson_check.h"
#include "lesson/lesson_metrics.h"
#include "record/record_writer.h"

#include <cstdio>
#include <iostream>
#include <memory>

namespace plab::cli {

namespace {

struct LessonOptions {
    std::string file;
    std::string outDir;
    std::string dataDir;
    std::int64_t seed = 0;   // 0: as the lesson says
    int threads = 0;         // 0: as the lesson says
    bool check = false;
    bool metrics = false;
    bool quiet = false;
};

int listMetrics()
{
    for (const MetricInfo& m : lessonMetrics())
        std::printf("%-28s %s%s\n", (std::string(m.name) + (m.args.empty() ? "" : ":" + std::string(m.args))).c_str(),
                    std::string(m.meaning).c_str(), m.perRun ? "" : " (a format fact: no run)");
    return kExitOk;
}

int printUnbacked(const Lesson& lesson)
{
    const auto unbacked = unbackedSentences(lesson);
    for (const auto& s : unbacked) std::printf("UNBACKED  \"%s\"\n", s.c_str());
    return static_cast<int>(unbacked.size());
}

int runLesson(const LessonOptions& opts)
{
    if (opts.metrics) return listMetrics();
    if (opts.file.empty()) throw InputError("plab lesson: name a lesson file (or --metrics)");
    Lesson lesson = loadLessonFile(opts.file);
    if (opts.check) {
        const int unbacked = printUnbacked(lesson);
        std::printf("%s: %zu runs, %zu expectations, %d unbacked sentences\n", lesson.origin.c_str(),
                    lesson.runs.size(), lesson.expectations.size(), unbacked);
        return unbacked ? kExitClaimNotHeld : kExitOk;
    }

    const std::filesystem::path outDir = opts.outDir.empty() ? std::filesystem::path("lesson-runs") : std::filesystem::path(opts.outDir);
    makeOutputFolder(outDir, "plab lesson: --out-dir");
    // Each run's record is named after its id, which the lesson chose: a file already
    // there is never replaced (the record takes a free name, said here, before any run).
    std::vector<std::filesystem::path> recordFiles;
    std::vector<std::string> taken;
    for (const LessonRun& run : lesson.runs) {
        const std::string stem = freeOutputStem(outDir, run.id, {".json"}, taken);
        if (stem != run.id)
            std::cerr << "plab: " << (outDir / (run.id + ".json")).string() << " is there already: lesson run " << run.id
                      << " writes " << (outDir / (stem + ".json")).string() << '\n';
        recordFiles.push_back(outDir / (stem + ".json"));
    }
    std::vector<RunRecord> records;
    for (std::size_t i = 0; i < lesson.runs.size(); ++i) {
        LessonRun& run = lesson.runs[i];
        if (opts.seed > 0) run.settings.seed = static_cast<std::uint64_t>(opts.seed);
        if (opts.threads > 0) run.settings.threads = opts.threads;
        if (!opts.dataDir.empty()) run.settings.dataDir = opts.dataDir;
        const DataSplit data = loadTrainingData(run.settings);
        std::cerr << "plab: lesson run " << (i + 1) << "/" << lesson.runs.size() << ": " << run.name << '\n';
        const auto lock = lockRecord(recordFiles[i], "the record of lesson run");
        ProgressPrinter progress(std::cerr, opts.quiet);
        const auto [result, recorded] = runRecordedTraining(run.settings, data, recordFiles[i], run.name, progress);
        if (result.status == RunStatus::stopped) {
            std::cerr << "plab: the lesson was stopped; its claims are not judged\n";
            return kExitInterrupted;
        }
        if (result.status == RunStatus::failed) {
            std::cerr << "plab: training failed: " << result.message << '\n';
            return kExitFailure;
        }
        std::printf("run %-14s %-9s test accuracy %.2f%%  %lld steps\n", run.id.c_str(),
                    std::string(runStatusName(result.status)).c_str(), 100.0 * result.testAccuracy,
                    static_cast<long long>(result.steps));
        records.push_back(recorded->recorder().runRecord());
    }

    LessonRecords refs;
    for (const auto& r : records) refs.push_back(&r);
    int notHeld = 0;
    for (const ExpectationResult& r : checkExpectations(lesson, refs)) {
        const char* state = r.state == ExpectationState::held ? "held     " : "NOT HELD ";
        if (r.state != ExpectationState::held) ++notHeld;
        std::printf("%s %s  [%s]\n          backs: \"%s\"\n", state, describeExpectation(*r.expectation).c_str(),
                    r.state == ExpectationState::notMeasured ? ("not measured: " + r.why).c_str() : r.measured.c_str(),
                    fillPlaceholders(r.expectation->backs, lesson, refs).c_str());
    }
    const int unbacked = printUnbacked(lesson);
    std::printf("\n%s\n\n", fillPlaceholders(lesson.explanation, lesson, refs).c_str());
    std::printf("%zu expectations: %zu held, %d not held; %d unbacked sentences\n", lesson.expectations.size(),
                lesson.expectations.size() - static_cast<std::size_t>(notHeld), notHeld, unbacked);
    return notHeld || unbacked ? kExitClaimNotHeld : kExitOk;
}

}  // namespace

void addLessonCommand(CLI::App& app, std::function<int()>& run)
{
    auto* cmd = app.add_subcommand("lesson", "Run a lesson headless and check every claim of its text against its runs");
    auto opts = std::make_shared<LessonOptions>();
    cmd->add_option("file", opts->file, "The lesson file (JSON, docs/LESSONS.md)");
    cmd->add_option("--out-dir", opts->outDir, "Write the runs' records here (default: ./lesson-runs)");
    cmd->add_option("--data-dir", opts->dataDir, "The data folder (default: the lesson's, else the per-user one)");
    cmd->add_option("--seed", opts->seed, "Run every run with this seed instead of the lesson's")->check(CLI::PositiveNumber);
    cmd->add_option("--threads", opts->threads, "Threads of every run")->check(CLI::Range(1, 256));
    cmd->add_flag("--check", opts->check, "Only load the lesson and list sentences no expectation backs");
    cmd->add_flag("--metrics", opts->metrics, "List the metrics a lesson can claim and quote");
    cmd->add_flag("--quiet", opts->quiet, "No progress lines");
    cmd->callback([&run, opts] { run = [opts] { return runLesson(*opts); }; });
}

}  // namespace plab::cli
