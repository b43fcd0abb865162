// The lesson panel: the open lesson's title and question, an optional prediction asked
// before the runs ("predict first"), its runs with their state, a "Run lesson" button that
// runs them one after another (LessonRunner), and the explanation, hidden until the runs
// have finished and the teacher presses "Reveal". The explanation's numbers are filled
// from the runs just made, and each sentence says whether its claim held in those runs
// (judged by the engine's checkExpectations against the run records) or where its
// background comes from; a claim that did not hold is shown plainly.
#pragma once

#include "lesson/lesson_check.h"
#include "lessons/lesson_files.h"
#include "lessons/lesson_runner.h"

#include <QWidget>


#include <optional>
#include <vector>

QT_BEGIN_NAMESPACE
class QComboBox;
class QGroupBox;
class QLabel;
class QLineEdit;
class QListWidget;
class QPushButton;
class QScrollArea;
QT_END_NAMESPACE

namespace plab::ui {

class TrainingController;

class LessonPanel : public QWidget {
    Q_OBJECT
public:
    explicit LessonPanel(TrainingController* controller, QWidget* parent = nullptr);

    void setLesson(const Lesson& lesson);
    // No lesson open (the window left it): its runs stopped, the panel empty.
    void clearLesson();
    const std::optional<Lesson>& lesson() const { return lesson_; }
    void setDataDir(const QString& dir) { dataDir_ = dir; }

    void runLesson();
    void reveal();
    LessonRunner* runner() const { return runner_; }
    QPushButton* runButton() const { return run_; }
    QPushButton* stopButton() const { return stop_; }
    QPushButton* revealButton() const { return reveal_; }
    bool explanationShown() const;
    // The explanation as shown after Reveal (placeholders filled, claims marked), as text.
    QString explanationText() const;
    // The judged expectations of the last finished lesson (empty before).
    const std::vector<ExpectationResult>& results() const { return results_; }
    int claimsHeld() const;
    // The prediction given before the runs ("" when none was asked or given).
    QString prediction() const { return prediction_; }
    void setPredictionAnswer(const QString& text);   // as a student would enter or choose it
    // The file that keeps the last finished lesson with its runs: the lesson, the run
    // records, the prediction beside the measured answer and every claim judged, in
    // "lesson-sessions" under the runs' folder ("" before, or when it could not be written).
    QString sessionFile() const { return sessionFile_; }

signals:
    void lessonChanged();
    // Every run finished (not stopped) and the claims were judged: the window opens the
    // lesson's view.
    void lessonFinished();

protected:
    void changeEvent(QEvent* event) override;

private:
    void refreshButtons();
    void fitRunsHeight();
    void fitTitleFont();
    void showExplanationArea(bool on);
    void judge();                 // loads the runs' records and checks the expectations
    void showExplanation();       // fills the explanation label from results_
    void writeSession();          // the prediction and the judged claims beside the runs' records
    LessonRecords recordRefs() const;   // records_ as the engine's checks take them

    std::optional<Lesson> lesson_;
    QString dataDir_;
    QString sessionFile_;
    LessonRunner* runner_;
    QLabel* title_;
    QLabel* question_;
    QGroupBox* predictBox_;
    QLabel* predictPrompt_;
    QComboBox* predictChoices_;
    QLineEdit* predictNumber_;
    QListWidget* runs_;
    QPushButton* run_;
    QPushButton* stop_;
    QPushButton* reveal_;
    QLabel* verdict_;
    QLabel* explanation_;                 // inside explanationArea_
    QScrollArea* explanationArea_;
    bool finishedOnce_ = false;
    bool explanationOpen_ = false;
    QString prediction_;
    std::vector<std::optional<RunRecord>> records_;   // of the finished runs, in lesson order
    std::vector<ExpectationResult> results_;
};

}  // namespace plab::ui
