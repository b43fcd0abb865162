// Loading lesson files in the app (see lesson.h).
#include "lessons/lesson.h"

#include "error.h"

#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>

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
    QFile f(file);
    if (QFileInfo(file).isDir())
        return {std::nullopt, QCoreApplication::translate("Lesson", "%1: it is a folder, not a lesson file.").arg(origin)};
    if (!f.open(QIODevice::ReadOnly))
        return {std::nullopt, QCoreApplication::translate("Lesson", "%1: cannot open the file.").arg(origin)};
    if (f.size() > (qint64{1} << 20))
        return {std::nullopt, QCoreApplication::translate("Lesson", "%1: the file is too large for a lesson (over 1 MiB).").arg(origin)};
    return parseLesson(f.readAll(), origin);
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

}  // namespace plab::ui
