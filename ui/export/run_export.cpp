// Exporting runs from the app (see run_export.h) through the same report outputs as
// `plab report` (report_render/report_outputs.h), into one folder.
#include "export/run_export.h"

#include "report_outputs.h"

#include <QCoreApplication>
#include <QDir>

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
    const int total = 1 + int(request.pdf) + int(request.html) + int(request.csv) + int(request.json);
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
        if (request.json) outputs.jsonDir = folder.filePath(QStringLiteral("records")).toStdString();
        if (request.csv) outputs.csvDir = folder.filePath(QStringLiteral("csv")).toStdString();
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

}  // namespace plab::ui
