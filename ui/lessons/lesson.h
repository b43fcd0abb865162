// Lessons in the app: the engine's lesson (engine/lesson, schema in docs/LESSONS.md) read
// through Qt's files, so the bundled lessons compiled into the executable (":/lessons/")
// load like files on disk. Loading validates everything up front and reports the first
// problem as one sentence naming the file and the key.
#pragma once

#include "lesson/lesson.h"

#include <QString>
#include <QStringList>

#include <optional>

namespace plab::ui {

using plab::Lesson;
using plab::LessonRun;

struct LessonLoad {
    std::optional<Lesson> lesson;
    QString error;           // one sentence when lesson is empty
};

// Parses lesson JSON text; `origin` names it in errors ("lesson 01-underflow.json").
LessonLoad parseLesson(const QByteArray& json, const QString& origin);
// Reads a file (a path or a ":/lessons/..." resource).
LessonLoad loadLesson(const QString& file);

// The bundled lessons: the files in the resource folder ":/lessons" when the executable
// carries them, else in the installed share/precision-lab/lessons folder next to it.
QStringList bundledLessonFiles();

// The lesson's chart groups as the app names them.
QStringList lessonCharts(const Lesson& lesson);

}  // namespace plab::ui
