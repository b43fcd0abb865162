// Writing a comparison report of run records in the formats asked for (PDF, HTML, CSV
// folder, JSON folder, TensorBoard event files): the one implementation behind `plab report`, `plab sweep` and
// the app's File > Export.
#pragma once

#include "report/run_comparison.h"
#include "report/smoothing.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace plab::report {

struct ReportOutputs {
    std::string pdf, html, csvDir, jsonDir;
    std::string tensorboardDir;   // <dir>/<run>-<id>/events.out.tfevents.* (tensorboard/tensorboard_export.h)
    std::string title;
    std::vector<std::int64_t> histogramSteps;
    std::string histogramLayer;
    std::vector<std::string> notes;   // sentences before the summary
    double smoothing = kDefaultSmoothing;   // the loss curves' EMA weight (as the app's slider)
    bool any() const
    {
        return !pdf.empty() || !html.empty() || !csvDir.empty() || !jsonDir.empty() || !tensorboardDir.empty();
    }
};

struct LoadedRun {
    std::string origin;          // file it came from
    nlohmann::json document;     // as read (the JSON folder copies it)
    RunRecord record;            // as read
};

// Reads and checks the records; throws InputError naming the first bad file.
std::vector<LoadedRun> loadRunRecords(const std::vector<std::string>& files);

// Told before each output is written ("Writing the PDF report"): returns false to stop
// there. Told of each file written, and of each name cut to fit a file name.
struct ReportProgress {
    std::function<bool(const std::string& step)> beforeStep;
    std::function<void(const std::filesystem::path& file)> wrote;
    std::function<void(const std::string& sentence)> note;
};

// Writes every output asked for; returns the comparison it reported on. The run records
// and CSV tables take free names: a file already in the folder is never replaced (a
// suffix -2, -3, ... instead); the output folders are checked before anything is written
// (InputError naming the flag). Starts an
// offscreen QGuiApplication when none exists (QT_QPA_PLATFORM defaults to offscreen).
// Throws std::runtime_error naming a file that cannot be written.
RunComparison writeReportOutputs(const std::vector<LoadedRun>& runs, const ReportOutputs& outputs,
                                 const ReportProgress& progress = {});

}  // namespace plab::report
