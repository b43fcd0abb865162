// `plab sweep --recipes fp32,amp-fp16 --loss-scale off,dynamic --batch 32,64 --out-dir DIR`:
// trains every combination of the grid one run after another (all other training flags
// as for `plab train`), writes each run record into DIR, prints a comparison table and
// writes a comparison report (DIR/report.html unless --report-html/--report-pdf say
// where). Every combination is checked before the first run starts.
#include "commands.h"
#include "progress_printer.h"
#include "train_options.h"

#include "error.h"
#include "report/csv_export.h"
#include "report/run_comparison.h"
#include "report/run_record.h"
#if PLAB_WITH_REPORTS
#include "report_outputs.h"
#endif

#include <filesystem>
#include <iostream>
#include <memory>
#include <sstream>

namespace plab::cli {

namespace {

using nlohmann::json;

struct SweepOptions {
    TrainFlagValues flags;
    std::string recipes, lossScales, batches;   // comma-separated grid values
    std::string outDir;
    std::string reportHtml, reportPdf;
    bool quiet = false;
};

std::vector<std::string> splitList(const std::string& text, const char* flag)
{
    std::vector<std::string> items;
    std::stringstream in(text);
    std::string item;
    while (std::getline(in, item, ','))
        if (!item.empty()) items.push_back(item);
    if (items.empty()) throw InputError(std::string(flag) + ": expected a comma-separated list, got '" + text + "'");
    return items;
}

struct GridPoint {
    std::string file;          // record file name inside the output folder
    TrainSettings settings;
};

std::vector<GridPoint> planGrid(const CLI::App& cmd, const SweepOptions& opts)
{
    std::string origin;
    const json base = settingsPatch(cmd, opts.flags, origin);
    const auto recipes = opts.recipes.empty() ? std::vector<std::string>{base.value("recipe", std::string("fp32"))}
                                              : splitList(opts.recipes, "--recipes");
    // An empty entry means "as the recipe or config says".
    const auto scales = opts.lossScales.empty() ? std::vector<std::string>{""} : splitList(opts.lossScales, "--loss-scale");
    std::vector<std::string> batches = {""};
    if (!opts.batches.empty()) batches = splitList(opts.batches, "--batch");

    std::vector<GridPoint> grid;
    for (const auto& recipe : recipes)
        for (const auto& scale : scales)
            for (const auto& batch : batches) {
                json patch = base;
                patch["recipe"] = recipe;
                std::string file = recipe;
                if (!scale.empty()) {
                    patch["loss_scale"] = scale;
                    file += "_ls-" + fileStem(scale);
                }
                if (!batch.empty()) {
                    static const FlagSpec batchSpec{"--batch", "batch", SettingType::integer, ""};
                    patch["batch"] = flagValue(batchSpec, batch);
                    file += "_b" + batch;
                }
                const std::string where = origin + " (sweep run " + file + ")";
                grid.push_back({file + ".json", settingsFromJson(patch, where)});
            }
    return grid;
}

int runSweep(CLI::App& cmd, const SweepOptions& opts)
{
    if (opts.outDir.empty()) throw InputError("sweep: --out-dir is required");
    const auto grid = planGrid(cmd, opts);
    for (const auto& point : grid)
        if (point.settings.dataset != grid.front().settings.dataset || point.settings.dataDir != grid.front().settings.dataDir)
            throw InputError("sweep: every run of a sweep uses the same data set");
    std::error_code ec;
    std::filesystem::create_directories(opts.outDir, ec);
    if (ec) throw InputError(opts.outDir + ": cannot create the folder (" + ec.message() + ")");

    const DataSplit data = loadTrainingData(grid.front().settings);
    std::vector<std::string> files;
    bool interrupted = false, failed = false;
    for (std::size_t i = 0; i < grid.size(); ++i) {
        const auto& point = grid[i];
        const auto file = std::filesystem::path(opts.outDir) / point.file;
        std::cerr << "plab: sweep run " << i + 1 << "/" << grid.size() << ": " << point.settings.recipe.describe()
                  << ", batch " << point.settings.batch << '\n';
        RunRecorder recorder(file, point.settings, data);
        ProgressPrinter progress(std::cerr, opts.quiet);
        const RunResult result = runRecordedTraining(point.settings, data, &recorder, progress);
        files.push_back(file.string());
        std::cerr << "plab: " << runStatusName(result.status) << ": " << result.message << "; record " << file.string() << '\n';
        if (result.status == RunStatus::failed) failed = true;
        if (result.status == RunStatus::stopped) {
            interrupted = true;
            std::cerr << "plab: sweep interrupted; reporting the runs so far\n";
            break;
        }
    }

    std::vector<RunDigest> digests;
    for (const auto& f : files) digests.push_back(digestRunRecord(loadRunRecord(f), f));
    std::cout << comparisonTableText(compareRuns(std::move(digests)));
#if PLAB_WITH_REPORTS
    report::ReportOutputs outputs;
    outputs.html = opts.reportHtml;
    outputs.pdf = opts.reportPdf;
    if (outputs.html.empty() && outputs.pdf.empty()) outputs.html = (std::filesystem::path(opts.outDir) / "report.html").string();
    outputs.title = "Precision Lab sweep";
    report::writeReportOutputs(report::loadRunRecords(files), outputs, printFilesWritten());
#else
    if (!opts.reportHtml.empty() || !opts.reportPdf.empty())
        std::cerr << "plab: this build has no report support (Qt Gui/Svg were not found); records are in " << opts.outDir << '\n';
#endif
    if (interrupted) return kExitInterrupted;
    return failed ? kExitFailure : kExitOk;
}

}  // namespace

void addSweepCommand(CLI::App& app, std::function<int()>& run)
{
    auto* cmd = app.add_subcommand("sweep", "Train a grid of recipes x loss scaling x batch sizes and compare the runs");
    auto opts = std::make_shared<SweepOptions>();
    opts->flags.omitted = {"--recipe", "--loss-scale", "--batch"};
    cmd->add_option("--recipes", opts->recipes, "Presets, comma-separated (e.g. fp32,amp-fp16,pure-fp16)");
    cmd->add_option("--loss-scale", opts->lossScales, "Loss scaling policies, comma-separated (e.g. off,dynamic,static:1024)");
    cmd->add_option("--batch", opts->batches, "Batch sizes, comma-separated (e.g. 32,64)");
    addTrainFlags(*cmd, opts->flags);
    cmd->add_option("--out-dir", opts->outDir, "Folder for the run records and the report")->required();
    cmd->add_option("--report-html", opts->reportHtml, "Write the comparison report as HTML here (default DIR/report.html)");
    cmd->add_option("--report-pdf", opts->reportPdf, "Write the comparison report as PDF here");
    cmd->add_flag("--quiet", opts->quiet, "No progress lines");
    cmd->callback([&run, cmd, opts] { run = [cmd, opts] { return runSweep(*cmd, *opts); }; });
}

}  // namespace plab::cli
