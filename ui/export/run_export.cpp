// Exporting runs from the app (see run_export.h) through the same report outputs as
// `plab report` (report_render/report_outputs.h), into one folder.
#include "export/run_export.h"

#include "files/atomic_file.h"
#include "files/input_file.h"
#include "report_outputs.h"
#include "weights/safetensors.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>

#include <fstream>
#include <sstream>

namespace plab::ui {

namespace {

QString tr(const char* text) { return QCoreApplication::translate("RunExport", text); }

}  // namespace

ExportResult exportRuns(const ExportRequest& request, const std::function<bool(int, int, const QString&)>& progress)
{
    ExportResult result;
    if (request.recordFiles.isEmpty()) {
        result.error = tr("Nothing to export: select or check at least one run that has a record.");
        return result;
    }
    const int total = 1 + int(request.pdf) + int(request.html) + int(request.csv) + int(request.json) +
                      int(request.tensorboard);
    int done = 0;
    auto step = [&](const QString& what) { return !progress || progress(done++, total, what); };
    try {
        if (!step(tr("Reading the run records"))) return result;
        if (!QDir().mkpath(request.folder))
            throw std::runtime_error(request.folder.toStdString() + ": cannot create the folder");
        std::vector<std::string> files;
        for (const QString& file : request.recordFiles) files.push_back(file.toStdString());
        const auto runs = report::loadRunRecords(files);

        const QDir folder(request.folder);
        report::ReportOutputs outputs;
        outputs.title = request.title.toStdString();
        outputs.smoothing = request.smoothing;
        if (request.json) outputs.jsonDir = folder.filePath(QStringLiteral("records")).toStdString();
        if (request.csv) outputs.csvDir = folder.filePath(QStringLiteral("csv")).toStdString();
        if (request.tensorboard) outputs.tensorboardDir = folder.filePath(QStringLiteral("tensorboard")).toStdString();
        if (request.html) outputs.html = folder.filePath(QStringLiteral("report.html")).toStdString();
        if (request.pdf) outputs.pdf = folder.filePath(QStringLiteral("report.pdf")).toStdString();

        bool cancelled = false;
        report::ReportProgress reportProgress;
        reportProgress.beforeStep = [&](const std::string& what) {
            cancelled = !step(tr(what.c_str()));
            return !cancelled;
        };
        reportProgress.wrote = [&](const std::filesystem::path& file) {
            result.files << QString::fromStdString(file.string());
        };
        report::writeReportOutputs(runs, outputs, reportProgress);
        if (!cancelled && progress) progress(total, total, tr("Done"));
    } catch (const std::exception& e) {
        QString why = QString::fromUtf8(e.what());
        if (why.endsWith(QLatin1Char('.'))) why.chop(1);
        result.error = tr("The export failed: %1.").arg(why);
    }
    return result;
}

QString runWeightsFile(const TrainSettings& settings, bool live, QString* why)
{
    auto none = [&](const QString& reason) {
        if (why) *why = reason;
        return QString();
    };
    if (live) return none(tr("The run is still training: its weights are written when it ends."));
    const QString file = QString::fromStdString(settings.saveWeights);
    if (file.isEmpty()) return none(tr("The run was trained without saving its weights."));
    if (!QFileInfo(file).isFile())
        return none(tr("The run's weights file %1 is not there (a failed run writes none).").arg(file));
    if (why) why->clear();
    return file;
}

QString exportWeights(const QString& weightsFile, const QString& target)
{
    try {
        const std::string data = readRegularFile(weightsFile.toStdString(), "weights " + weightsFile.toStdString(),
                                                 std::uint64_t{4} << 30);
        (void)decodeSafetensors(data, "weights " + weightsFile.toStdString());   // whole and well-formed
        writeFileAtomically(target.toStdString(), data);
    } catch (const std::exception& e) {
        QString why = QString::fromUtf8(e.what());
        if (why.endsWith(QLatin1Char('.'))) why.chop(1);
        return tr("The weights were not exported: %1.").arg(why);
    }
    return {};
}

}  // namespace plab::ui
