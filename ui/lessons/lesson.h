// A lesson for the classroom: a JSON file (resources/lessons/*.json, schema in
// docs/LESSONS.md) with a title, a question, one or more runs (a name and flat settings,
// the same keys as `plab train --config`), the chart groups to show and an explanation
// revealed after the runs. Loading validates everything up front and reports the first
// problem as one sentence naming the file.
#pragma once

#include "train/settings.h"

#include <QString>
#include <QStringList>
#include <QVector>

#include <cstdint>
#include <optional>

namespace plab::ui {

struct LessonRun {
    QString name;
    TrainSettings settings;
};

struct Lesson {
    QString title;
    QString question;
    QVector<LessonRun> runs;
    QStringList charts;      // ChartsView group names
    QString explanation;
    QString origin;          // the file it came from

    // Optimizer steps of all runs together (epochs of `trainingImages` capped by max_steps,
    // as the trainer plans them; max_steps alone when the set's size is not given), for the
    // time estimate.
    std::int64_t plannedSteps(std::int64_t trainingImages = 0) const;
};

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

}  // namespace plab::ui
