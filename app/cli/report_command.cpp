// `plab report run1.json run2.json ... --pdf out.pdf --html out.html --csv DIR --json DIR`:
// a report of one run or a comparison of several, from their run records, in each format
// asked for. A bad or unreadable record exits 2 with one message naming the file.
#include "commands.h"
#include "report_outputs.h"

#include "error.h"
#include "files/output_paths.h"

#include <iostream>
#include <memory>

namespace plab::cli {

using report::loadRunRecords;
using report::ReportOutputs;
using report::writeReportOutputs;

report::ReportProgress printFilesWritten()
{
    report::ReportProgress progress;
    progress.wrote = [](const std::filesystem::path& file) { std::cerr << "plab: wrote " << file.string() << '\n'; };
    progress.note = [](const std::string& sentence) { std::cerr << "plab: " << sentence << '\n'; };
    return progress;
}

namespace {

struct ReportCommandOptions {
    std::vector<std::string> records;
    ReportOutputs outputs;
};

int runReport(const ReportCommandOptions& opts)
{
    if (!opts.outputs.any())
        throw InputError("report: give at least one output: --pdf FILE, --html FILE, --csv DIR or --json DIR");
    // A file that cannot be written is bad usage (exit 2), said before anything is read.
    std::vector<NamedPath> inputs;
    for (const std::string& r : opts.records) inputs.push_back({"the record", r});
    checkOutputPaths({{"--pdf", opts.outputs.pdf}, {"--html", opts.outputs.html}}, inputs);
    const auto runs = loadRunRecords(opts.records);
    const RunComparison comparison = writeReportOutputs(runs, opts.outputs, printFilesWritten());
    std::cout << comparisonTableText(comparison);
    return kExitOk;
}

}  // namespace

void addReportCommand(CLI::App& app, std::function<int()>& run)
{
    auto* cmd = app.add_subcommand("report", "Write a report (PDF, HTML, CSV, JSON) of one run or a comparison of runs");
    auto opts = std::make_shared<ReportCommandOptions>();
    cmd->add_option("records", opts->records, "Run records (JSON) written by plab train or plab sweep")->required();
    cmd->add_option("--pdf", opts->outputs.pdf, "Write the report as PDF to this file");
    cmd->add_option("--html", opts->outputs.html, "Write the report as self-contained HTML to this file");
    cmd->add_option("--csv", opts->outputs.csvDir, "Write per-step, per-evaluation and telemetry CSV files (and the logged values of a PyTorch probe's record) into this folder");
    cmd->add_option("--json", opts->outputs.jsonDir, "Copy the run records into this folder");
    cmd->add_option("--title", opts->outputs.title, "Title of the report");
    cmd->add_option("--note", opts->outputs.notes, "A sentence shown before the summary (repeatable)");
    cmd->add_option("--histogram-steps", opts->outputs.histogramSteps,
                    "Steps whose gradient histograms to show (default: first, middle, last snapshot)")
        ->delimiter(',');
    cmd->add_option("--smoothing", opts->outputs.smoothing,
                    "Weight of the loss curves' exponential moving average, 0 (raw) to 0.999, as the app's slider "
                    "and TensorBoard's (default 0.95)")
        ->check(CLI::Range(0.0, kMaxSmoothing));
    cmd->add_option("--histogram-layer", opts->outputs.histogramLayer,
                    "Layer whose weight-gradient histograms to show (default: the one that underflowed most)");
    cmd->callback([&run, opts] { run = [opts] { return runReport(*opts); }; });
}

}  // namespace plab::cli
