// `plab export --tensorboard DIR run1.json run2.json ...`: the run records as TensorBoard
// event files, one folder per run under DIR (engine/tensorboard/tensorboard_export.h).
// Needs no display and no Qt. A bad or unreadable record exits 2 with one message naming
// the file, before anything is written.
#include "commands.h"

#include "error.h"
#include "files/output_paths.h"
#include "report/run_comparison.h"
#include "record/record_writer.h"
#include "tensorboard/tensorboard_export.h"

#include <iostream>
#include <memory>

namespace plab::cli {

namespace {

struct ExportOptions {
    std::vector<std::string> records;
    std::string tensorboardDir;
};

int runExport(const ExportOptions& opts)
{
    if (opts.tensorboardDir.empty()) throw InputError("export: give the output: --tensorboard DIR");
    std::vector<RunDigest> digests;
    for (const auto& file : opts.records) digests.push_back(digestRunRecord(loadRunRecord(file), file));
    const RunComparison runs = compareRuns(std::move(digests));
    makeOutputFolder(opts.tensorboardDir, "export: --tensorboard");   // exit 2 naming the folder
    std::vector<std::string> notes;
    const auto files = writeTensorBoardRuns(runs, opts.tensorboardDir, &notes);
    for (const auto& note : notes) std::cerr << "plab: " << note << '\n';
    for (const TensorBoardFile& f : files)
        std::cerr << "plab: wrote " << f.file.string() << " (" << f.scalars << " scalars, " << f.histograms
                  << " histograms" << (f.texts > 0 ? ", " + std::to_string(f.texts) + " skip causes" : std::string())
                  << ")\n";
    std::cout << "tensorboard --logdir " << opts.tensorboardDir << '\n';
    return kExitOk;
}

}  // namespace

void addExportCommand(CLI::App& app, std::function<int()>& run)
{
    auto* cmd = app.add_subcommand("export", "Write run records as TensorBoard event files (scalars, log2 histograms, why steps skipped)");
    auto opts = std::make_shared<ExportOptions>();
    cmd->add_option("records", opts->records, "Run records (JSON) written by plab train, plab sweep or the app")->required();
    cmd->add_option("--tensorboard", opts->tensorboardDir,
                    "Folder for the event files: DIR/<run>-<id>/events.out.tfevents.* (created when missing; a run "
                    "exported again replaces its own file)")
        ->required();
    cmd->callback([&run, opts] { run = [opts] { return runExport(*opts); }; });
}

}  // namespace plab::cli
