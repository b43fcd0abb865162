// Loading lesson files in the app (see lesson.h).
#include "lessons/lesson_files.h"

#include "error.h"

#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>

#include <algorithm>

namespace plab::ui {

LessonLoad parseLesson(const QByteArray& json, const QString& origin)
{
    try {
        return {plab::parseLesson(std::string_view(json.constData(), static_cast<std::size_t>(json.size())),
                                  origin.toStdString()),
                {}};
    } catch (const std::exception& e) {   // InputError: one sentence naming the file and key
        return {std::nullopt, QString::fromUtf8(e.what())};
    }
}

LessonLoad loadLesson(const QString& file)
{
    const QString origin = QCoreApplication::translate("Lesson", "lesson %1").arg(QFileInfo(file).fileName());
    if (file.startsWith(QLatin1String(":/"))) {   // a bundled lesson, compiled in
        QFile f(file);
        if (!f.open(QIODevice::ReadOnly))
            return {std::nullopt, QCoreApplication::translate("Lesson", "%1: cannot open the file.").arg(origin)};
        return parseLesson(f.readAll(), origin);
    }
    // A file from anywhere, read as `plab lesson` reads it: a regular file of at most 1 MiB
    // (a FIFO or a device is refused, never read), its inputs resolved beside it.
    try {
        return {plab::loadLessonFile(file.toStdString()), {}};
    } catch (const std::exception& e) {   // InputError: one sentence naming the file and key
        return {std::nullopt, QString::fromUtf8(e.what())};
    }
}

QStringList bundledLessonFiles()
{
    QStringList folders{QStringLiteral(":/lessons")};
    const QString appDir = QCoreApplication::applicationDirPath();
    folders << appDir + QStringLiteral("/../share/precision-lab/lessons")
            << appDir + QStringLiteral("/../../resources/lessons");   // a build tree in the source folder
    for (const QString& folder : folders) {
        const QDir dir(folder);
        const QStringList names = dir.entryList({QStringLiteral("*.json")}, QDir::Files, QDir::Name);
        if (names.isEmpty()) continue;
        QStringList files;
        for (const QString& n : names) files << dir.filePath(n);
        return files;
    }
    return {};
}

QStringList lessonCharts(const Lesson& lesson)
{
    QStringList out;
    for (const auto& c : lesson.charts) out << QString::fromStdString(c);
    return out;
}

SavedLesson lessonFromView(const std::optional<Lesson>& open, const QStringList& lessonRunIds, const ViewOnScreen& view,
                           const QString& title, const QString& question, const QString& explanation, const QString& lessonStem)
{
    SavedLesson out;
    if (view.runs.isEmpty()) {
        out.error = QCoreApplication::translate("Lesson", "No run is shown: watch or overlay the runs the lesson should run.");
        return out;
    }
    Lesson lesson;
    QStringList ids;   // the lesson's run id of each shown run
    const bool ofOpenLesson = open && lessonRunIds.size() == static_cast<qsizetype>(open->runs.size()) &&
                              std::all_of(view.runs.begin(), view.runs.end(),
                                          [&](const RunPtr& r) { return lessonRunIds.contains(r->id()); });
    if (ofOpenLesson) {
        lesson = *open;
        for (const RunPtr& r : view.runs)
            ids << QString::fromStdString(open->runs[static_cast<std::size_t>(lessonRunIds.indexOf(r->id()))].id);
    } else {
        int n = 0;
        for (const RunPtr& r : view.runs) {
            LessonRun run;
            run.id = "run" + std::to_string(++n);
            run.name = r->name().toStdString();
            run.settings = r->settings();
            run.settings.dataDir.clear();   // this machine's folder: elsewhere the lesson uses the app's own
            if (!r->changes().empty()) out.changed << r->name();
            lesson.runs.push_back(run);
            ids << QString::fromStdString(run.id);
        }
    }
    for (LessonRun& run : lesson.runs) {
        run.settings.saveWeights.clear();   // outputs go to the runs folder of whoever runs the lesson
        run.settings.writeBatches.clear();
        for (auto [value, suffix] : {std::pair{&run.settings.initWeights, ".init.safetensors"},
                                     std::pair{&run.settings.readBatches, ".batches.txt"}}) {
            if (value->empty()) continue;
            const QString name = lessonStem + QLatin1Char('-') + QString::fromStdString(run.id) + QLatin1String(suffix);
            out.copies.push_back({QString::fromStdString(*value), name});
            *value = name.toStdString();
        }
    }
    lesson.format = kLessonFormat;
    lesson.title = title.trimmed().toStdString();
    lesson.question = question.trimmed().toStdString();
    lesson.explanation = explanation.trimmed().toStdString();
    lesson.charts.clear();
    for (const QString& c : view.charts) lesson.charts.push_back(c.toStdString());
    lesson.view = LessonView{};
    lesson.view.watch = ids.front().toStdString();
    lesson.view.overlayAll = false;
    for (qsizetype i = 1; i < ids.size(); ++i) lesson.view.overlay.push_back(ids[i].toStdString());
    if (!view.histogramLayer.isEmpty())
        lesson.view.histogram = HistogramView{view.histogramLayer.toStdString(), view.histogramKind.toStdString(), view.histogramStep};
    lesson.view.underflowKind = view.underflowKind.toStdString();
    // Parsed back as any lesson file is opened: what is saved opens elsewhere.
    const std::string text = lessonToJson(lesson).dump(2);
    LessonLoad check = parseLesson(QByteArray::fromStdString(text), QCoreApplication::translate("Lesson", "the lesson to save"));
    if (!check.lesson) {
        out.error = check.error;
        return out;
    }
    out.lesson = std::move(lesson);
    return out;
}

}  // namespace plab::ui
