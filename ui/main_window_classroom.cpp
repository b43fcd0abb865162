// The main window's classroom parts: the format explorer and lesson docks, the Lessons
// menu, presentation mode, the configuration copied / pasted as one line of JSON, and
// File > Export (see main_window.h).
#include "main_window.h"

#include "files/input_file.h"
#include "json/json_input.h"
#include "record/record_writer.h"

#include "charts/charts_view.h"
#include "charts/histogram_chart.h"
#include "charts/underflow_chart.h"
#include "explorer/format_explorer.h"
#include "charts/loss_chart.h"
#include "export/run_export.h"
#include "lessons/lesson_panel.h"
#include "lessons/presentation_mode.h"
#include "run_list_model.h"
#include "run_store.h"
#include "settings_panel.h"
#include "training_controller.h"

#include <QApplication>
#include <QCheckBox>
#include <QClipboard>
#include <QDialog>
#include <QHBoxLayout>
#include <QDialogButtonBox>
#include <QDir>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QFormLayout>
#include <QLineEdit>
#include <QMenu>
#include <QPlainTextEdit>
#include <QProgressDialog>
#include <QPushButton>
#include <QRegularExpression>
#include <QScrollArea>
#include <QScrollBar>
#include <QStatusBar>
#include <QTableView>
#include <QTimer>
#include <nlohmann/json.hpp>

namespace plab::ui {

namespace {

// The explorer's scroll area asks for the explorer's width plus the vertical scroll bar:
// the explorer wraps its bits and texts, so its minimum is narrow, and a dock never made
// narrower than that never scrolls sideways.
class ExplorerScrollArea : public QScrollArea {
public:
    QSize minimumSizeHint() const override
    {
        const QSize own = QScrollArea::minimumSizeHint();
        return widget() ? QSize(besides() + widget()->minimumSizeHint().width(), own.height()) : own;
    }
    QSize sizeHint() const override
    {
        const QSize own = QScrollArea::sizeHint();
        return widget() ? QSize(besides() + widget()->sizeHint().width(), own.height()) : own;
    }

private:
    int besides() const { return 2 * frameWidth() + verticalScrollBar()->sizeHint().width(); }
};

}  // namespace

void MainWindow::buildClassroomDocks()
{
    explorer_ = new FormatExplorer;
    auto* explorerScroll = new ExplorerScrollArea;
    explorerScroll->setWidget(explorer_);
    explorerScroll->setWidgetResizable(true);
    explorerScroll->setFrameShape(QFrame::NoFrame);
    auto* explorerDock = new QDockWidget(tr("Format Explorer"), this);
    explorerDock->setObjectName(QStringLiteral("explorerDock"));
    explorerDock->setWidget(explorerScroll);
    addDockWidget(Qt::RightDockWidgetArea, explorerDock);
    explorerDock->hide();
    connect(charts_, &ChartsView::histogramBinPicked, this,
            [this, explorerDock](const QString& layer, const QString& kind, int exponent) {
                explorerDock->show();
                explorerDock->raise();
                explorer_->showHistogramBin(layer, kind, exponent);
            });

    lessonPanel_ = new LessonPanel(controller_);
    lessonPanel_->setDataDir(dataDir_);
    auto* lessonDock = new QDockWidget(tr("Lesson"), this);
    lessonDock->setObjectName(QStringLiteral("lessonDock"));
    lessonDock->setWidget(lessonPanel_);
    addDockWidget(Qt::RightDockWidgetArea, lessonDock);
    lessonDock->hide();
    // In presentation mode the explorer opens beside the lesson panel, not under it: stacked,
    // the explorer got a strip too low to show one format's row.
    connect(explorerDock, &QDockWidget::visibilityChanged, this, [this, explorerDock, lessonDock](bool visible) {
        if (!visible || !presentationMode() || !lessonDock->isVisible() || explorerDock->isFloating()) return;
        if (dockWidgetArea(explorerDock) == dockWidgetArea(lessonDock) &&
            explorerDock->geometry().left() == lessonDock->geometry().left()) {
            splitDockWidget(lessonDock, explorerDock, Qt::Horizontal);
            const int each = width() / 4;
            resizeDocks({lessonDock, explorerDock}, {each, each}, Qt::Horizontal);
        }
    });
    connect(lessonPanel_, &LessonPanel::lessonChanged, this, [this, lessonDock] {
        enterLessonView();
        lessonDock->show();
        showLessonCharts();
    });
    connect(lessonPanel_->runner(), &LessonRunner::finished, this, [this] { endLessonRuns(); });
    // The dock's close button leaves the lesson.
    lessonDock->installEventFilter(this);
    connect(lessonPanel_, &LessonPanel::lessonFinished, this, [this] {
        applyLessonView();
        statusBar()->showMessage(tr("Lesson finished: %1 of %2 claims held; press Reveal for the explanation")
                                     .arg(lessonPanel_->claimsHeld())
                                     .arg(lessonPanel_->results().size()));
    });
    presentation_ = new PresentationMode(this, charts_);
}

void MainWindow::buildLessonsMenu(QMenu* menu)
{
    menu->setObjectName(QStringLiteral("lessonsMenu"));
    for (const QString& file : bundledLessonFiles()) {
        const LessonLoad load = loadLesson(file);
        QAction* a = menu->addAction(load.lesson ? QString::fromStdString(load.lesson->title) : QFileInfo(file).fileName());
        connect(a, &QAction::triggered, this, [this, file] { openLesson(file); });
    }
    if (menu->isEmpty()) menu->addAction(tr("(no lessons installed)"))->setEnabled(false);
}

QString MainWindow::openLesson(const QString& file)
{
    const LessonLoad load = loadLesson(file);
    if (!load.lesson) {
        showError(load.error);
        return load.error;
    }
    lessonPanel_->setLesson(*load.lesson);
    statusBar()->showMessage(tr("Lesson: %1").arg(QString::fromStdString(load.lesson->title)), 8000);
    return {};
}

void MainWindow::enterLessonView()
{
    if (!beforeLesson_) {   // a second lesson opened over one keeps the first's "before"
        ViewBeforeLesson before;
        for (const RunPtr& run : model_->comparedRuns()) before.compared << run->id();
        before.watched = watchedId_;
        for (const QString& name : ChartsView::groupNames())
            if (charts_->group(name)->isHidden()) before.hiddenCharts << name;
        beforeLesson_ = before;
    }
    for (const RunPtr& run : model_->comparedRuns()) model_->setCompared(run->id(), false);
    watchRun(QString());
}

void MainWindow::onLessonRunStarted(const QString& runId, const TrainSettings& settings)
{
    if (!beforeLesson_ || !lessonPanel_->runner()->ownsRun(runId)) return;
    if (!beforeLesson_->panel) beforeLesson_->panel = panel_->settings();
    panel_->setSettings(settings);
    panel_->setEnabled(false);
    panel_->setToolTip(tr("The lesson's run: its settings, shown read-only until the lesson's runs end"));
}

void MainWindow::endLessonRuns()
{
    if (!beforeLesson_ || !beforeLesson_->panel) return;
    panel_->setSettings(*beforeLesson_->panel);
    beforeLesson_->panel.reset();
    panel_->setEnabled(true);
    panel_->setToolTip(QString());
}

bool MainWindow::eventFilter(QObject* watched, QEvent* event)
{
    // The lesson dock's close button leaves the lesson, once the dock has closed.
    if (event->type() == QEvent::Close && watched->objectName() == QLatin1String("lessonDock") && lessonPanel_->lesson())
        QTimer::singleShot(0, this, [this] { closeLesson(); });
    return QMainWindow::eventFilter(watched, event);
}

void MainWindow::closeLesson()
{
    if (presentationMode()) setPresentationMode(false);
    lessonPanel_->clearLesson();
    if (auto* dock = findChild<QDockWidget*>(QStringLiteral("lessonDock"))) dock->hide();
    if (!beforeLesson_) return;
    endLessonRuns();
    const ViewBeforeLesson before = *beforeLesson_;
    beforeLesson_.reset();
    for (const RunPtr& run : model_->comparedRuns()) model_->setCompared(run->id(), false);
    for (const QString& id : before.compared)
        if (store_->run(id)) model_->setCompared(id, true);
    watchRun(store_->run(before.watched) ? before.watched : QString());
    // The chart groups the person had (the lesson showed only its own).
    for (const QString& name : ChartsView::groupNames()) charts_->group(name)->setVisible(!before.hiddenCharts.contains(name));
}

void MainWindow::applyLessonView()
{
    if (!lessonPanel_->lesson()) return;
    const Lesson& lesson = *lessonPanel_->lesson();
    const QStringList ids = lessonPanel_->runner()->runIds();
    if (ids.size() != static_cast<qsizetype>(lesson.runs.size())) return;
    const QString watched = ids[lesson.watchedRun()];
    for (const RunPtr& run : model_->comparedRuns())   // only the lesson's runs
        if (!ids.contains(run->id())) model_->setCompared(run->id(), false);
    for (std::size_t i = 0; i < lesson.runs.size(); ++i) {
        const bool overlaid = lesson.view.overlayAll ||
                              std::find(lesson.view.overlay.begin(), lesson.view.overlay.end(), lesson.runs[i].id) !=
                                  lesson.view.overlay.end();
        model_->setCompared(ids[static_cast<qsizetype>(i)], overlaid || ids[static_cast<qsizetype>(i)] == watched);
    }
    watchRun(watched);
    if (const auto& h = lesson.view.histogram) {
        auto* chart = qobject_cast<HistogramChart*>(charts_->group(QStringLiteral("histogram")));
        const RunPtr run = store_->run(watched);
        if (chart && run) {
            charts_->redrawNow();   // fills the layer list from the watched run
            chart->setSelection(QString::fromStdString(h->layer), *parseTensorKind(h->kind));
            const auto& telemetry = run->telemetry();
            int index = static_cast<int>(telemetry.size()) - 1;
            for (std::size_t t = 0; t < telemetry.size(); ++t)
                if (h->step > 0 && telemetry[t].step == h->step) index = static_cast<int>(t);
            if (index >= 0) chart->setHistogramIndex(index);
        }
    }
    if (!lesson.view.underflowKind.empty())
        if (auto* chart = qobject_cast<UnderflowChart*>(charts_->group(QStringLiteral("underflow"))))
            chart->setKind(*parseTensorKind(lesson.view.underflowKind));
    charts_->redrawNow();
}

QString MainWindow::saveLesson(const QString& file, const QString& title, const QString& question, const QString& explanation)
{
    ViewOnScreen view;
    if (const RunPtr watched = store_->run(watchedId_)) view.runs << watched;
    for (const RunPtr& run : model_->comparedRuns())
        if (!view.runs.contains(run)) view.runs << run;
    for (const QString& name : ChartsView::groupNames())
        if (!charts_->group(name)->isHidden()) view.charts << name;
    if (auto* h = qobject_cast<HistogramChart*>(charts_->group(QStringLiteral("histogram"))); h && !h->layer().isEmpty()) {
        view.histogramLayer = h->layer();
        view.histogramKind = QString::fromUtf8(tensorKindName(h->kind()));
        view.histogramStep = h->shownStep();
    }
    if (auto* u = qobject_cast<UnderflowChart*>(charts_->group(QStringLiteral("underflow"))))
        view.underflowKind = QString::fromUtf8(tensorKindName(u->kind()));
    const QFileInfo target(file);
    const SavedLesson saved = lessonFromView(lessonPanel_->lesson(), lessonPanel_->runner()->runIds(), view, title, question,
                                             explanation, target.completeBaseName());
    QString error = saved.error;
    if (saved.lesson) {
        // Whole or not at all: a temporary file, checked, on the disk, renamed over the target.
        try {
            // The inputs the runs read go beside the lesson, so that it opens anywhere.
            for (const InputCopy& copy : saved.copies) {
                const QString to = target.absoluteDir().filePath(copy.name);
                if (QFileInfo(copy.source).canonicalFilePath() == QFileInfo(to).canonicalFilePath()) continue;
                writeFileAtomically(to.toStdString(), readRegularFile(copy.source.toStdString(),
                                                                      "the file " + copy.source.toStdString() + " a run read",
                                                                      std::uint64_t{4} << 30));
            }
            writeFileAtomically(file.toStdString(), lessonToJson(*saved.lesson).dump(2) + "\n");
        } catch (const std::exception& e) {
            error = tr("Could not save the lesson to %1: %2.").arg(file, QString::fromStdString(e.what()));
        }
    }
    if (!error.isEmpty()) {
        showError(error);
        return error;
    }
    QString message = tr("Saved the lesson to %1").arg(QFileInfo(file).fileName());
    if (!saved.changed.isEmpty())
        message += tr(" (%1 saved with the settings they started with; their changes during the run are not part of a lesson)")
                       .arg(saved.changed.join(QStringLiteral(", ")));
    statusBar()->showMessage(message, 12000);
    return {};
}

void MainWindow::showSaveLessonDialog()
{
    const auto& open = lessonPanel_->lesson();
    QDialog dialog(this);
    dialog.setWindowTitle(tr("Save Lesson"));
    auto* title = new QLineEdit(open ? QString::fromStdString(open->title) : QString(), &dialog);
    auto* question = new QLineEdit(open ? QString::fromStdString(open->question) : QString(), &dialog);
    auto* explanation = new QPlainTextEdit(open ? QString::fromStdString(open->explanation) : QString(), &dialog);
    title->setPlaceholderText(tr("what the lesson is about"));
    question->setPlaceholderText(tr("the question the runs answer"));
    explanation->setPlaceholderText(tr("what the runs show, revealed after they finish"));
    auto* form = new QFormLayout(&dialog);
    form->addRow(new QLabel(tr("The runs shown (watched first, then overlaid), the charts and their selections "
                               "are saved with these texts."), &dialog));
    form->addRow(tr("&Title:"), title);
    form->addRow(tr("&Question:"), question);
    form->addRow(tr("&Explanation:"), explanation);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Save | QDialogButtonBox::Cancel, &dialog);
    form->addRow(buttons);
    connect(buttons, &QDialogButtonBox::accepted, &dialog, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, &dialog, &QDialog::reject);
    auto refresh = [&] {
        buttons->button(QDialogButtonBox::Save)->setEnabled(!title->text().trimmed().isEmpty() && !question->text().trimmed().isEmpty() &&
                                                            !explanation->toPlainText().trimmed().isEmpty());
    };
    connect(title, &QLineEdit::textChanged, &dialog, refresh);
    connect(question, &QLineEdit::textChanged, &dialog, refresh);
    connect(explanation, &QPlainTextEdit::textChanged, &dialog, refresh);
    refresh();
    if (dialog.exec() != QDialog::Accepted) return;
    const QString file = QFileDialog::getSaveFileName(this, tr("Save Lesson"), QStringLiteral("lesson.json"), tr("Lessons (*.json)"));
    if (!file.isEmpty()) saveLesson(file, title->text(), question->text(), explanation->toPlainText());
}

void MainWindow::showLessonCharts()
{
    const QStringList charts = lessonPanel_->lesson() ? lessonCharts(*lessonPanel_->lesson()) : QStringList();
    for (const QString& name : ChartsView::groupNames())
        charts_->group(name)->setVisible(charts.isEmpty() || charts.contains(name));
}

void MainWindow::setPresentationMode(bool on)
{
    if (on == presentation_->isActive()) return;
    if (on) {
        QList<QDockWidget*> keep;
        if (lessonPanel_->lesson()) keep << findChild<QDockWidget*>(QStringLiteral("lessonDock"));
        presentation_->enter(lessonPanel_->lesson() ? lessonCharts(*lessonPanel_->lesson()) : QStringList(), keep);
    } else {
        presentation_->leave();
    }
    const QSignalBlocker block(presentationAction_);
    presentationAction_->setChecked(on);
}

bool MainWindow::presentationMode() const { return presentation_->isActive(); }

QString MainWindow::copyConfiguration()
{
    if (!panel_->isValid()) {
        showError(panel_->problem());
        return {};
    }
    const QString line = QString::fromStdString(settingsToJson(panel_->settings()).dump());
    QApplication::clipboard()->setText(line);
    statusBar()->showMessage(tr("Copied the configuration as one line of JSON"), 8000);
    return line;
}

QString MainWindow::pasteConfiguration()
{
    const std::string text = QApplication::clipboard()->text().trimmed().toStdString();
    nlohmann::json patch = nlohmann::json::value_t::discarded;
    try {
        patch = parseJsonInput(text, "the clipboard", JsonLimits{std::size_t{1} << 20, 64});
    } catch (const std::exception&) {
        // Not JSON, too large or too deep: said below as "does not hold a configuration".
    }
    QString error;
    if (text.empty())
        error = tr("The clipboard holds no configuration: copy one with Edit > Copy Configuration first.");
    else if (patch.is_discarded() || !patch.is_object())
        error = tr("The clipboard does not hold a configuration: expected one JSON object like {\"recipe\": \"amp-fp16\"}.");
    else
        try {
            panel_->setSettings(settingsFromJson(patch, "pasted configuration"));
        } catch (const std::exception& e) {
            error = QString::fromStdString(e.what());
        }
    if (!error.isEmpty()) {
        showError(error);
        return error;
    }
    statusBar()->showMessage(tr("Applied the pasted configuration"), 8000);
    return {};
}

QStringList MainWindow::exportableRecords() const
{
    QList<RunPtr> runs = model_->comparedRuns();
    if (runs.isEmpty())
        if (const RunPtr selected = model_->runAt(runList_->currentIndex().row())) runs << selected;
    QStringList files;
    for (const RunPtr& run : runs)
        if (!run->recordPath().isEmpty() && !run->isLive()) files << run->recordPath();
    return files;
}

QString MainWindow::exportRuns(const ExportRequest& request)
{
    QProgressDialog progress(tr("Exporting…"), tr("Cancel"), 0, 1, this);
    progress.setWindowModality(Qt::WindowModal);
    progress.setMinimumDuration(300);
    const ExportResult result = plab::ui::exportRuns(request, [&](int done, int total, const QString& what) {
        progress.setMaximum(total);
        progress.setValue(done);
        progress.setLabelText(what);
        QCoreApplication::processEvents();
        return !progress.wasCanceled();
    });
    if (!result.error.isEmpty()) {
        showError(result.error);
        return result.error;
    }
    statusBar()->showMessage(tr("Exported %1 files to %2").arg(result.files.size()).arg(request.folder), 10000);
    return {};
}

void MainWindow::showExportDialog()
{
    ExportRequest request;
    request.recordFiles = exportableRecords();
    if (request.recordFiles.isEmpty()) {
        showError(tr("Nothing to export: select or check at least one finished run."));
        return;
    }
    QDialog dialog(this);
    dialog.setWindowTitle(tr("Export %n run(s)", nullptr, int(request.recordFiles.size())));
    auto* form = new QFormLayout(&dialog);
    auto* folder = new QLineEdit(QDir::home().filePath(QStringLiteral("precision-lab-export")), &dialog);
    auto* title = new QLineEdit(lessonPanel_->lesson() ? QString::fromStdString(lessonPanel_->lesson()->title) : QString(), &dialog);
    QCheckBox* boxes[5] = {new QCheckBox(tr("PDF report")), new QCheckBox(tr("HTML report")),
                           new QCheckBox(tr("CSV tables")), new QCheckBox(tr("JSON run records")),
                           new QCheckBox(tr("TensorBoard event files"))};
    boxes[4]->setObjectName(QStringLiteral("exportTensorBoard"));
    boxes[4]->setToolTip(tr("One folder per run under tensorboard/: open it with tensorboard --logdir, "
                            "or upload it with wandb sync"));
    dialog.setObjectName(QStringLiteral("exportDialog"));
    folder->setObjectName(QStringLiteral("exportFolder"));
    title->setObjectName(QStringLiteral("exportTitle"));
    // Wide enough for the whole path and title (they had been cut), with Browse for the folder.
    const int wide = std::max(420, folder->fontMetrics().horizontalAdvance(folder->text() + QStringLiteral("MMMM")));
    folder->setMinimumWidth(wide);
    title->setMinimumWidth(std::max(wide, title->fontMetrics().horizontalAdvance(title->text() + QStringLiteral("MMMM"))));
    auto* browse = new QPushButton(tr("Browse…"), &dialog);
    browse->setObjectName(QStringLiteral("exportBrowse"));
    browse->setToolTip(tr("Choose the folder the reports and files go to"));
    connect(browse, &QPushButton::clicked, &dialog, [&dialog, folder] {
        const QString chosen = QFileDialog::getExistingDirectory(&dialog, tr("Export Folder"), folder->text());
        if (!chosen.isEmpty()) folder->setText(chosen);
    });
    auto* folderRow = new QHBoxLayout;
    folderRow->addWidget(folder, 1);
    folderRow->addWidget(browse);
    form->addRow(tr("Folder:"), folderRow);
    form->addRow(tr("Title:"), title);
    for (QCheckBox* b : boxes) {
        b->setChecked(b != boxes[4]);
        form->addRow(b);
    }
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, &dialog);
    connect(buttons, &QDialogButtonBox::accepted, &dialog, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, &dialog, &QDialog::reject);
    form->addRow(buttons);
    if (dialog.exec() != QDialog::Accepted) return;
    request.folder = folder->text();
    request.title = title->text();
    request.pdf = boxes[0]->isChecked();
    request.html = boxes[1]->isChecked();
    request.csv = boxes[2]->isChecked();
    request.json = boxes[3]->isChecked();
    request.tensorboard = boxes[4]->isChecked();
    if (auto* loss = qobject_cast<LossChart*>(charts_->group(QStringLiteral("loss")))) request.smoothing = loss->smoothing();
    exportRuns(request);
}

QString MainWindow::exportSelectedWeights(const QString& target)
{
    if (target.isEmpty()) return tr("No file was chosen.");
    const RunPtr run = model_->runAt(runList_->currentIndex().row());
    QString why = tr("Select a run whose weights to export.");
    const QString source = run ? runWeightsFile(run->settings(), run->isLive(), &why) : QString();
    if (source.isEmpty()) {
        showError(why);
        return why;
    }
    if (const QString error = exportWeights(source, target); !error.isEmpty()) {
        showError(error);
        return error;
    }
    statusBar()->showMessage(tr("Wrote the weights of “%1” to %2").arg(run->name(), target), 10000);
    return {};
}

void MainWindow::showExportWeightsDialog()
{
    const RunPtr run = model_->runAt(runList_->currentIndex().row());
    if (!run) return;
    QString why;
    if (runWeightsFile(run->settings(), run->isLive(), &why).isEmpty()) {
        showError(why);
        return;
    }
    QString name = run->name();
    name.replace(QRegularExpression(QStringLiteral("[^A-Za-z0-9._-]+")), QStringLiteral("-"));
    const QString target = QFileDialog::getSaveFileName(
        this, tr("Export Weights"), QDir::home().filePath(name + QStringLiteral(".safetensors")),
        tr("safetensors weights (*.safetensors)"));
    if (!target.isEmpty()) exportSelectedWeights(target);
}

}  // namespace plab::ui
