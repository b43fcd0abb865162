// The runs folder and the runs in it: every saved run listed at start-up from the
// folder's index (read off the GUI thread; a record's series are read when it is shown),
// live runs fed by the training controller, and rename, delete with undo (records move to
// a trash subfolder, never deleted), and opening a record from elsewhere (copied into the
// runs folder).
#pragma once

#include "run_data.h"
#include "trainer_metatypes.h"

#include "report/runs_index.h"

#include <QHash>
#include <QSet>
#include <QList>
#include <QObject>
#include <QString>
#include <QStringList>
#include <QDateTime>
#include <QTimer>

#include <atomic>
#include <filesystem>
#include <thread>
#include <vector>

class QFileSystemWatcher;

namespace plab::ui {

// A file name the person chose, as the engine's file functions take it (UTF-8).
std::filesystem::path toPath(const QString& s);

class TrainingController;

class RunStore : public QObject {
    Q_OBJECT
public:
    explicit RunStore(QString runsDir, QObject* parent = nullptr);
    ~RunStore() override;   // stops a background load first

    // $XDG_DATA_HOME/precision-lab/runs (~/.local/share/precision-lab/runs).
    static QString defaultRunsDir();
    QString runsDir() const { return runsDir_; }
    QString trashDir() const;

    // Lists every record of the runs folder, oldest first, on this thread. Returns one
    // sentence per file that could not be read (such files are left where they are).
    QStringList loadAll();
    // The same on a thread of its own (the app's start-up): runs are added in batches as
    // they are read (loadingProgress), then loadingFinished gives the problems.
    void loadAllInBackground();
    bool isLoading() const { return scanThread_.joinable() && !loadingDone_; }

    // Memory for what is shown: the series of these runs and of the few shown just before
    // are kept; any other saved run keeps only its listing (read again when shown).
    void keepSeriesOf(const QList<RunPtr>& shown);

    const QList<RunPtr>& runs() const { return runs_; }
    int count() const { return static_cast<int>(runs_.size()); }
    RunPtr run(const QString& id) const;
    int indexOf(const QString& id) const;

    // Feeds live runs from the controller's signals.
    void trackController(TrainingController* controller);
    RunPtr addLiveRun(const QString& id, const TrainSettings& settings, const QString& name,
                      const QString& recordPath);
    void applyEvents(const QString& id, const QVector<TrainerEvent>& events);
    void finishRun(const QString& id, const RunResult& result);

    // Each returns an error sentence, or an empty string on success.
    [[nodiscard]] QString rename(const QString& id, const QString& name);
    [[nodiscard]] QString remove(const QString& id);
    bool canUndoRemove() const { return !trash_.isEmpty(); }
    QString undoRemoveText() const;   // "Undo delete of “AMP FP16 14:02”"
    QString undoRemove();

    // Watches the runs folder from now on: records that another program creates (plab
    // train --out, a sweep, the PyTorch probe, another app), renames or removes there join,
    // follow or leave the list within a second or so, read off the GUI thread; one still
    // being written is followed as it grows.
    void watchFolder();

    // Opens a run record from anywhere (e.g. `plab train --out`): a file already in the
    // runs folder is simply found; any other is copied in, so the original is never
    // touched. Returns the run, or null with `error` set.
    RunPtr openRecord(const QString& file, QString* error);

signals:
    void runsAboutToBeAdded(int first, int last);
    void runsAdded(int first, int last);
    void runAboutToBeRemoved(int row);
    void runRemoved(int row);
    void runChanged(int row);
    void undoAvailableChanged(bool available);
    // Something the store did on its own failed (a rename kept for a run that trained):
    // one sentence for people.
    void problem(const QString& sentence);
    void loadingProgress(int runs);
    void loadingFinished(const QStringList& problems);

private:
    struct Trashed {
        RunPtr run;
        int row;
        QString trashPath;
        QString weightsTrashPath;   // its final weights, moved with it (empty: none moved)
    };
    QString appWeightsFile(const QString& recordPath) const;
    void addScanned(std::vector<ScannedRecord>&& records, QStringList* problems);
    RunData::SeriesLoader seriesLoader();
    void insertRun(const RunPtr& run, int row) { insertRuns({run}, row); }
    void insertRuns(const QList<RunPtr>& runs, int row);
    void reloadFromRecord(const RunPtr& run);
    QColor nextColor();
    // Records another process is still writing (a live plab train --out, another app):
    // re-read once a second, on a thread of their own, until they end, or until their
    // writer is gone (interrupted).
    void follow(const RunPtr& run);
    void refreshFollowed();
    void rescanFolder();
    void applyRescan(std::vector<ScannedRecord>&& added, const std::vector<std::string>& gone);

    QString runsDir_;
    QList<RunPtr> runs_;
    QList<Trashed> trash_;
    QHash<QString, QString> pendingNames_;   // renames of live runs, written when they end
    int colorsHanded_ = 0;
    QHash<QString, QDateTime> followed_;   // run id -> its record's last modification seen
    QTimer followTimer_;
    QSet<QString> ids_;              // of runs_, for the scan's "already listed" test
    QStringList recentlyShown_;      // run ids, the most recent first
    std::thread scanThread_;
    std::thread followThread_;       // re-reads followed records off the GUI thread
    QFileSystemWatcher* watcher_ = nullptr;
    QTimer rescanTimer_;             // gathers a burst of the folder's changes into one rescan
    std::thread rescanThread_;       // lists the folder and reads new records
    bool rescanBusy_ = false, rescanAgain_ = false;   // (GUI thread only)
    QSet<QString> reported_;         // problems of watched records already said
    bool followBusy_ = false;        // a re-read is under way (set and cleared on the GUI thread)
    std::atomic<bool> cancelScan_{false};
    bool loadingDone_ = false;
    QStringList loadingProblems_;
};

}  // namespace plab::ui
