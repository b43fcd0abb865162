// Writing a comparison report of run records in the formats asked for (PDF, HTML, CSV
// folder, JSON folder), shared by `plab report` and `plab sweep`. Built only when Qt Gui
// and Svg are found (PLAB_WITH_REPORTS).
#pragma once

#include "report/run_comparison.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace plab::cli {

struct ReportOutputs {
    std::string pdf, html, csvDir, jsonDir;
    std::string title;
    std::vector<std::int64_t> histogramSteps;
    std::string histogramLayer;
    bool any() const { return !pdf.empty() || !html.empty() || !csvDir.empty() || !jsonDir.empty(); }
};

struct LoadedRun {
    std::string origin;        // file it came from
    nlohmann::json record;
};

// Reads and checks the records; throws InputError naming the first bad file.
std::vector<LoadedRun> loadRunRecords(const std::vector<std::string>& files);

// Writes every output asked for, printing each file written on stderr; returns the
// comparison it reported on. Starts an offscreen QGuiApplication when none exists
// (QT_QPA_PLATFORM defaults to offscreen). Throws std::runtime_error naming a file that
// cannot be written.
RunComparison writeReportOutputs(const std::vector<LoadedRun>& runs, const ReportOutputs& outputs);

}  // namespace plab::cli
