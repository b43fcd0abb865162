// The report outputs of `plab report` and `plab sweep`. See report_outputs.h.
#include "report_outputs.h"

#include "tensorboard/tensorboard_export.h"

#include "error.h"
#include "files/output_paths.h"
#include "report/csv_export.h"
#include "record/record_writer.h"
#include "report_document.h"

#include <QGuiApplication>

#include <memory>

namespace plab::report {

namespace {

// QPainter needs fonts, and fonts need a QGuiApplication; the CLI has no display.
class OffscreenGui {
public:
    OffscreenGui()
    {
        if (QCoreApplication::instance()) return;
        if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
        // Qt warns that a headless process has no XDG_RUNTIME_DIR; nothing here needs one.
        previousHandler_ = qInstallMessageHandler(&dropRuntimeDirWarning);
        app_ = std::make_unique<QGuiApplication>(argc_, argv_);
    }

    ~OffscreenGui()
    {
        app_.reset();
        if (previousHandler_) qInstallMessageHandler(previousHandler_);
    }

private:
    static void dropRuntimeDirWarning(QtMsgType type, const QMessageLogContext& context, const QString& message)
    {
        if (message.startsWith(QLatin1String("QStandardPaths: XDG_RUNTIME_DIR not set"))) return;
        if (previousHandler_) previousHandler_(type, context, message);
    }
    static inline QtMessageHandler previousHandler_ = nullptr;
    int argc_ = 1;
    char name_[5] = {'p', 'l', 'a', 'b', '\0'};
    char* argv_[2] = {name_, nullptr};
    std::unique_ptr<QGuiApplication> app_;
};

std::vector<std::string> uniqueStems(const RunComparison& c)
{
    std::vector<std::string> labels;
    for (const auto& r : c.runs) labels.push_back(r.label);
    return uniqueFileStems(labels);
}

}  // namespace

std::vector<LoadedRun> loadRunRecords(const std::vector<std::string>& files)
{
    std::vector<LoadedRun> runs;
    for (const auto& f : files) {
        LoadedRun r;
        r.origin = f;
        r.document = loadRunRecordDocument(f);
        r.record = readRunRecord(r.document, f);   // throws InputError naming the file when unusable
        runs.push_back(std::move(r));
    }
    return runs;
}

RunComparison writeReportOutputs(const std::vector<LoadedRun>& runs, const ReportOutputs& outputs,
                                 const ReportProgress& progress)
{
    std::vector<RunDigest> digests;
    for (const auto& r : runs) digests.push_back(digestRunRecord(r.record, r.origin));
    RunComparison comparison = compareRuns(std::move(digests));
    const auto stems = uniqueStems(comparison);
    auto proceed = [&](const char* step) { return !progress.beforeStep || progress.beforeStep(step); };
    auto wrote = [&](const std::filesystem::path& file) { if (progress.wrote) progress.wrote(file); };

    // Files named after the runs never replace a file already there: a run named "Victim"
    // writes victim-2.json beside an unrelated victim.json. Every folder is checked first.
    for (const auto& [folder, what] : {std::pair{outputs.jsonDir, "--json"}, std::pair{outputs.csvDir, "--csv"},
                                       std::pair{outputs.tensorboardDir, "--tensorboard"}})
        if (!folder.empty()) makeOutputFolder(folder, what);
    // Run i's free stem in `folder` (`taken`: the stems this output gave so far), said when cut.
    auto freeStem = [&](const std::string& folder, const std::vector<std::string>& suffixes,
                        std::vector<std::string>& taken, std::size_t i) {
        bool cut = false;
        const std::string stem = freeOutputStem(folder, stems[i], suffixes, taken, &cut);
        if (cut && progress.note)
            progress.note("the run name " + quotedExcerpt(comparison.runs[i].label, 40) +
                          " is too long for a file name: its files are " + stem + "*");
        return stem;
    };
    if (!outputs.jsonDir.empty()) {
        if (!proceed("Writing the run records")) return comparison;
        std::vector<std::string> taken;
        for (std::size_t i = 0; i < runs.size(); ++i) {
            const std::string stem = freeStem(outputs.jsonDir, {".json"}, taken, i);
            const auto file = std::filesystem::path(outputs.jsonDir) / (stem + ".json");
            writeJsonAtomically(file, runs[i].document);
            wrote(file);
        }
    }
    if (!outputs.csvDir.empty()) {
        if (!proceed("Writing the CSV tables")) return comparison;
        std::vector<std::string> taken;
        for (std::size_t i = 0; i < runs.size(); ++i)
            for (const auto& file : writeRunCsv(runs[i].record, comparison.runs[i].label, outputs.csvDir,
                                                freeStem(outputs.csvDir, csvSuffixes(), taken, i)))
                wrote(file);
    }
    if (!outputs.tensorboardDir.empty()) {
        if (!proceed("Writing the TensorBoard event files")) return comparison;
        std::vector<std::string> notes;
        for (const auto& file : writeTensorBoardRuns(comparison, outputs.tensorboardDir, &notes)) wrote(file.file);
        if (progress.note)
            for (const auto& n : notes) progress.note(n);
    }
    if (outputs.pdf.empty() && outputs.html.empty()) return comparison;

    OffscreenGui gui;
    ReportOptions options;
    if (!outputs.title.empty()) options.title = QString::fromStdString(outputs.title);
    for (const auto& note : outputs.notes) options.notes << QString::fromStdString(note);
    options.histogramSteps = outputs.histogramSteps;
    options.histogramLayer = QString::fromStdString(outputs.histogramLayer);
    options.smoothing = outputs.smoothing;
    const ReportContent content = prepareReport(comparison, options);
    if (!outputs.html.empty()) {
        if (!proceed("Writing the HTML report")) return comparison;
        writeHtmlReport(content, QString::fromStdString(outputs.html));
        wrote(outputs.html);
    }
    if (!outputs.pdf.empty()) {
        if (!proceed("Writing the PDF report")) return comparison;
        writePdfReport(content, QString::fromStdString(outputs.pdf));
        wrote(outputs.pdf);
    }
    return comparison;
}

}  // namespace plab::report
