// The main window: docks, menus, shortcuts, status bar, and the wiring between the
// controller, the run store, the runs list, the settings panel and the charts. The
// classroom parts (format explorer, lessons, presentation mode, configuration as one
// line, export) are in main_window_classroom.cpp, opening and saving files in
// main_window_files.cpp.
#include "main_window.h"

#include "json/json_input.h"

#include "about_dialog.h"
#include "help_dialogs.h"
#include "app_theme.h"
#include "charts/charts_view.h"
#include "error.h"
#include "explorer/format_explorer.h"
#include "export/run_export.h"
#include "lessons/lesson_panel.h"
#include "record/record_writer.h"
#include "run_list_model.h"
#include "run_progress_widget.h"
#include "run_store.h"
#include "settings_panel.h"
#include "training_controller.h"

#include <QApplication>
#include <QCloseEvent>
#include <QDesktopServices>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLocale>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QScrollArea>
#include <QScrollBar>
#include <QSettings>
#include <QStatusBar>
#include <QTableView>
#include <QTime>
#include <QScreen>
#include <QTimer>
#include <QToolButton>
#include <QUrl>
#include <QVBoxLayout>

#include <algorithm>
#include <fstream>

#include <nlohmann/json.hpp>

namespace plab::ui {

MainWindow::MainWindow(const MainWindowOptions& options, QWidget* parent)
    : QMainWindow(parent), dataDir_(options.dataDir)
{
    setWindowTitle(tr("Precision Lab"));
    setObjectName(QStringLiteral("mainWindow"));
    settings_ = options.settingsFile.isEmpty() ? std::make_unique<QSettings>()
                                               : std::make_unique<QSettings>(options.settingsFile, QSettings::IniFormat);

    const QString runsDir = options.runsDir.isEmpty() ? RunStore::defaultRunsDir() : options.runsDir;
    controller_ = new TrainingController(runsDir, this);
    store_ = new RunStore(runsDir, this);
    store_->trackController(controller_);
    model_ = new RunListModel(store_, this);
    panel_ = new SettingsPanel;
    panel_->setOutputFolder(store_->runsDir());
    charts_ = new ChartsView;

    // Centre: the error banner above the charts.
    auto* centre = new QWidget(this);
    auto* centreLayout = new QVBoxLayout(centre);
    centreLayout->setContentsMargins(0, 0, 0, 0);
    banner_ = new QFrame(centre);
    banner_->setObjectName(QStringLiteral("errorBanner"));
    static_cast<QFrame*>(banner_)->setFrameShape(QFrame::StyledPanel);
    banner_->setBackgroundRole(QPalette::AlternateBase);
    banner_->setAutoFillBackground(true);
    auto* bannerLayout = new QHBoxLayout(banner_);
    bannerLabel_ = new QLabel(banner_);
    bannerLabel_->setWordWrap(true);
    bannerLabel_->setTextFormat(Qt::PlainText);   // errors quote values from files: never rendered as markup
    bannerLabel_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    QPalette warn = bannerLabel_->palette();
    warn.setColor(QPalette::WindowText, QColor(0xe0, 0x4b, 0x4b));   // reads on light and dark
    bannerLabel_->setPalette(warn);
    auto* close = new QToolButton(banner_);
    close->setText(QStringLiteral("✕"));
    close->setToolTip(tr("Dismiss"));
    connect(close, &QToolButton::clicked, banner_, &QWidget::hide);
    bannerLayout->addWidget(bannerLabel_, 1);
    bannerLayout->addWidget(close);
    banner_->hide();
    centreLayout->addWidget(banner_);
    centreLayout->addWidget(charts_, 1);
    setCentralWidget(centre);

    progress_ = new RunProgressWidget(this);
    statusBar()->addPermanentWidget(progress_);

    buildDocks();
    buildClassroomDocks();
    buildMenus();
    connectController();
    restoreState();

    // The runs folder is listed off the GUI thread (its index, or each record once): the
    // window is usable at once and the list fills in batches.
    connect(store_, &RunStore::loadingProgress, this, [this](int runs) {
        statusBar()->showMessage(tr("Reading the runs folder: %1 runs listed so far…").arg(QLocale().toString(runs)));
    });
    connect(store_, &RunStore::loadingFinished, this, [this](const QStringList& problems) {
        statusBar()->clearMessage();
        if (!problems.isEmpty()) showError(problems.join(QLatin1Char(' ')));
        if (watchedId_.isEmpty() && store_->count() > 0) watchRun(store_->runs().back()->id());
        store_->watchFolder();   // from now on, runs other programs write there appear by themselves
        refreshActions();
    });
    // A run that leaves the list (deleted here, or its record removed or renamed by another
    // program) is no longer watched or drawn: the next one in the list is.
    connect(store_, &RunStore::runRemoved, this, [this] {
        if (watchedId_.isEmpty() || store_->run(watchedId_)) return;
        watchedId_.clear();
        if (const RunPtr next = model_->runAt(runList_->currentIndex().row()))
            watchRun(next->id());
        else
            refreshCharts();
        refreshActions();
    });
    store_->loadAllInBackground();
    refreshActions();
}

bool MainWindow::runsLoaded() const { return !store_->isLoading(); }

MainWindow::~MainWindow() { controller_->shutdown(); }

void MainWindow::buildDocks()
{
    auto* scroll = new QScrollArea;
    scroll->setWidget(panel_);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    scroll->setMinimumWidth(panel_->sizeHint().width() + scroll->verticalScrollBar()->sizeHint().width());
    auto* settingsDock = new QDockWidget(tr("Settings"), this);
    settingsDock->setObjectName(QStringLiteral("settingsDock"));
    settingsDock->setWidget(scroll);
    addDockWidget(Qt::LeftDockWidgetArea, settingsDock);

    runList_ = new QTableView;
    runList_->setObjectName(QStringLiteral("runList"));
    runList_->setModel(model_);
    runList_->setSelectionBehavior(QAbstractItemView::SelectRows);
    runList_->setSelectionMode(QAbstractItemView::SingleSelection);
    runList_->setEditTriggers(QAbstractItemView::EditKeyPressed | QAbstractItemView::DoubleClicked);
    runList_->verticalHeader()->hide();
    runList_->horizontalHeader()->setStretchLastSection(true);
    runList_->horizontalHeader()->setSectionResizeMode(RunListModel::NameColumn, QHeaderView::Stretch);
    runList_->setAlternatingRowColors(true);
    // A right click selects the row under it (QAbstractItemView), then offers what can be
    // done with that run.
    runList_->setContextMenuPolicy(Qt::CustomContextMenu);
    connect(runList_, &QWidget::customContextMenuRequested, this, [this](const QPoint& at) {
        if (!runList_->indexAt(at).isValid()) return;
        QMenu* menu = runContextMenu();
        menu->setAttribute(Qt::WA_DeleteOnClose);
        menu->popup(runList_->viewport()->mapToGlobal(at));
    });
    auto* runsDock = new QDockWidget(tr("Runs"), this);
    runsDock->setObjectName(QStringLiteral("runsDock"));
    runsDock->setWidget(runList_);
    addDockWidget(Qt::BottomDockWidgetArea, runsDock);

    connect(runList_->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
            [this](const QModelIndex& current) {
                if (const RunPtr run = model_->runAt(current.row())) watchRun(run->id());
                refreshActions();
            });
    connect(model_, &RunListModel::comparisonChanged, this, &MainWindow::refreshCharts);
    connect(model_, &RunListModel::renameFailed, this, &MainWindow::showError);
    connect(store_, &RunStore::problem, this, &MainWindow::showError);
    connect(store_, &RunStore::runChanged, this, [this](int row) {
        if (const RunPtr run = model_->runAt(row); run && run->id() == watchedId_) progress_->showRun(run.get());
    });
    connect(store_, &RunStore::undoAvailableChanged, this, [this] { refreshActions(); });
    connect(panel_, &SettingsPanel::startRequested, this, &MainWindow::startRun);
    connect(panel_, &SettingsPanel::validityChanged, this, [this] { refreshActions(); });
    connect(panel_, &SettingsPanel::liveChangeRequested, this, [this](const SettingsChange& change) {
        const QString error = controller_->requestChange(change);
        panel_->showChangeResult(error);
        if (!error.isEmpty()) statusBar()->showMessage(error, 8000);
    });
}

void MainWindow::buildMenus()
{
    auto action = [this](QMenu* menu, const QString& text, const char* name, QList<QKeySequence> keys,
                         auto slot) {
        auto* a = menu->addAction(text);
        a->setObjectName(QString::fromLatin1(name));
        a->setShortcuts(keys);
        connect(a, &QAction::triggered, this, slot);
        return a;
    };

    QMenu* file = menuBar()->addMenu(tr("&File"));
    action(file, tr("&Open Run Record…"), "openRunAction", {QKeySequence::Open}, [this] {
        const QString f = QFileDialog::getOpenFileName(this, tr("Open Run Record"), {}, tr("Run records (*.json)"));
        if (!f.isEmpty()) openRunRecord(f);
    });
    action(file, tr("Open &Config…"), "openConfigAction", {}, [this] {
        const QString f = QFileDialog::getOpenFileName(this, tr("Open Config"), {}, tr("Configs (*.json)"));
        if (!f.isEmpty()) loadConfig(f);
    });
    action(file, tr("&Save Config As…"), "saveConfigAction", {QKeySequence::SaveAs}, [this] {
        const QString f = QFileDialog::getSaveFileName(this, tr("Save Config"), QStringLiteral("config.json"),
                                                       tr("Configs (*.json)"));
        if (!f.isEmpty()) saveConfig(f);
    });
    action(file, tr("Open &Lesson…"), "openLessonAction", {QKeySequence(tr("Ctrl+L"))}, [this] {
        const QString f = QFileDialog::getOpenFileName(this, tr("Open Lesson"), {}, tr("Lessons (*.json)"));
        if (!f.isEmpty()) openLesson(f);
    });
    buildLessonsMenu(file->addMenu(tr("Lesso&ns")));
    action(file, tr("Save Lesso&n…"), "saveLessonAction", {QKeySequence(tr("Ctrl+Shift+L"))}, [this] { showSaveLessonDialog(); });
    action(file, tr("&Export…"), "exportAction", {QKeySequence(tr("Ctrl+E"))}, [this] { showExportDialog(); });
    exportWeightsAction_ = action(file, tr("Export &Weights…"), "exportWeightsAction", {QKeySequence(tr("Ctrl+Shift+E"))},
                                  [this] { showExportWeightsDialog(); });
    file->setToolTipsVisible(true);   // a disabled Export Weights says why
    file->addSeparator();
    action(file, tr("&Quit"), "quitAction", {QKeySequence::Quit}, [this] { close(); });

    QMenu* run = menuBar()->addMenu(tr("&Run"));
    startAction_ = action(run, tr("&Start"), "startAction", {QKeySequence(tr("Ctrl+R")), QKeySequence(Qt::Key_F5)},
                          [this] { startRun(); });
    pauseAction_ = action(run, tr("&Pause"), "pauseAction", {QKeySequence(Qt::Key_Space), QKeySequence(tr("Ctrl+P"))},
                          [this] {
                              if (controller_->state() == TrainingController::State::paused)
                                  controller_->resume();
                              else
                                  controller_->pause();
                          });
    stopAction_ = action(run, tr("S&top"), "stopAction", {QKeySequence(tr("Ctrl+.")), QKeySequence(tr("Shift+F5"))},
                         [this] { controller_->stop(); });
    run->addSeparator();
    useSettingsAction_ = action(run, tr("&Use These Settings"), "useSettingsAction", {QKeySequence(tr("Ctrl+U"))},
                                [this] { useSelectedRunSettings(); });
    useSettingsAction_->setToolTip(tr("Load the selected run's settings into the settings panel; Start runs it again"));
    revealRecordAction_ = action(run, tr("Show Record in &Folder"), "revealRecordAction", {},
                                 [this] {
                                     const RunPtr selected = model_->runAt(runList_->currentIndex().row());
                                     if (selected && !selected->recordPath().isEmpty())
                                         QDesktopServices::openUrl(QUrl::fromLocalFile(QFileInfo(selected->recordPath()).absolutePath()));
                                 });

    QMenu* edit = menuBar()->addMenu(tr("&Edit"));
    undoAction_ = action(edit, tr("&Undo Delete"), "undoDeleteAction", {QKeySequence::Undo}, [this] { undoDelete(); });
    edit->addSeparator();
    renameAction_ = action(edit, tr("&Rename Run"), "renameAction", {QKeySequence(Qt::Key_F2)}, [this] { renameSelected(); });
    deleteAction_ = action(edit, tr("&Delete Run"), "deleteAction", {QKeySequence::Delete}, [this] { deleteSelected(); });
    edit->addSeparator();
    action(edit, tr("&Copy Configuration"), "copyConfigAction", {QKeySequence(tr("Ctrl+Shift+C"))},
           [this] { copyConfiguration(); });
    action(edit, tr("&Paste Configuration"), "pasteConfigAction", {QKeySequence(tr("Ctrl+Shift+V"))},
           [this] { pasteConfiguration(); });

    QMenu* view = menuBar()->addMenu(tr("&View"));
    for (QDockWidget* dock : findChildren<QDockWidget*>()) view->addAction(dock->toggleViewAction());
    view->addSeparator();
    darkThemeAction_ = view->addAction(tr("&Dark Theme"));
    darkThemeAction_->setObjectName(QStringLiteral("darkThemeAction"));
    darkThemeAction_->setCheckable(true);
    connect(darkThemeAction_, &QAction::toggled, this, [](bool dark) { applyTheme(dark); });
    presentationAction_ = view->addAction(tr("&Presentation Mode"));
    presentationAction_->setObjectName(QStringLiteral("presentationAction"));
    presentationAction_->setCheckable(true);
    presentationAction_->setShortcuts({QKeySequence(Qt::Key_F11), QKeySequence(tr("Ctrl+Shift+P"))});
    presentationAction_->setShortcutContext(Qt::ApplicationShortcut);
    addAction(presentationAction_);   // works with the menu bar hidden too
    connect(presentationAction_, &QAction::toggled, this, &MainWindow::setPresentationMode);

    QMenu* help = menuBar()->addMenu(tr("&Help"));
    action(help, tr("&User Guide"), "userGuideAction", {QKeySequence::HelpContents}, [this] { showUserGuide(this); });
    action(help, tr("&Keyboard Shortcuts"), "keyboardShortcutsAction", {QKeySequence(tr("Ctrl+/"))},
           [this] { showKeyboardShortcuts(this); });
    help->addSeparator();
    action(help, tr("&About Precision Lab"), "aboutAction", {}, [this] { showAboutDialog(this); });
}

void MainWindow::connectController()
{
    connect(controller_, &TrainingController::runStarted, this,
            [this](const QString& runId, const TrainSettings& settings) {
                if (lessonPanel_->lesson() && lessonPanel_->runner()->ownsRun(runId)) {
                    model_->setCompared(runId, true);   // overlay the lesson's runs
                    onLessonRunStarted(runId, settings);
                }
                if (runId != controller_->currentRunId()) return;
                watchRun(runId);
                panel_->setLive(true, settings);
                statusBar()->showMessage(tr("Training %1").arg(store_->run(runId) ? store_->run(runId)->name() : runId));
            });
    connect(controller_, &TrainingController::eventsReceived, this, &MainWindow::onEvents);
    connect(controller_, &TrainingController::runFinished, this, &MainWindow::onRunFinished);
    connect(controller_, &TrainingController::failed, this, [this](const QString&, const QString& sentence) {
        showError(sentence);
    });
    connect(controller_, &TrainingController::stateChanged, this, [this](TrainingController::State state) {
        if (state == TrainingController::State::idle && panel_->isLive()) panel_->setLive(false);
        // The status bar says what the run is doing now ("Training" stayed while paused).
        const RunPtr run = store_->run(controller_->currentRunId());
        const QString name = run ? run->name() : controller_->currentRunId();
        if (state == TrainingController::State::paused)
            statusBar()->showMessage(tr("Paused %1 (Space or Run > Resume goes on)").arg(name));
        else if (state == TrainingController::State::training && statusBar()->currentMessage().startsWith(tr("Paused")))
            statusBar()->showMessage(tr("Training %1").arg(name));
        else if (state == TrainingController::State::stopping)
            statusBar()->showMessage(tr("Stopping %1…").arg(name));
        refreshActions();
    });
}

void MainWindow::onEvents(const QString& runId, const QVector<TrainerEvent>& events)
{
    for (const auto& e : events) {
        if (const auto* change = std::get_if<SettingChangeEvent>(&e))
            statusBar()->showMessage(tr("Step %1: %2").arg(change->step).arg(QString::fromStdString(change->description)), 8000);
        // Refused after the panel was told it would apply (it was asked for before the
        // run knew its backend): the panel goes back to what the run runs, and says why.
        if (const auto* refused = std::get_if<ChangeRefusedEvent>(&e); refused && runId == controller_->currentRunId()) {
            const QString why = tr("Not applied: %1").arg(QString::fromStdString(refused->reason));
            if (const RunPtr run = store_->run(runId); run && panel_->isLive()) panel_->setLive(true, run->currentSettings());
            panel_->showChangeResult(why);
            statusBar()->showMessage(why, 8000);
        }
    }
    if (runId == watchedId_)
        if (const RunPtr run = store_->run(runId)) {
            progress_->showRun(run.get());
            const bool histograms = std::any_of(events.begin(), events.end(), [](const TrainerEvent& e) {
                return std::holds_alternative<TelemetryEvent>(e);
            });
            if (histograms) explorer_->setRun(run);
        }
}

void MainWindow::onRunFinished(const QString& runId, const RunResult& result)
{
    const RunPtr run = store_->run(runId);
    if (!run) return;   // it never started; failed() said why
    const QString name = run->name();
    const QString message = QString::fromStdString(result.message);
    switch (result.status) {
    case RunStatus::completed:
        statusBar()->showMessage(tr("%1 completed: %2")
                                     .arg(name, QString::fromStdString(testResultText(modelTask(run->settings().model.kind),
                                                                                      result.testAccuracy, result.testLoss))));
        break;
    case RunStatus::diverged: {
        // The trainer's message starts with what happened ("diverged: the loss was not finite ...").
        QString why = message;
        if (why.startsWith(QLatin1String("diverged: "))) why.remove(0, 10);
        showError(tr("%1 diverged: %2").arg(name, why));
        break;
    }
    case RunStatus::stopped: statusBar()->showMessage(tr("%1 stopped: %2").arg(name, message)); break;
    default: break;   // failures arrive through failed()
    }
    if (runId == watchedId_) progress_->showRun(run.get());
    refreshActions();
}

void MainWindow::startRun()
{
    if (!panel_->isValid()) {
        showError(panel_->problem());
        return;
    }
    if (controller_->isLive()) {
        const RunPtr live = store_->run(controller_->currentRunId());
        const auto answer = QMessageBox::question(
            this, tr("Start a new run"),
            tr("“%1” is still training. Stop it (its record is kept) and start the new run?")
                .arg(live ? live->name() : controller_->currentRunId()));
        if (answer != QMessageBox::Yes) return;
    }
    TrainSettings settings = panel_->settings();
    if (settings.dataDir.empty() && !dataDir_.isEmpty()) settings.dataDir = dataDir_.toStdString();
    const QString name = RunListModel::recipeText(settings.recipe) + QLatin1Char(' ') +
                         QTime::currentTime().toString(QStringLiteral("HH:mm:ss"));
    banner_->hide();
    controller_->start(settings, name);
    statusBar()->showMessage(tr("Loading %1…").arg(QString::fromStdString(settings.dataset)));
    refreshActions();
}

QString MainWindow::watchedRunId() const { return watchedId_; }

void MainWindow::watchRun(const QString& runId)
{
    watchedId_ = runId;
    const int row = model_->rowOf(runId);
    if (row >= 0 && runList_->currentIndex().row() != row)
        runList_->setCurrentIndex(model_->index(row, RunListModel::NameColumn));
    const RunPtr run = store_->run(runId);
    progress_->showRun(run.get());
    explorer_->setRun(run);
    refreshCharts();
}

void MainWindow::refreshCharts()
{
    const RunPtr current = store_->run(watchedId_);
    QList<RunPtr> compare;
    for (const RunPtr& run : model_->comparedRuns())
        if (run != current) compare << run;
    charts_->setRuns(current, compare);
    store_->keepSeriesOf(QList<RunPtr>{current} + compare);
}

void MainWindow::refreshActions()
{
    using State = TrainingController::State;
    const State state = controller_->state();
    startAction_->setEnabled(panel_->isValid());
    pauseAction_->setEnabled(state == State::training || state == State::paused || state == State::loading);
    pauseAction_->setText(state == State::paused ? tr("&Resume") : tr("&Pause"));
    stopAction_->setEnabled(state != State::idle && state != State::stopping);
    undoAction_->setEnabled(store_->canUndoRemove());
    undoAction_->setText(store_->undoRemoveText());
    const RunPtr selected = model_->runAt(runList_->currentIndex().row());
    renameAction_->setEnabled(selected != nullptr);
    useSettingsAction_->setEnabled(selected != nullptr);
    revealRecordAction_->setEnabled(selected && !selected->recordPath().isEmpty());
    deleteAction_->setEnabled(selected && !selected->isLive());
    QString noWeights = tr("Select a run first.");
    if (selected) runWeightsFile(selected->settings(), selected->isLive(), &noWeights);
    exportWeightsAction_->setEnabled(noWeights.isEmpty());
    exportWeightsAction_->setToolTip(noWeights.isEmpty() ? tr("Save the selected run's final weights (safetensors)")
                                                         : noWeights);
}

QString MainWindow::useSelectedRunSettings()
{
    const RunPtr run = model_->runAt(runList_->currentIndex().row());
    if (!run) {
        showError(tr("Select a run whose settings to use."));
        return bannerText();
    }
    TrainSettings settings = run->settings();
    settings.saveWeights.clear();   // the run's own weights file is never a new run's output
    if (settings.dataDir == dataDir_.toStdString()) settings.dataDir.clear();   // the app's own, given at Start
    panel_->setSettings(settings);
    statusBar()->showMessage(tr("The settings of “%1” are in the settings panel: Start (Ctrl+R) runs it again").arg(run->name()),
                             10000);
    return {};
}

QMenu* MainWindow::runContextMenu()
{
    refreshActions();
    auto* menu = new QMenu(runList_);
    menu->setObjectName(QStringLiteral("runContextMenu"));
    menu->setToolTipsVisible(true);
    menu->addAction(useSettingsAction_);
    menu->addAction(renameAction_);
    menu->addSeparator();
    if (auto* exportAction = findChild<QAction*>(QStringLiteral("exportAction"))) menu->addAction(exportAction);
    menu->addAction(exportWeightsAction_);
    menu->addAction(revealRecordAction_);
    menu->addSeparator();
    menu->addAction(deleteAction_);
    return menu;
}

void MainWindow::renameSelected()
{
    const QModelIndex current = runList_->currentIndex();
    if (current.isValid()) runList_->edit(model_->index(current.row(), RunListModel::NameColumn));
}

void MainWindow::deleteSelected()
{
    const RunPtr run = model_->runAt(runList_->currentIndex().row());
    if (!run) return;
    const QString name = run->name();
    if (const QString error = store_->remove(run->id()); !error.isEmpty()) {
        showError(error);
        return;
    }
    // (The watched run, if this was it, moved on with the store's runRemoved.)
    statusBar()->showMessage(tr("Deleted “%1” (moved to the trash folder; Edit > Undo restores it)").arg(name), 8000);
    refreshActions();
}

void MainWindow::undoDelete()
{
    if (const QString error = store_->undoRemove(); !error.isEmpty())
        showError(error);
    else
        statusBar()->showMessage(tr("Restored the deleted run"), 8000);   // "Deleted …" is no longer true
    refreshActions();
}

void MainWindow::showError(const QString& sentence)
{
    statusBar()->showMessage(sentence, 15000);
    bannerLabel_->setText(sentence);
    banner_->show();
}

QString MainWindow::bannerText() const { return banner_->isHidden() ? QString() : bannerLabel_->text(); }

void MainWindow::restoreState()
{
    if (!restoreGeometry(settings_->value(QStringLiteral("window/geometry")).toByteArray())) {
        resize(1500, 950);
    } else if (const QScreen* screen = this->screen()) {
        // Clamped to the screen: a geometry saved when something had made the window too
        // large (a lesson title once made it 57,022 px wide) never comes back.
        const QRect room = screen->availableGeometry();
        if (width() > room.width() || height() > room.height()) {
            resize(std::min(width(), room.width()), std::min(height(), room.height()));
            move(room.topLeft());
        }
    }
    if (!QMainWindow::restoreState(settings_->value(QStringLiteral("window/state")).toByteArray())) {
        // First start: the charts get the height, the runs list a few rows.
        QTimer::singleShot(0, this, [this] {
            if (auto* runsDock = findChild<QDockWidget*>(QStringLiteral("runsDock")))
                resizeDocks({runsDock}, {140}, Qt::Vertical);
        });
    }
    const bool dark = settings_->value(QStringLiteral("ui/darkTheme"), false).toBool();
    darkThemeAction_->setChecked(dark);
    if (dark) applyTheme(true);
    const QString last = settings_->value(QStringLiteral("settings/last")).toString();
    if (!last.isEmpty()) {
        try {
            panel_->setSettings(settingsFromJson(nlohmann::json::parse(last.toStdString()), "last settings", SettingsReading::stored));
        } catch (const std::exception&) {
            // Settings of an older version: start from the defaults.
        }
    }
}

void MainWindow::saveState()
{
    // Presentation mode is a transient view (docks hidden, large fonts): the layout to
    // remember is the one under it.
    if (presentationMode()) setPresentationMode(false);
    settings_->setValue(QStringLiteral("window/geometry"), saveGeometry());
    settings_->setValue(QStringLiteral("window/state"), QMainWindow::saveState());
    settings_->setValue(QStringLiteral("ui/darkTheme"), darkThemeAction_->isChecked());
    if (panel_->isValid())
        settings_->setValue(QStringLiteral("settings/last"), QString::fromStdString(settingsToJson(panel_->settings()).dump()));
    settings_->sync();
}

void MainWindow::closeEvent(QCloseEvent* event)
{
    saveState();
    controller_->shutdown();   // stops the run; its record is kept
    event->accept();
}

}  // namespace plab::ui
