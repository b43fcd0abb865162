// The main window, "Precision Lab": the settings panel (left dock), the charts (centre),
// the runs list (dock), the format explorer and the lesson panel (right docks), a status
// bar with the watched run's progress, the menus and keyboard shortcuts (presentation
// mode, copy / paste of the configuration, export), a non-modal error banner, and the
// state remembered in QSettings.
#pragma once

#include "trainer_metatypes.h"

#include <QMainWindow>
#include <QPointer>

#include <memory>
#include <optional>

QT_BEGIN_NAMESPACE
class QAction;
class QLabel;
class QMenu;
class QSettings;
class QTableView;
QT_END_NAMESPACE

namespace plab::ui {

class ChartsView;
class FormatExplorer;
class LessonPanel;
class PresentationMode;
struct ExportRequest;
class RunListModel;
class RunProgressWidget;
class RunStore;
class SettingsPanel;
class TrainingController;

struct MainWindowOptions {
    QString dataDir;        // empty: the default data folder
    QString runsDir;        // empty: RunStore::defaultRunsDir()
    QString settingsFile;   // empty: the user's QSettings; tests pass a file of their own
};

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    explicit MainWindow(const MainWindowOptions& options = {}, QWidget* parent = nullptr);
    ~MainWindow() override;

    // A run record (shown) or a config JSON (loaded into the settings panel). Returns an
    // error sentence, also shown in the window, or an empty string. These methods show
    // their own problems, so (unlike the engine's problem-returning functions) a caller
    // may ignore the result: it is for tests and the command line.
    QString openFile(const QString& file);
    QString openRunRecord(const QString& file);
    // Several run records side by side: each opened and overlaid, the first shown (the
    // command line's `precision-lab A.json B.json ...`). A file that is not a run record
    // opens none of them; one the run store refuses (checked as it opens) stops there,
    // the records before it staying open.
    QString compareRunRecords(const QStringList& files);
    QString loadConfig(const QString& file);
    QString saveConfig(const QString& file);

    // Opens a lesson file (or ":/lessons/..." resource) in the lesson panel and shows only
    // its charts. Returns an error sentence, also shown, or an empty string.
    QString openLesson(const QString& file);
    // File > Save Lesson: the runs shown (watched first, then overlaid), the chart
    // selections and the given texts as one lesson file that opens on the same view
    // (lessonFromView). Written whole or not at all; returns an error sentence or "".
    QString saveLesson(const QString& file, const QString& title, const QString& question, const QString& explanation);
    // Presentation mode (F11, Ctrl+Shift+P): big fonts, high contrast, the lesson's charts.
    void setPresentationMode(bool on);
    bool presentationMode() const;
    // The settings panel's configuration as one line of JSON, put on the clipboard too.
    QString copyConfiguration();
    // Applies a one-line (or any) JSON configuration from the clipboard; returns an error
    // sentence, also shown, or an empty string.
    QString pasteConfiguration();
    // Records of the runs to export: the checked runs, else the selected one.
    QStringList exportableRecords() const;
    // Writes the export with a progress dialog; returns an error sentence or empty.
    QString exportRuns(const ExportRequest& request);
    // File > Export Weights: the selected run's final weights to `target` (safetensors,
    // PyTorch's tensor names). Returns an error sentence, also shown, or empty.
    QString exportSelectedWeights(const QString& target);

    // Run > Use These Settings (and the runs list's context menu): the selected run's
    // settings, as it started, into the settings panel, so Start runs it again; its weights
    // file is not reused (a new run writes its own). Returns an error sentence or empty.
    QString useSelectedRunSettings();
    // The runs list's context menu for the selected run (rename, reuse settings, export,
    // export weights, show the record's folder, delete), as shown on a right click.
    QMenu* runContextMenu();

    // The Start action: starts a run with the panel's settings (asks first when one trains).
    void startRun();
    // Shows one sentence in the status bar and the error banner.
    void showError(const QString& sentence);
    QString bannerText() const;

    TrainingController* controller() const { return controller_; }
    RunStore* runStore() const { return store_; }
    RunListModel* runListModel() const { return model_; }
    // The runs folder is listed off the GUI thread at start-up: false until it is.
    bool runsLoaded() const;
    SettingsPanel* settingsPanel() const { return panel_; }
    ChartsView* chartsView() const { return charts_; }
    QTableView* runListView() const { return runList_; }
    RunProgressWidget* progressWidget() const { return progress_; }
    QString watchedRunId() const;
    FormatExplorer* formatExplorer() const { return explorer_; }
    LessonPanel* lessonPanel() const { return lessonPanel_; }
    // Leaves the open lesson (its dock's close button): the runs ticked and watched before
    // it opened, and the settings panel's settings, come back.
    void closeLesson();

protected:
    void closeEvent(QCloseEvent* event) override;
    bool eventFilter(QObject* watched, QEvent* event) override;   // the lesson dock's close

private:
    void buildMenus();
    void buildDocks();
    void connectController();
    void watchRun(const QString& runId);
    void refreshCharts();
    void refreshActions();
    void onRunFinished(const QString& runId, const plab::RunResult& result);
    void onEvents(const QString& runId, const QVector<plab::TrainerEvent>& events);
    void renameSelected();
    void deleteSelected();
    void undoDelete();
    void buildClassroomDocks();
    void buildLessonsMenu(QMenu* menu);
    void showLessonCharts();
    // A lesson owns the view while it is open: only its runs are ticked, and while one of
    // its runs trains the settings panel shows that run's settings, read-only.
    void enterLessonView();
    void onLessonRunStarted(const QString& runId, const TrainSettings& settings);
    void endLessonRuns();   // the lesson's runs ended: the panel is the person's again
    // After a lesson's runs: watch, overlay and select in the charts what its "view" says.
    void applyLessonView();
    void showSaveLessonDialog();
    void showExportDialog();
    void showExportWeightsDialog();
    void restoreState();
    void saveState();

    QString dataDir_;
    std::unique_ptr<QSettings> settings_;
    TrainingController* controller_;
    RunStore* store_;
    RunListModel* model_;
    SettingsPanel* panel_;
    ChartsView* charts_;
    QTableView* runList_;
    RunProgressWidget* progress_;
    QWidget* banner_;
    QLabel* bannerLabel_;
    QString watchedId_;
    // What the person had before a lesson took the view (restored by closeLesson).
    struct ViewBeforeLesson {
        QStringList compared;
        QString watched;
        QStringList hiddenCharts;   // chart groups the person had hidden
        std::optional<TrainSettings> panel;   // while a lesson's run shows its settings
    };
    std::optional<ViewBeforeLesson> beforeLesson_;
    FormatExplorer* explorer_ = nullptr;
    LessonPanel* lessonPanel_ = nullptr;
    PresentationMode* presentation_ = nullptr;
    QAction* presentationAction_ = nullptr;

    QAction* startAction_;
    QAction* pauseAction_;
    QAction* stopAction_;
    QAction* undoAction_;
    QAction* exportWeightsAction_ = nullptr;
    QAction* renameAction_;
    QAction* useSettingsAction_ = nullptr;
    QAction* revealRecordAction_ = nullptr;
    QAction* deleteAction_;
    QAction* darkThemeAction_;
};

}  // namespace plab::ui
