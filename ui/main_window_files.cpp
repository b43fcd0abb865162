// The main window's files: a run record or a config opened, several run records compared,
// the settings saved as a config (the rest of the window is in main_window.cpp).
#include "main_window.h"

#include "json/json_input.h"
#include "record/record_writer.h"
#include "run_list_model.h"
#include "run_store.h"
#include "settings_panel.h"

#include <QFileInfo>
#include <QStatusBar>

#include <filesystem>
#include <optional>

namespace plab::ui {

namespace {

// Whether `file` holds a run record (else a config), read size- and depth-limited like
// every JSON input; nothing, with the reading's one sentence in `error`, when unreadable.
std::optional<bool> holdsRunRecord(const QString& file, QString& error)
{
    try {
        return isRunRecordDocument(readJsonFile(toPath(file), file.toStdString()));
    } catch (const std::exception& e) {
        error = QString::fromStdString(e.what());
        return std::nullopt;
    }
}

}  // namespace

QString MainWindow::openFile(const QString& file)
{
    QString error;
    const std::optional<bool> record = holdsRunRecord(file, error);
    if (!record) {
        showError(error);
        return error;
    }
    return *record ? openRunRecord(file) : loadConfig(file);
}

QString MainWindow::openRunRecord(const QString& file)
{
    QString error;
    const RunPtr run = store_->openRecord(file, &error);
    if (!run) {
        showError(error);
        return error;
    }
    watchRun(run->id());
    statusBar()->showMessage(tr("Opened %1").arg(QFileInfo(file).fileName()), 8000);
    return {};
}

QString MainWindow::compareRunRecords(const QStringList& files)
{
    // Every file read first: one that is not a run record opens none of them.
    for (const QString& file : files) {
        QString error;
        if (const std::optional<bool> record = holdsRunRecord(file, error); record && !*record)
            error = tr("%1 is not a run record; files given together are compared as runs.").arg(file);
        if (!error.isEmpty()) {
            showError(error);
            return error;
        }
    }
    QString first;
    for (const QString& file : files) {
        QString error;
        const RunPtr run = store_->openRecord(file, &error);
        if (!run) {
            showError(error);
            return error;
        }
        model_->setCompared(run->id(), true);
        if (first.isEmpty()) first = run->id();
    }
    if (!first.isEmpty()) watchRun(first);
    statusBar()->showMessage(files.size() == 1 ? tr("Opened %1").arg(QFileInfo(files.constFirst()).fileName())
                                               : tr("Comparing %1 runs").arg(files.size()),
                             8000);
    return {};
}

QString MainWindow::loadConfig(const QString& file)
{
    try {
        panel_->setSettings(settingsFromFile(toPath(file)));
        statusBar()->showMessage(tr("Loaded the config %1").arg(QFileInfo(file).fileName()), 8000);
        return {};
    } catch (const std::exception& e) {
        const QString error = QString::fromStdString(e.what());
        showError(error);
        return error;
    }
}

QString MainWindow::saveConfig(const QString& file)
{
    try {
        writeJsonAtomically(toPath(file), settingsToJson(panel_->settings()));
        statusBar()->showMessage(tr("Saved the config to %1").arg(file), 8000);
        return {};
    } catch (const std::exception& e) {
        const QString error = tr("Could not save the config: %1").arg(QString::fromStdString(e.what()));
        showError(error);
        return error;
    }
}

}  // namespace plab::ui
