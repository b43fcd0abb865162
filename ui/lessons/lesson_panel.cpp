// The lesson panel (see lesson_panel.h).
#include "lessons/lesson_panel.h"

#include "lesson/lesson_session.h"
#include "lesson/lesson_text.h"
#include "record/run_record.h"

#include <QComboBox>
#include <QDateTime>
#include <QEvent>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QTextDocument>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>


namespace plab::ui {

namespace {

QString q(const std::string& s) { return QString::fromStdString(s); }

// Text from a lesson file may hold a word of any length: a zero-width space every 40
// characters of an unbroken run lets a wrapping label break it, so no text sizes the window.
QString breakable(const QString& text)
{
    QString out;
    out.reserve(text.size() + text.size() / 20);
    int run = 0;
    for (const QChar c : text) {
        run = c.isSpace() ? 0 : run + 1;
        if (run > 40) {
            out += QChar(0x200B);
            run = 1;
        }
        out += c;
    }
    return out;
}

}  // namespace

LessonPanel::LessonPanel(TrainingController* controller, QWidget* parent)
    : QWidget(parent), runner_(new LessonRunner(controller, this))
{
    setObjectName(QStringLiteral("lessonPanel"));
    auto* layout = new QVBoxLayout(this);
    title_ = new QLabel(tr("No lesson open: File > Open Lesson… or the Lessons menu."), this);
    title_->setObjectName(QStringLiteral("lessonTitle"));
    title_->setWordWrap(true);
    fitTitleFont();
    // A lesson may come from anyone: its texts are shown as plain text (escaped where they
    // go into rich text), so markup in them is never rendered and never loads a file.
    title_->setTextFormat(Qt::PlainText);
    question_ = new QLabel(this);
    question_->setObjectName(QStringLiteral("lessonQuestion"));
    question_->setWordWrap(true);

    predictBox_ = new QGroupBox(tr("Predict first"), this);
    predictBox_->setObjectName(QStringLiteral("lessonPredict"));
    predictPrompt_ = new QLabel(predictBox_);
    predictPrompt_->setWordWrap(true);
    predictPrompt_->setTextFormat(Qt::PlainText);
    predictChoices_ = new QComboBox(predictBox_);
    predictChoices_->setObjectName(QStringLiteral("lessonPredictChoices"));
    predictChoices_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);   // a long choice never widens the panel
    predictChoices_->setMinimumContentsLength(12);
    predictNumber_ = new QLineEdit(predictBox_);
    predictNumber_->setObjectName(QStringLiteral("lessonPredictNumber"));
    predictNumber_->setPlaceholderText(tr("your estimate"));
    auto* predictLayout = new QVBoxLayout(predictBox_);
    predictLayout->addWidget(predictPrompt_);
    predictLayout->addWidget(predictChoices_);
    predictLayout->addWidget(predictNumber_);
    predictBox_->hide();

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
    stop_->setObjectName(QStringLiteral("stopLessonButton"));
    reveal_ = new QPushButton(tr("Reveal"), this);
    reveal_->setObjectName(QStringLiteral("revealButton"));
    reveal_->setToolTip(tr("Show the explanation (after the runs have finished)"));
    buttons->addWidget(run_);
    buttons->addWidget(stop_);
    buttons->addWidget(reveal_);
    buttons->addStretch(1);
    // After Reveal: the verdict (the prediction against the measured answer, which claims
    // held) always in view under the buttons, the explanation's sentences below it in a
    // scrolling area that takes the rest of the panel (at presentation mode's large font
    // they are taller than the screen).
    verdict_ = new QLabel(this);
    verdict_->setObjectName(QStringLiteral("lessonVerdict"));
    verdict_->setWordWrap(true);
    verdict_->setTextFormat(Qt::RichText);
    explanation_ = new QLabel;
    explanation_->setObjectName(QStringLiteral("lessonExplanation"));
    explanation_->setWordWrap(true);
    explanation_->setTextFormat(Qt::RichText);
    explanation_->setAlignment(Qt::AlignLeft | Qt::AlignTop);
    // As wide as the area, never wider (a rich-text label's own minimum can be wider than a
    // narrow dock, and its lines were then cut at the right): wrapped to the width given.
    QSizePolicy wrapped(QSizePolicy::Ignored, QSizePolicy::Preferred);
    wrapped.setHeightForWidth(true);
    explanation_->setSizePolicy(wrapped);
    for (QLabel* label : {title_, question_, predictPrompt_, verdict_}) label->setSizePolicy(wrapped);
    explanationArea_ = new QScrollArea(this);
    explanationArea_->setObjectName(QStringLiteral("lessonExplanationArea"));
    explanationArea_->setWidget(explanation_);
    explanationArea_->setWidgetResizable(true);
    explanationArea_->setFrameShape(QFrame::NoFrame);
    explanationArea_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    layout->addWidget(title_);
    layout->addWidget(question_);
    layout->addWidget(predictBox_);
    layout->addWidget(runs_);
    layout->addLayout(buttons);
    layout->addWidget(verdict_);
    layout->addWidget(explanationArea_);
    layout->addStretch(1);   // keeps the rest at the top while the explanation is hidden
    showExplanationArea(false);

    connect(run_, &QPushButton::clicked, this, &LessonPanel::runLesson);
    connect(stop_, &QPushButton::clicked, runner_, &LessonRunner::stop);
    // Reveal shows the explanation; pressed again it hides it (and brings the prediction
    // back, for another try).
    connect(reveal_, &QPushButton::clicked, this, [this] { explanationShown() ? showExplanationArea(false) : reveal(); });
    connect(runner_, &LessonRunner::runStarted, this, [this](int index, const QString&) {
        if (QListWidgetItem* item = runs_->item(index))
            item->setText(tr("▶ %1 (training)").arg(breakable(q(lesson_->runs[static_cast<std::size_t>(index)].name))));
        refreshButtons();
    });
    connect(runner_, &LessonRunner::runFinished, this, [this](int index, const QString&, const RunResult& result) {
        if (QListWidgetItem* item = runs_->item(index))
            item->setText(tr("✓ %1 (%2)").arg(breakable(q(lesson_->runs[static_cast<std::size_t>(index)].name)),
                                               QString::fromLatin1(runStatusName(result.status).data())));
    });
    connect(runner_, &LessonRunner::finished, this, [this](bool stopped) {
        finishedOnce_ = finishedOnce_ || !stopped;
        predictChoices_->setEnabled(true);
        predictNumber_->setEnabled(true);
        if (!stopped) {
            judge();
            emit lessonFinished();
        }
        refreshButtons();
    });
    refreshButtons();
}

void LessonPanel::setLesson(const Lesson& lesson)
{
    runner_->stop();
    results_.clear();
    records_.clear();
    lesson_ = lesson;
    finishedOnce_ = false;
    prediction_.clear();
    title_->setText(breakable(q(lesson.title)));
    question_->setText(tr("<b>Question:</b> %1").arg(breakable(q(lesson.question)).toHtmlEscaped()));
    predictBox_->setVisible(lesson.predict.has_value());
    if (lesson.predict) {
        predictPrompt_->setText(breakable(q(lesson.predict->prompt)));
        predictChoices_->clear();
        predictChoices_->addItem(tr("(choose before running)"));
        for (const auto& c : lesson.predict->choices) predictChoices_->addItem(q(c));
        predictChoices_->setVisible(!lesson.predict->choices.empty());
        predictNumber_->clear();
        predictNumber_->setVisible(lesson.predict->choices.empty());
        predictNumber_->setPlaceholderText(lesson.predict->unit.empty() ? tr("your estimate")
                                                                        : tr("your estimate, in %1").arg(q(lesson.predict->unit)));
    }
    runs_->clear();
    for (const LessonRun& r : lesson.runs) runs_->addItem(tr("○ %1").arg(breakable(q(r.name))));
    verdict_->clear();
    explanation_->clear();
    showExplanationArea(false);
    refreshButtons();
    emit lessonChanged();
}

void LessonPanel::clearLesson()
{
    runner_->stop();
    lesson_.reset();
    results_.clear();
    records_.clear();
    finishedOnce_ = false;
    prediction_.clear();
    title_->clear();
    question_->clear();
    predictBox_->hide();
    runs_->clear();
    verdict_->clear();
    explanation_->clear();
    showExplanationArea(false);
    refreshButtons();
}

void LessonPanel::setPredictionAnswer(const QString& text)
{
    if (predictChoices_->isVisible() || (lesson_ && lesson_->predict && !lesson_->predict->choices.empty())) {
        const int i = predictChoices_->findText(text);
        if (i > 0) predictChoices_->setCurrentIndex(i);
    } else {
        predictNumber_->setText(text);
    }
}

void LessonPanel::runLesson()
{
    if (!lesson_) return;
    finishedOnce_ = false;
    results_.clear();
    records_.clear();
    showExplanationArea(false);
    prediction_.clear();
    if (lesson_->predict) {   // kept with this lesson's runs; the fields stay as given, locked while they train
        if (!lesson_->predict->choices.empty())
            prediction_ = predictChoices_->currentIndex() > 0 ? predictChoices_->currentText() : QString();
        else
            prediction_ = predictNumber_->text().trimmed();
        predictChoices_->setEnabled(false);
        predictNumber_->setEnabled(false);
    }
    for (int i = 0; i < runs_->count(); ++i)
        runs_->item(i)->setText(tr("○ %1").arg(breakable(q(lesson_->runs[static_cast<std::size_t>(i)].name))));
    runner_->start(*lesson_, dataDir_);
    refreshButtons();
}

void LessonPanel::judge()
{
    records_.assign(lesson_->runs.size(), std::nullopt);
    const QStringList paths = runner_->recordPaths();
    for (int i = 0; i < paths.size() && static_cast<std::size_t>(i) < records_.size(); ++i) {
        if (paths[i].isEmpty()) continue;
        try {
            records_[static_cast<std::size_t>(i)] = loadRunRecord(paths[i].toStdString());
        } catch (const std::exception&) {
            // Left null: its claims show as not measured, with the reason.
        }
    }
    const LessonRecords refs = recordRefs();
    results_ = checkExpectations(*lesson_, refs);
    showExplanation();
    writeSession();
}

LessonRecords LessonPanel::recordRefs() const
{
    LessonRecords refs;   // a run whose record could not be read stays null: its claims are "not measured"
    for (const auto& r : records_) refs.push_back(r ? &*r : nullptr);
    return refs;
}

void LessonPanel::writeSession()
{
    sessionFile_.clear();
    const QStringList paths = runner_->recordPaths();
    if (paths.isEmpty() || paths.front().isEmpty()) return;
    LessonSession session;
    session.lesson = &*lesson_;
    for (const QString& p : paths) session.records.emplace_back(p.toStdString());
    session.prediction = prediction_.toStdString();
    session.results = results_;
    session.finishedAt = QDateTime::currentDateTimeUtc().toString(Qt::ISODate).toStdString();
    try {
        sessionFile_ = QString::fromStdString(writeLessonSession(session, recordRefs()).string());
    } catch (const std::exception&) {
        // The lesson itself is judged and shown; only its session file is missing.
    }
}

void LessonPanel::showExplanation()
{
    if (!lesson_) return;
    const LessonRecords refs = recordRefs();
    const QString held = QStringLiteral("#1a7f37"), failed = QStringLiteral("#cf222e"), muted = QStringLiteral("#6e7781");
    QString verdict;
    if (lesson_->predict) {
        const QString measured = q(fillPlaceholders(lesson_->predict->answer, *lesson_, refs)).toHtmlEscaped();
        verdict += tr("<p><b>You predicted:</b> %1. <b>Measured:</b> %2.</p>")
                    .arg(prediction_.isEmpty() ? tr("(nothing)") : prediction_.toHtmlEscaped(), measured);
    }
    const int total = static_cast<int>(results_.size());
    const int ok = claimsHeld();
    if (total > 0) {
        // A claim's outcome belongs to the runs (their seed), not to the machine.
        QStringList seeds;
        for (const LessonRun& run : lesson_->runs)
            if (const QString s = QString::number(run.settings.seed); !seeds.contains(s)) seeds << s;
        const QString runs = seeds.size() == 1 ? tr("these runs (seed %1)").arg(seeds.front())
                                               : tr("these runs (seeds %1)").arg(seeds.join(QStringLiteral(", ")));
        verdict += ok == total ? tr("<p><span style='color:%1'>✓ All %2 measured claims held in %3.</span></p>").arg(held).arg(total).arg(runs)
                            : tr("<p><span style='color:%1'><b>✗ %2 of %3 measured claims did not hold in %4</b> "
                                 "(marked below).</span></p>").arg(failed).arg(total - ok).arg(total).arg(runs);
    }
    verdict_->setText(verdict);
    QString html = tr("<b>Why:</b> ");
    for (const std::string& sentence : explanationSentences(lesson_->explanation)) {
        html += q(fillPlaceholders(sentence, *lesson_, refs)).toHtmlEscaped();
        const std::string key = sentenceKey(sentence);
        QStringList notHeld;
        bool measured = false;
        for (const ExpectationResult& r : results_) {
            if (sentenceKey(r.expectation->backs) != key) continue;
            measured = true;
            if (r.state == ExpectationState::held) continue;
            notHeld << (r.state == ExpectationState::notMeasured
                            ? tr("not measured: %1").arg(q(r.why))
                            : tr("%1, measured %2").arg(q(describeExpectation(*r.expectation)), q(r.measured)));
        }
        if (!notHeld.isEmpty())
            html += QStringLiteral(" <span style='color:%1'><b>[✗ did not hold: %2]</b></span>").arg(failed, notHeld.join(QStringLiteral("; ")).toHtmlEscaped());
        else if (measured)
            html += QStringLiteral(" <span style='color:%1' title='%2'>[✓ measured]</span>").arg(held, tr("checked against this lesson's runs"));
        else
            for (const auto& b : lesson_->background)
                if (sentenceKey(b.sentence) == key) {
                    html += QStringLiteral(" <span style='color:%1'>[%2]</span>").arg(muted, tr("background: %1").arg(q(b.source)).toHtmlEscaped());
                    break;
                }
        html += QLatin1Char(' ');
    }
    // Background the explanation does not quote is shown too, with its source: a lesson's
    // references are never hidden (lesson 16's only one had been).
    QStringList unquoted;
    for (const auto& b : lesson_->background) {
        bool quoted = false;
        for (const std::string& sentence : explanationSentences(lesson_->explanation))
            quoted = quoted || sentenceKey(sentence) == sentenceKey(b.sentence);
        if (!quoted)
            unquoted << QStringLiteral("<li>%1 <span style='color:%2'>[%3]</span></li>")
                            .arg(breakable(q(b.sentence)).toHtmlEscaped(), muted,
                                 tr("source: %1").arg(q(b.source)).toHtmlEscaped());
    }
    if (!unquoted.isEmpty())
        html += tr("<p><b>Background:</b></p><ul>%1</ul>").arg(unquoted.join(QString()));
    explanation_->setText(html);
}

int LessonPanel::claimsHeld() const
{
    return static_cast<int>(std::count_if(results_.begin(), results_.end(),
                                          [](const ExpectationResult& r) { return r.state == ExpectationState::held; }));
}

void LessonPanel::reveal()
{
    if (!lesson_ || !finishedOnce_) return;
    if (explanation_->text().isEmpty()) showExplanation();
    showExplanationArea(true);
}

void LessonPanel::showExplanationArea(bool on)
{
    verdict_->setVisible(on && !verdict_->text().isEmpty());
    explanationArea_->setVisible(on);
    // While the explanation shows, the prediction is in the verdict ("You predicted ...,
    // measured ...") and the runs have finished: the box and most of the list give their
    // height to the explanation (at presentation sizes it had two lines otherwise).
    predictBox_->setVisible(!on && lesson_ && lesson_->predict);
    explanationOpen_ = on;
    fitRunsHeight();
    reveal_->setText(on ? tr("Hide") : tr("Reveal"));
    reveal_->setToolTip(on ? tr("Hide the explanation (and show the prediction again)")
                           : tr("Show the explanation (after the runs have finished)"));
    // The area takes the panel's spare height while shown; the stretch after it otherwise.
    auto* box = static_cast<QVBoxLayout*>(layout());
    box->setStretchFactor(explanationArea_, on ? 1 : 0);
    box->setStretch(box->count() - 1, on ? 0 : 1);
    if (on) explanationArea_->verticalScrollBar()->setValue(0);
}

QString LessonPanel::explanationText() const
{
    QTextDocument doc;
    doc.setHtml(verdict_->text() + explanation_->text());
    return doc.toPlainText();
}

void LessonPanel::changeEvent(QEvent* event)
{
    if (event->type() == QEvent::FontChange) {   // presentation mode's larger font
        fitTitleFont();
        fitRunsHeight();
    }
    QWidget::changeEvent(event);
}

void LessonPanel::fitTitleFont()
{
    // 1.3x the panel's font, whichever unit it is sized in; set on the title, so it is
    // derived again when the panel's font changes.
    QFont big = font();
    if (big.pixelSize() > 0) big.setPixelSize(static_cast<int>(std::lround(big.pixelSize() * 1.3)));
    else big.setPointSizeF(big.pointSizeF() * 1.3);
    big.setBold(true);
    title_->setFont(big);
}

void LessonPanel::fitRunsHeight()
{
    // Room for about three runs of two lines each at the current font, then it scrolls;
    // two lines while the explanation shows.
    runs_->setMaximumHeight(runs_->fontMetrics().lineSpacing() * (explanationOpen_ ? 2 : 7) + 2 * runs_->frameWidth());
}

bool LessonPanel::explanationShown() const { return !explanationArea_->isHidden(); }

void LessonPanel::refreshButtons()
{
    run_->setEnabled(lesson_.has_value() && !runner_->isRunning());
    stop_->setEnabled(runner_->isRunning());
    reveal_->setEnabled(lesson_.has_value() && finishedOnce_ && !runner_->isRunning());
}

}  // namespace plab::ui
