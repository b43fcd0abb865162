// Lessons in the app: the engine's lesson (engine/lesson, schema in docs/LESSONS.md) read
// through Qt's files, so the bundled lessons compiled into the executable (":/lessons/")
// load like files on disk. Loading validates everything up front and reports the first
// problem as one sentence naming the file and the key.
#pragma once

#include "lesson/lesson.h"
#include "run_data.h"

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

// What the window shows, for File > Save Lesson.
struct ViewOnScreen {
    QList<RunPtr> runs;            // the watched run first, then the overlaid runs
    QStringList charts;            // the chart groups shown, in the app's order
    QString histogramLayer;        // empty: none chosen
    QString histogramKind;         // "weight_grad", ...
    std::int64_t histogramStep = 0;   // the histogram step shown; 0: the last
    QString underflowKind;
};

// A lesson that opens on this view. When every run shown is one of the open lesson's runs
// (lessonRunIds: the store ids of its runs, in the lesson's order) the lesson is kept
// whole (runs, expectations, prediction) with the view replaced. Otherwise a new lesson
// of the runs shown, each with the settings it started with (a run changed mid-way is
// saved as it started; `changed` lists those runs). Title, question and explanation are
// the given texts. No path of this machine is saved: outputs (save_weights,
// write_batches) are left out, and an input a run read (init_weights, read_batches) is
// named as a file beside the lesson, "<lessonStem>-<run id>.init.safetensors" or
// ".batches.txt", listed in `copies` for the caller to copy there. The result is checked
// by parsing it back; `error` names the problem.
struct InputCopy {
    QString source;   // the file the run read
    QString name;     // its name beside the saved lesson
};
struct SavedLesson {
    std::optional<Lesson> lesson;
    QStringList changed;
    QList<InputCopy> copies;
    QString error;
};
SavedLesson lessonFromView(const std::optional<Lesson>& open, const QStringList& lessonRunIds, const ViewOnScreen& view,
                           const QString& title, const QString& question, const QString& explanation,
                           const QString& lessonStem = QStringLiteral("lesson"));

}  // namespace plab::ui
