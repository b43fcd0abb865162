// The lesson panel: the open lesson's title and question, its runs with their state, a
// "Run lesson" button that runs them one after another (LessonRunner), and the
// explanation, hidden until the runs have finished and the teacher presses "Reveal".
#pragma once

#include "lessons/lesson.h"
#include "lessons/lesson_runner.h"

#include <QWidget>

#include <optional>

QT_BEGIN_NAMESPACE
class QLabel;
class QListWidget;
class QPushButton;
QT_END_NAMESPACE

namespace plab::ui {

class TrainingController;

class LessonPanel : public QWidget {
    Q_OBJECT
public:
    explicit LessonPanel(TrainingController* controller, QWidget* parent = nullptr);

    void setLesson(const Lesson& lesson);
    const std::optional<Lesson>& lesson() const { return lesson_; }
    void setDataDir(const QString& dir) { dataDir_ = dir; }

    void runLesson();
    void reveal();
    LessonRunner* runner() const { return runner_; }
    QPushButton* runButton() const { return run_; }
    QPushButton* revealButton() const { return reveal_; }
    bool explanationShown() const;

signals:
    void lessonChanged();

protected:
    void changeEvent(QEvent* event) override;

private:
    void refreshButtons();
    void fitRunsHeight();

    std::optional<Lesson> lesson_;
    QString dataDir_;
    LessonRunner* runner_;
    QLabel* title_;
    QLabel* question_;
    QListWidget* runs_;
    QPushButton* run_;
    QPushButton* stop_;
    QPushButton* reveal_;
    QLabel* explanation_;
    bool finishedOnce_ = false;
};

}  // namespace plab::ui
