// Loading and checking lesson files (see lesson.h).
#include "lessons/lesson.h"

#include "charts/charts_view.h"

#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>

#include <nlohmann/json.hpp>

#include <set>

namespace plab::ui {

namespace {

constexpr int kLessonFormat = 1;

// Throws std::runtime_error with the sentence (without the origin).
QString stringField(const nlohmann::json& doc, const char* key)
{
    if (!doc.contains(key)) throw std::runtime_error(std::string("the key \"") + key + "\" is missing");
    if (!doc.at(key).is_string() || doc.at(key).get<std::string>().empty())
        throw std::runtime_error(std::string("\"") + key + "\" must be a non-empty string");
    return QString::fromStdString(doc.at(key).get<std::string>());
}

Lesson lessonFromJson(const nlohmann::json& doc, const QString& origin)
{
    if (!doc.is_object()) throw std::runtime_error("a lesson must be a JSON object");
    if (!doc.contains("format") || !doc.at("format").is_number_integer() || doc.at("format").get<int>() != kLessonFormat)
        throw std::runtime_error("\"format\" must be 1 (the lesson format this version reads)");
    static const std::set<std::string> known{"format", "title", "question", "runs", "charts", "explanation"};
    for (const auto& [key, value] : doc.items())
        if (!known.count(key)) throw std::runtime_error("unknown key \"" + key + "\"");
    Lesson lesson;
    lesson.origin = origin;
    lesson.title = stringField(doc, "title");
    lesson.question = stringField(doc, "question");
    lesson.explanation = stringField(doc, "explanation");

    if (!doc.contains("runs") || !doc.at("runs").is_array() || doc.at("runs").empty())
        throw std::runtime_error("\"runs\" must be a non-empty array");
    int index = 0;
    for (const auto& run : doc.at("runs")) {
        ++index;
        const std::string where = "run " + std::to_string(index);
        if (!run.is_object() || !run.contains("name") || !run.at("name").is_string() || !run.contains("settings"))
            throw std::runtime_error(where + " must be an object with \"name\" and \"settings\"");
        if (!run.at("settings").is_object()) throw std::runtime_error(where + ": \"settings\" must be an object");
        LessonRun r;
        r.name = QString::fromStdString(run.at("name").get<std::string>());
        // settingsFromJson names the key and the problem; its message starts with `where`.
        r.settings = settingsFromJson(run.at("settings"), where);
        if (const std::string problem = validateSettings(r.settings); !problem.empty())
            throw std::runtime_error(where + ": " + problem);
        lesson.runs.push_back(std::move(r));
    }

    if (!doc.contains("charts") || !doc.at("charts").is_array() || doc.at("charts").empty())
        throw std::runtime_error("\"charts\" must be a non-empty array of chart names");
    const QStringList knownCharts = ChartsView::groupNames();
    for (const auto& c : doc.at("charts")) {
        const QString name = c.is_string() ? QString::fromStdString(c.get<std::string>()) : QString();
        if (!knownCharts.contains(name))
            throw std::runtime_error("unknown chart " + c.dump() + " (known: " + knownCharts.join(QStringLiteral(", ")).toStdString() + ")");
        lesson.charts << name;
    }
    return lesson;
}

}  // namespace

std::int64_t Lesson::plannedSteps(std::int64_t trainingImages) const
{
    std::int64_t steps = 0;
    for (const LessonRun& r : runs)   // without the set's size, max_steps is the best guess
        steps += trainingImages > 0 ? plab::plannedSteps(r.settings, trainingImages) : r.settings.maxSteps;
    return steps;
}

LessonLoad parseLesson(const QByteArray& json, const QString& origin)
{
    const nlohmann::json doc = nlohmann::json::parse(json.constBegin(), json.constEnd(), nullptr, false);
    if (doc.is_discarded())
        return {std::nullopt, QCoreApplication::translate("Lesson", "%1 is not valid JSON.").arg(origin)};
    try {
        return {lessonFromJson(doc, origin), {}};
    } catch (const std::exception& e) {
        QString why = QString::fromUtf8(e.what());
        if (why.endsWith(QLatin1Char('.'))) why.chop(1);
        return {std::nullopt, QCoreApplication::translate("Lesson", "%1: %2.").arg(origin, why)};
    }
}

LessonLoad loadLesson(const QString& file)
{
    const QString origin = QCoreApplication::translate("Lesson", "lesson %1").arg(QFileInfo(file).fileName());
    QFile f(file);
    if (!f.open(QIODevice::ReadOnly))
        return {std::nullopt, QCoreApplication::translate("Lesson", "%1: cannot open the file.").arg(origin)};
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

}  // namespace plab::ui
