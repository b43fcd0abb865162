// The subcommands of `plab`, each registered on the CLI11 app by its own file.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

namespace plab::report {
struct ReportProgress;
}

namespace plab::cli {

// Report progress for the CLI: each file written is named on stderr.
report::ReportProgress printFilesWritten();

// Exit statuses of every subcommand (documented in README.md).
enum ExitStatus : int {
    kExitOk = 0,
    kExitFailure = 1,    // a failure of ours
    kExitBadInput = 2,   // bad usage, options, config or data
    kExitDiverged = 3,   // the run diverged: a valid experimental result, recorded
    kExitClaimNotHeld = 4,   // `plab lesson`: an expectation did not hold, or a sentence is unbacked
    kExitInterrupted = 130,
};

// Each adds its subcommand to `app` and sets `run` to the action to call when that
// subcommand was chosen (the action returns the exit status).
void addTrainCommand(CLI::App& app, std::function<int()>& run);
void addConvertCommand(CLI::App& app, std::function<int()>& run);
void addDataCommand(CLI::App& app, std::function<int()>& run);
void addInfoCommand(CLI::App& app, std::function<int()>& run);
void addSweepCommand(CLI::App& app, std::function<int()>& run);
void addLessonCommand(CLI::App& app, std::function<int()>& run);
void addExportCommand(CLI::App& app, std::function<int()>& run);
#if PLAB_WITH_REPORTS
void addReportCommand(CLI::App& app, std::function<int()>& run);   // needs Qt Gui + Svg
#endif

}  // namespace plab::cli
