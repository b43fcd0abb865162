// The main window, "Precision Lab": the settings panel (left dock), the charts (centre),
// the runs list (dock), a status bar with the watched run's progress, the menus and
// keyboard shortcuts, a non-modal error banner, and the state remembered in QSettings.
#pragma once

#include "trainer_metatypes.h"

#include <QMainWindow>
#include <QPointer>

#include <memory>

QT_BEGIN_NAMESPACE
class QAction;
class QLabel;
class QSettings;
class QTableView;
QT_END_NAMESPACE

namespace plab::ui {

class ChartsView;
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
    // error sentence, also shown in the window, or an empty string.
    QString openFile(const QString& file);
    QString openRunRecord(const QString& file);
    QString loadConfig(const QString& file);
    QString saveConfig(const QString& file);

    // The Start action: starts a run with the panel's settings (asks first when one trains).
    void startRun();
    // Shows one sentence in the status bar and the error banner.
    void showError(const QString& sentence);
    QString bannerText() const;

    TrainingController* controller() const { return controller_; }
    RunStore* runStore() const { return store_; }
    RunListModel* runListModel() const { return model_; }
    SettingsPanel* settingsPanel() const { return panel_; }
    ChartsView* chartsView() const { return charts_; }
    QTableView* runListView() const { return runList_; }
    RunProgressWidget* progressWidget() const { return progress_; }
    QString watchedRunId() const;

protected:
    void closeEvent(QCloseEvent* event) override;

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

    QAction* startAction_;
    QAction* pauseAction_;
    QAction* stopAction_;
    QAction* undoAction_;
    QAction* renameAction_;
    QAction* deleteAction_;
    QAction* darkThemeAction_;
};

}  // namespace plab::ui
