// The runs folder at a glance: what a list of runs shows of each record (its
// listing), read once from the whole record and kept in a small index beside the records
// (".plab-index.json"), so that a folder of thousands of records opens without parsing
// them all again. The index is only a cache: an entry counts while its record has the
// size, modification time and inode it was read at; a missing, damaged or hand-edited
// index is rebuilt from the records (a bad entry costs a re-read, never a wrong row).
#pragma once

#include "record/run_record.h"
#include "train/events.h"
#include "train/settings.h"

#include <nlohmann/json.hpp>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace plab {

inline constexpr const char* kRunsIndexFileName = ".plab-index.json";

// The facts of one record that a list of runs shows, a function of the record (listingOf):
// the app's RunData built from a listing shows the same row as one built from the record
// (tst_ui_models checks it).
struct RunListing {
    std::string name;                  // the record's "name" ("" when it has none)
    TrainSettings settings;            // as the run started
    TrainSettings current;             // after its setting changes
    RunStatus status = RunStatus::completed;   // RunRecord::result()'s (stopped when unfinished)
    std::string message;               // and its message
    bool unfinished = false;           // no final summary: interrupted, or still being written
    std::int64_t steps = 0;
    std::int64_t plannedSteps = 0;
    std::int64_t skippedSteps = 0;
    std::int64_t images = 0;           // samples over the recorded steps
    double stepMs = 0.0;               // their summed step times
    double imagesPerSecond = 0.0;      // the summary's (0 for an unfinished record)
    double lastAccuracy = std::numeric_limits<double>::quiet_NaN();   // NaN: no evaluation
    double bestAccuracy = std::numeric_limits<double>::quiet_NaN();
    double lastTestLoss = std::numeric_limits<double>::quiet_NaN();   // an autoencoder's test MSE
    std::string backend;
    std::vector<std::string> versions;
    std::string arithmetic;
    std::string judgedFormat, sourceAsRun;   // a PyTorch probe's record (RunStartEvent)
    std::vector<SettingChangeEvent> changes;
    std::vector<ChangeRefusedEvent> refusals;
};

// A record's listing: a function of the record.
RunListing listingOf(const RunRecord& record);

nlohmann::json listingToJson(const RunListing& listing);
// Throws InputError (naming `origin`) for anything that is not a listing this build wrote.
RunListing listingFromJson(const nlohmann::json& j, const std::string& origin);

// What identifies one version of a record file: rewriting it (atomically, a new inode, or
// in place) changes at least one of these.
struct RecordStamp {
    std::uint64_t size = 0;
    std::int64_t modifiedNs = 0;
    std::uint64_t inode = 0;
    bool operator==(const RecordStamp&) const = default;
};
// The stamp of `file` (following a symbolic link); nullopt when it is not a regular file.
std::optional<RecordStamp> recordStamp(const std::filesystem::path& file);

class RunsIndex {
public:
    // The index of `folder` (its kRunsIndexFileName); empty when there is none or it cannot
    // be used (damaged, too large, another format): it is rebuilt then.
    static RunsIndex load(const std::filesystem::path& folder);

    // The listing of `fileName` when the index holds one for exactly this `stamp`.
    std::optional<RunListing> find(const std::string& fileName, const RecordStamp& stamp) const;
    void put(const std::string& fileName, const RecordStamp& stamp, const RunListing& listing);
    // Keeps only the entries of these file names (records removed since are dropped).
    void keepOnly(const std::vector<std::string>& fileNames);
    std::size_t size() const { return entries_.size(); }
    bool changed() const { return changed_; }

    // Writes the index into `folder` atomically. Throws std::runtime_error on failure, and
    // when something that is not a regular file (a FIFO) has the index's name.
    void save(const std::filesystem::path& folder) const;

private:
    struct Entry {
        RecordStamp stamp;
        nlohmann::json listing;   // parsed into a RunListing only when found
    };
    std::map<std::string, Entry> entries_;
    bool changed_ = false;
};

// One record of a runs folder scan.
struct ScannedRecord {
    std::filesystem::path file;
    std::string id;                      // the file's stem
    std::optional<RunListing> listing;   // none: the record cannot be read (error says why)
    std::string error;
    bool writerAlive = false;            // unfinished, and a live process still writes it
};

struct RunsScanOptions {
    std::size_t batchSize = 250;   // records per delivery at most
    int threads = 2;               // for records the index does not hold
};

// The file names of the records in `folder` ("*.json", not hidden, regular files or links),
// sorted: what a scan reads.
std::vector<std::string> recordFileNames(const std::filesystem::path& folder);
// One record's listing, read from the record (parsed whole), with whether a
// live process still writes it: what a scan delivers for a record the index does not hold.
ScannedRecord scanRecord(const std::filesystem::path& file);

// Reads the listing of every record in `folder` ("*.json", not hidden, not folders), in
// file-name order: from the index where it is current, from the record otherwise (parsed
// whole, so a damaged record is found now, as before the index existed).
// `deliver` gets them in order, in batches, on the calling thread. Writes the index back
// when it changed (a folder it cannot write keeps working without one), also after a
// cancellation. Stops early, delivering nothing more, once `cancelled` is true. Returns
// the number of records read from the records themselves (not from the index).
std::size_t scanRunsFolder(const std::filesystem::path& folder,
                           const std::function<void(std::vector<ScannedRecord>&&)>& deliver,
                           const std::atomic<bool>& cancelled, RunsScanOptions options = {});

}  // namespace plab
