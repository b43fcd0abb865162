// Loading, tracking, renaming, deleting (to a trash folder, with undo) and opening runs.
#include "run_store.h"

#include "files/record_lock.h"
#include "record/run_record.h"
#include "record/record_writer.h"
#include "training_controller.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QFileSystemWatcher>
#include <QPointer>
#include <QStandardPaths>

#include <algorithm>
#include <set>

namespace plab::ui {

namespace {

// A free file name in `dir` for `stem`: stem.json, stem-2.json, ...
// (A name whose weights file "<name>.safetensors" is there is taken too: that file is
// another run's, and it goes with the record's name.)
QString freeRecordPath(const QString& dir, const QString& stem)
{
    const auto taken = [&](const QString& name) {
        return QFileInfo::exists(QDir(dir).filePath(name + QStringLiteral(".json"))) ||
               QFileInfo::exists(QDir(dir).filePath(name + QStringLiteral(".safetensors")));
    };
    QString name = stem;
    for (int n = 2; taken(name); ++n) name = stem + QStringLiteral("-%1").arg(n);
    return QDir(dir).filePath(name + QStringLiteral(".json"));
}

// A record read whole into a run.
RunPtr readRun(const QString& file, const QString& id, QString* error)
{
    try {
        RunRecord record = loadRunRecord(toPath(file));
        // A record without its final summary is interrupted only when its writer is gone:
        // one that another process (plab train --out, another app) still writes is live.
        const bool finished = !record.interrupted() || !recordWriterAlive(toPath(file));
        auto run = RunData::fromRecord(id, std::move(record), finished);
        run->setRecordPath(file);
        return run;
    } catch (const std::exception& e) {
        if (error) *error = QString::fromStdString(e.what());
        return nullptr;
    }
}

}  // namespace

namespace {

// "<id>.safetensors" beside the record "<id>.json": where the app puts a run's weights.
QString weightsBeside(const QString& recordPath)
{
    const QFileInfo record(recordPath);
    return record.dir().filePath(record.completeBaseName() + QStringLiteral(".safetensors"));
}

}  // namespace

// The weights file the app names for the run whose record is `recordPath`, when the record
// lies in the runs folder and that file is a regular file (not a link); empty otherwise.
QString RunStore::appWeightsFile(const QString& recordPath) const
{
    if (recordPath.isEmpty() || QFileInfo(recordPath).absoluteDir() != QDir(runsDir_)) return {};
    const QFileInfo weights(weightsBeside(recordPath));
    return weights.isFile() && !weights.isSymLink() ? weights.absoluteFilePath() : QString();
}

std::filesystem::path toPath(const QString& s) { return std::filesystem::path(s.toStdString()); }

RunStore::RunStore(QString runsDir, QObject* parent) : QObject(parent), runsDir_(std::move(runsDir))
{
    followTimer_.setInterval(1000);
    connect(&followTimer_, &QTimer::timeout, this, &RunStore::refreshFollowed);
}

RunStore::~RunStore()
{
    cancelScan_ = true;
    if (scanThread_.joinable()) scanThread_.join();
    if (followThread_.joinable()) followThread_.join();   // what it posts is dropped with this object
    if (rescanThread_.joinable()) rescanThread_.join();   // it stops reading at cancelScan_
}

void RunStore::watchFolder()
{
    if (watcher_) return;
    QDir().mkpath(runsDir_);
    watcher_ = new QFileSystemWatcher(QStringList{runsDir_}, this);
    rescanTimer_.setSingleShot(true);
    rescanTimer_.setInterval(200);
    connect(watcher_, &QFileSystemWatcher::directoryChanged, &rescanTimer_, qOverload<>(&QTimer::start));
    connect(&rescanTimer_, &QTimer::timeout, this, &RunStore::rescanFolder);
    rescanTimer_.start();   // what changed between the first listing and now
}

void RunStore::rescanFolder()
{
    if (rescanBusy_) {
        rescanAgain_ = true;
        return;
    }
    // The records of this folder the list holds, by file name, for the thread to compare.
    std::set<std::string> known;
    for (const RunPtr& r : std::as_const(runs_)) {
        const QFileInfo f(r->recordPath());
        if (!r->recordPath().isEmpty() && f.absoluteDir() == QDir(runsDir_)) known.insert(f.fileName().toStdString());
    }
    if (rescanThread_.joinable()) rescanThread_.join();   // done: rescanBusy_ was cleared
    rescanBusy_ = true;
    rescanThread_ = std::thread([this, known = std::move(known), folder = toPath(runsDir_)] {
        const std::vector<std::string> names = recordFileNames(folder);
        const std::set<std::string> present(names.begin(), names.end());
        auto added = std::make_shared<std::vector<ScannedRecord>>();
        std::vector<std::string> gone;
        for (const std::string& name : names)
            if (!known.count(name) && !cancelScan_) added->push_back(scanRecord(folder / name));
        for (const std::string& name : known)
            if (!present.count(name)) gone.push_back(name);
        QMetaObject::invokeMethod(this, [this, added, gone = std::move(gone)] { applyRescan(std::move(*added), gone); },
                                  Qt::QueuedConnection);
    });
}

void RunStore::applyRescan(std::vector<ScannedRecord>&& added, const std::vector<std::string>& gone)
{
    rescanBusy_ = false;
    // Records that left the folder (removed or renamed by another program) leave the list;
    // a run still training here, or one whose record is back meanwhile, stays.
    for (const std::string& name : gone) {
        const int row = indexOf(QFileInfo(QString::fromStdString(name)).completeBaseName());
        if (row < 0) continue;
        const RunPtr run = runs_[row];
        if (run->isLive() || QFileInfo::exists(run->recordPath())) continue;
        emit runAboutToBeRemoved(row);
        runs_.removeAt(row);
        ids_.remove(run->id());
        followed_.remove(run->id());
        emit runRemoved(row);
    }
    QStringList problems;
    addScanned(std::move(added), &problems);   // a record still being written is followed
    for (const QString& p : std::as_const(problems))
        if (!reported_.contains(p)) {
            reported_.insert(p);
            emit problem(p);
        }
    if (rescanAgain_) {
        rescanAgain_ = false;
        rescanTimer_.start();
    }
}

RunData::SeriesLoader RunStore::seriesLoader()
{
    // Runs outlive the store at shutdown (charts hold them): the loader needs nothing of it
    // but a guarded way to report a record that cannot be read again.
    QPointer<RunStore> store(this);
    return [store](RunData& run) {
        QString error;
        if (RunPtr full = readRun(run.recordPath(), run.id(), &error)) {
            run.adoptSeries(std::move(*full));
            return;
        }
        const QString sentence = RunStore::tr("Could not read the run record %1 again: %2").arg(run.recordPath(), error);
        run.setSeriesError(sentence);
        if (store)
            QMetaObject::invokeMethod(
                store, [store, sentence] { if (store) emit store->problem(sentence); }, Qt::QueuedConnection);
    };
}

QString RunStore::defaultRunsDir()
{
    return QStandardPaths::writableLocation(QStandardPaths::GenericDataLocation) +
           QStringLiteral("/precision-lab/runs");
}

QString RunStore::trashDir() const { return QDir(runsDir_).filePath(QStringLiteral("trash")); }

RunPtr RunStore::run(const QString& id) const
{
    const int i = indexOf(id);
    return i < 0 ? nullptr : runs_[i];
}

int RunStore::indexOf(const QString& id) const
{
    for (int i = 0; i < runs_.size(); ++i)
        if (runs_[i]->id() == id) return i;
    return -1;
}

QColor RunStore::nextColor()
{
    // Distinct hues that stay readable on light and dark backgrounds.
    static const QColor palette[] = {QColor(0x1f, 0x77, 0xb4), QColor(0xff, 0x7f, 0x0e), QColor(0x2c, 0xa0, 0x2c),
                                     QColor(0xd6, 0x27, 0x28), QColor(0x94, 0x67, 0xbd), QColor(0x8c, 0x56, 0x4b),
                                     QColor(0xe3, 0x77, 0xc2), QColor(0x7f, 0x7f, 0x7f), QColor(0xbc, 0xbd, 0x22),
                                     QColor(0x17, 0xbe, 0xcf)};
    return palette[colorsHanded_++ % std::size(palette)];
}

void RunStore::follow(const RunPtr& run)
{
    if (!run->isLive()) return;
    followed_.insert(run->id(), QFileInfo(run->recordPath()).lastModified());
    if (!followTimer_.isActive()) followTimer_.start();
}

void RunStore::refreshFollowed()
{
    if (followBusy_) return;   // the last re-read is still under way
    std::vector<std::pair<QString, QString>> due;   // run id, record path
    for (auto it = followed_.begin(); it != followed_.end();) {
        const RunPtr r = run(it.key());
        if (!r || !r->isLive()) {
            it = followed_.erase(it);
            continue;
        }
        // Re-read when the record changed, and once a second regardless, since a writer
        // that is killed leaves the record as it was: only its lock tells.
        const QDateTime modified = QFileInfo(r->recordPath()).lastModified();
        if (modified != it.value() || !recordWriterAlive(toPath(r->recordPath()))) {
            it.value() = modified;
            due.emplace_back(r->id(), r->recordPath());
        }
        ++it;
    }
    if (followed_.isEmpty()) followTimer_.stop();
    if (due.empty()) return;
    // Read off the GUI thread (a long record takes a while to parse): the window stays live,
    // and the runs are updated when the reading is done.
    if (followThread_.joinable()) followThread_.join();   // done: followBusy_ was cleared
    followBusy_ = true;
    followThread_ = std::thread([this, due = std::move(due)] {
        auto fresh = std::make_shared<std::vector<std::pair<QString, RunPtr>>>();
        for (const auto& [id, path] : due)
            if (RunPtr read = readRun(path, id, nullptr)) fresh->emplace_back(id, std::move(read));
        QMetaObject::invokeMethod(this, [this, fresh] {
            followBusy_ = false;
            for (const auto& [id, read] : *fresh)
                if (const RunPtr r = run(id); r && r->isLive()) {
                    r->replaceContents(*read);
                    emit runChanged(indexOf(id));
                }
            for (auto it = followed_.begin(); it != followed_.end();) {
                const RunPtr r = run(it.key());
                it = r && r->isLive() ? std::next(it) : followed_.erase(it);
            }
            if (followed_.isEmpty()) followTimer_.stop();
        }, Qt::QueuedConnection);
    });
}

QStringList RunStore::loadAll()
{
    QStringList problems;
    const std::atomic<bool> never{false};
    scanRunsFolder(toPath(runsDir_), [&](std::vector<ScannedRecord>&& records) { addScanned(std::move(records), &problems); },
                   never);
    return problems;
}

void RunStore::loadAllInBackground()
{
    if (scanThread_.joinable()) return;
    loadingDone_ = false;
    loadingProblems_.clear();
    // The thread only reads files and posts its batches to this object; the destructor
    // cancels and joins it before anything it posts to could be gone.
    scanThread_ = std::thread([this, folder = toPath(runsDir_)] {
        scanRunsFolder(folder, [this](std::vector<ScannedRecord>&& records) {
            auto batch = std::make_shared<std::vector<ScannedRecord>>(std::move(records));
            QMetaObject::invokeMethod(this, [this, batch] {
                addScanned(std::move(*batch), &loadingProblems_);
                emit loadingProgress(count());
            }, Qt::QueuedConnection);
        }, cancelScan_);
        QMetaObject::invokeMethod(this, [this] {
            loadingDone_ = true;
            emit loadingFinished(loadingProblems_);
        }, Qt::QueuedConnection);
    });
}

void RunStore::addScanned(std::vector<ScannedRecord>&& records, QStringList* problems)
{
    QList<RunPtr> fresh;
    for (ScannedRecord& r : records) {
        const QString id = QString::fromStdString(r.id);
        if (ids_.contains(id)) continue;   // opened meanwhile
        const QString file = QString::fromStdString(r.file.string());
        const QString fileName = QString::fromStdString(r.file.filename().string());
        RunPtr run;
        QString error = QString::fromStdString(r.error);
        if (r.listing && r.writerAlive)
            run = readRun(file, id, &error);   // still being written: read whole, and followed
        else if (r.listing)
            run = RunData::fromListing(id, *r.listing, seriesLoader());
        if (!run) {
            *problems << tr("Could not open the run record %1: %2").arg(fileName, error);
            continue;
        }
        run->setRecordPath(file);
        fresh << run;
    }
    insertRuns(fresh, count());
    for (const RunPtr& run : fresh) follow(run);
}

void RunStore::insertRuns(const QList<RunPtr>& runs, int row)
{
    if (runs.isEmpty()) return;
    row = std::clamp(row, 0, count());
    for (const RunPtr& run : runs) {
        if (!run->color().isValid()) run->setColor(nextColor());
        ids_.insert(run->id());
    }
    const int last = row + static_cast<int>(runs.size()) - 1;
    emit runsAboutToBeAdded(row, last);
    for (int i = 0; i < runs.size(); ++i) runs_.insert(row + i, runs[i]);
    emit runsAdded(row, last);
}

void RunStore::keepSeriesOf(const QList<RunPtr>& shown)
{
    constexpr qsizetype kKeptUnshown = 8;   // switching back and forth between a few runs is instant
    for (auto it = shown.rbegin(); it != shown.rend(); ++it) {
        if (!*it) continue;
        recentlyShown_.removeAll((*it)->id());
        recentlyShown_.prepend((*it)->id());
    }
    while (recentlyShown_.size() > shown.size() + kKeptUnshown) recentlyShown_.removeLast();
    const QSet<QString> keep(recentlyShown_.begin(), recentlyShown_.end());
    for (const RunPtr& run : runs_)
        if (run->hasSeries() && !keep.contains(run->id()) && QFileInfo::exists(run->recordPath()))
            run->releaseSeries(seriesLoader());
}

void RunStore::trackController(TrainingController* controller)
{
    connect(controller, &TrainingController::runStarted, this,
            [this](const QString& id, const TrainSettings& settings, const QString& name, const QString& path) {
                addLiveRun(id, settings, name, path);
            });
    connect(controller, &TrainingController::eventsReceived, this, &RunStore::applyEvents);
    connect(controller, &TrainingController::runFinished, this, &RunStore::finishRun);
}

RunPtr RunStore::addLiveRun(const QString& id, const TrainSettings& settings, const QString& name,
                            const QString& recordPath)
{
    if (RunPtr existing = run(id)) return existing;
    auto run = std::make_shared<RunData>(id, settings);
    run->setName(name.isEmpty() ? id : name);
    run->setRecordPath(recordPath);
    insertRun(run, count());
    return run;
}

void RunStore::applyEvents(const QString& id, const QVector<TrainerEvent>& events)
{
    const int row = indexOf(id);
    if (row < 0) return;
    for (const auto& e : events) runs_[row]->apply(e);
    emit runChanged(row);
}

void RunStore::reloadFromRecord(const RunPtr& run)
{
    if (RunPtr fresh = readRun(run->recordPath(), run->id(), nullptr)) run->replaceContents(*fresh);
}

void RunStore::finishRun(const QString& id, const RunResult& result)
{
    const int row = indexOf(id);
    if (row < 0) return;   // it never started: no record, nothing to show
    const RunPtr& run = runs_[row];
    run->finish(result);
    // A run superseded by a newer one had its last events dropped: its record has them all.
    if (static_cast<std::int64_t>(run->steps().size()) < result.steps) reloadFromRecord(run);
    if (pendingNames_.contains(id)) {
        const QString name = pendingNames_.take(id);
        if (const QString error = rename(id, name); !error.isEmpty()) emit problem(error);
    }
    emit runChanged(row);
}

QString RunStore::rename(const QString& id, const QString& name)
{
    const int row = indexOf(id);
    if (row < 0) return tr("There is no run %1.").arg(id);
    const QString trimmed = name.trimmed();
    if (trimmed.isEmpty()) return tr("A run needs a name.");
    const RunPtr& run = runs_[row];
    if (run->isLive()) {
        // The trainer rewrites the record every second: the name is written when it ends.
        pendingNames_.insert(id, trimmed);
    } else if (!run->recordPath().isEmpty()) {
        try {
            renameRunRecord(toPath(run->recordPath()), trimmed.toStdString());
        } catch (const std::exception& e) {
            return tr("Could not rename the run: %1").arg(QString::fromStdString(e.what()));
        }
    }
    run->setName(trimmed);
    emit runChanged(row);
    return {};
}

QString RunStore::remove(const QString& id)
{
    const int row = indexOf(id);
    if (row < 0) return tr("There is no run %1.").arg(id);
    RunPtr run = runs_[row];
    if (run->isLive()) return tr("Stop the run “%1” before deleting it.").arg(run->name());
    QString trashPath, weightsTrashPath;
    if (!run->recordPath().isEmpty() && QFileInfo::exists(run->recordPath())) {
        if (!QDir().mkpath(trashDir())) return tr("Could not create the trash folder %1.").arg(trashDir());
        trashPath = freeRecordPath(trashDir(), run->id());
        if (!QFile::rename(run->recordPath(), trashPath))
            return tr("Could not move %1 to the trash folder.").arg(run->recordPath());
        // The final weights the app saved for the run go with it: "<id>.safetensors" beside
        // "<id>.json" in the runs folder, recognised by name and place alone. A path read
        // from the record is never followed (a record from someone else may name another
        // run's file); a file the run's settings put elsewhere is the user's.
        const QString weights = appWeightsFile(run->recordPath());
        if (!weights.isEmpty()) {
            weightsTrashPath = weightsBeside(trashPath);
            if (!QFile::rename(weights, weightsTrashPath)) {
                QFile::rename(trashPath, run->recordPath());
                return tr("Could not move %1 to the trash folder.").arg(weights);
            }
        }
    }
    emit runAboutToBeRemoved(row);
    runs_.removeAt(row);
    ids_.remove(run->id());
    emit runRemoved(row);
    trash_.push_back({run, row, trashPath, weightsTrashPath});
    emit undoAvailableChanged(true);
    return {};
}

QString RunStore::undoRemoveText() const
{
    return trash_.isEmpty() ? tr("Undo delete") : tr("Undo delete of “%1”").arg(trash_.back().run->name());
}

QString RunStore::undoRemove()
{
    if (trash_.isEmpty()) return tr("There is no deleted run to restore.");
    const Trashed t = trash_.back();
    if (!t.trashPath.isEmpty()) {
        QString target = t.run->recordPath();
        if (QFileInfo::exists(target)) target = freeRecordPath(runsDir_, t.run->id());
        if (!QFile::rename(t.trashPath, target))
            return tr("Could not restore %1 from the trash folder.").arg(t.trashPath);
        t.run->setRecordPath(target);
    }
    if (!t.weightsTrashPath.isEmpty()) {
        // Beside the record again; if that name is taken meanwhile, it stays in the trash.
        const QString weights = weightsBeside(t.run->recordPath());
        if (!QFileInfo::exists(weights) && !QFileInfo(weights).isSymLink()) QFile::rename(t.weightsTrashPath, weights);
    }
    trash_.pop_back();
    insertRun(t.run, t.row);
    emit undoAvailableChanged(!trash_.isEmpty());
    return {};
}

RunPtr RunStore::openRecord(const QString& file, QString* error)
{
    const QFileInfo info(file);
    if (!info.exists()) {
        if (error) *error = tr("%1: no such file.").arg(file);
        return nullptr;
    }
    if (info.absoluteDir() == QDir(runsDir_) || QFileInfo(info.absolutePath()).canonicalFilePath() ==
                                                    QFileInfo(runsDir_).canonicalFilePath()) {
        if (RunPtr existing = run(info.completeBaseName())) return existing;
        // A record that appeared there since start-up (a plab train --out into the runs
        // folder, maybe still running): shown in place, followed while it is written.
        QString problem;
        RunPtr here = readRun(info.absoluteFilePath(), info.completeBaseName(), &problem);
        if (!here) {
            if (error) *error = problem;
            return nullptr;
        }
        insertRun(here, count());
        follow(here);
        return here;
    }
    // Copied in under a hidden name, which no scan of the folder lists (the start-up scan had
    // read a long record a second time beside this read), the copy read once, then given its
    // own name: what is read is what stays, and a copy that cannot be read is removed again,
    // so nothing unreadable lands in the runs folder. A record still being written elsewhere
    // is copied as it stands, and no writer follows the copy (interrupted where it ends).
    if (!QDir().mkpath(runsDir_)) {
        if (error) *error = tr("Could not create the runs folder %1.").arg(runsDir_);
        return nullptr;
    }
    const QString target = freeRecordPath(runsDir_, info.completeBaseName());
    const QString hidden = QDir(runsDir_).filePath(QStringLiteral(".") + QFileInfo(target).fileName() +
                                                   QStringLiteral(".opening"));
    QFile::remove(hidden);
    if (!QFile::copy(info.absoluteFilePath(), hidden)) {
        if (error) *error = tr("Could not copy %1 into the runs folder %2.").arg(file, runsDir_);
        return nullptr;
    }
    QString problem;
    RunPtr run = readRun(hidden, QFileInfo(target).completeBaseName(), &problem);
    if (!run || !QFile::rename(hidden, target)) {
        QFile::remove(hidden);
        if (error)
            *error = run ? tr("Could not copy %1 into the runs folder %2.").arg(file, runsDir_)
                         : problem.replace(hidden, info.absoluteFilePath());   // named as the person knows it
        return nullptr;
    }
    run->setRecordPath(target);
    if (run->name() == run->id() && run->id() != info.completeBaseName()) run->setName(info.completeBaseName());
    insertRun(run, count());
    return run;
}

}  // namespace plab::ui
