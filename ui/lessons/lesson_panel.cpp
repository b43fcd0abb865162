// The lesson panel (see lesson_panel.h).
#include "lessons/lesson_panel.h"

#include <QEvent>
#include <QHBoxLayout>
#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <QVBoxLayout>

namespace plab::ui {

LessonPanel::LessonPanel(TrainingController* controller, QWidget* parent)
    : QWidget(parent), runner_(new LessonRunner(controller, this))
{
    setObjectName(QStringLiteral("lessonPanel"));
    auto* layout = new QVBoxLayout(this);
    title_ = new QLabel(tr("No lesson open: File > Open Lesson… or the Lessons menu."), this);
    title_->setObjectName(QStringLiteral("lessonTitle"));
    title_->setWordWrap(true);
    QFont big = title_->font();
    big.setPointSizeF(big.pointSizeF() * 1.3);
    big.setBold(true);
    title_->setFont(big);
    question_ = new QLabel(this);
    question_->setObjectName(QStringLiteral("lessonQuestion"));
    question_->setWordWrap(true);
    runs_ = new QListWidget(this);
    runs_->setObjectName(QStringLiteral("lessonRuns"));
    // Long run names wrap instead of scrolling sideways (the dock is narrow in presentation mode).
    runs_->setWordWrap(true);
    runs_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    runs_->setResizeMode(QListView::Adjust);
    fitRunsHeight();
    auto* buttons = new QHBoxLayout;
    run_ = new QPushButton(tr("Run lesson"), this);
    run_->setObjectName(QStringLiteral("runLessonButton"));
    stop_ = new QPushButton(tr("Stop"), this);
    reveal_ = new QPushButton(tr("Reveal"), this);
    reveal_->setObjectName(QStringLiteral("revealButton"));
    reveal_->setToolTip(tr("Show the explanation (after the runs have finished)"));
    buttons->addWidget(run_);
    buttons->addWidget(stop_);
    buttons->addWidget(reveal_);
    buttons->addStretch(1);
    explanation_ = new QLabel(this);
    explanation_->setObjectName(QStringLiteral("lessonExplanation"));
    explanation_->setWordWrap(true);
    explanation_->hide();
    layout->addWidget(title_);
    layout->addWidget(question_);
    layout->addWidget(runs_);
    layout->addLayout(buttons);
    layout->addWidget(explanation_);
    layout->addStretch(1);

    connect(run_, &QPushButton::clicked, this, &LessonPanel::runLesson);
    connect(stop_, &QPushButton::clicked, runner_, &LessonRunner::stop);
    connect(reveal_, &QPushButton::clicked, this, &LessonPanel::reveal);
    connect(runner_, &LessonRunner::runStarted, this, [this](int index, const QString&) {
        if (QListWidgetItem* item = runs_->item(index)) item->setText(tr("▶ %1 (training)").arg(lesson_->runs[index].name));
        refreshButtons();
    });
    connect(runner_, &LessonRunner::runFinished, this, [this](int index, const QString&, const RunResult& result) {
        if (QListWidgetItem* item = runs_->item(index))
            item->setText(tr("✓ %1 (%2)").arg(lesson_->runs[index].name,
                                               QString::fromLatin1(runStatusName(result.status).data())));
    });
    connect(runner_, &LessonRunner::finished, this, [this](bool stopped) {
        finishedOnce_ = finishedOnce_ || !stopped;
        refreshButtons();
    });
    refreshButtons();
}

void LessonPanel::setLesson(const Lesson& lesson)
{
    runner_->stop();
    lesson_ = lesson;
    finishedOnce_ = false;
    title_->setText(lesson.title);
    question_->setText(tr("<b>Question:</b> %1").arg(lesson.question));
    runs_->clear();
    for (const LessonRun& r : lesson.runs) runs_->addItem(tr("○ %1").arg(r.name));
    explanation_->setText(tr("<b>Why:</b> %1").arg(lesson.explanation));
    explanation_->hide();
    refreshButtons();
    emit lessonChanged();
}

void LessonPanel::runLesson()
{
    if (!lesson_) return;
    finishedOnce_ = false;
    explanation_->hide();
    for (int i = 0; i < runs_->count(); ++i) runs_->item(i)->setText(tr("○ %1").arg(lesson_->runs[i].name));
    runner_->start(*lesson_, dataDir_);
    refreshButtons();
}

void LessonPanel::reveal()
{
    if (!lesson_ || !finishedOnce_) return;
    explanation_->show();
}

void LessonPanel::changeEvent(QEvent* event)
{
    if (event->type() == QEvent::FontChange) fitRunsHeight();   // presentation mode's larger font
    QWidget::changeEvent(event);
}

void LessonPanel::fitRunsHeight()
{
    // Room for about three runs of two lines each at the current font, then it scrolls.
    runs_->setMaximumHeight(runs_->fontMetrics().lineSpacing() * 7 + 2 * runs_->frameWidth());
}

bool LessonPanel::explanationShown() const { return !explanation_->isHidden(); }

void LessonPanel::refreshButtons()
{
    run_->setEnabled(lesson_.has_value() && !runner_->isRunning());
    stop_->setEnabled(runner_->isRunning());
    reveal_->setEnabled(lesson_.has_value() && finishedOnce_ && !runner_->isRunning());
}

}  // namespace plab::ui
