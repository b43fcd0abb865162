// Writing run records: a RunRecord built from the trainer's events (RunRecord::apply) and
// written as one JSON document (runRecordToJson; schema in docs/RUN_RECORD.md), rewritten
// atomically (temp file + rename) at most about once a second, a long record no more often
// than ten times its write takes, and at the end, so it is valid at every moment and a
// crash loses at most the last second (a long record's last few).
#pragma once

#include "data/dataset.h"
#include "files/atomic_file.h"
#include "record/run_record.h"
#include "train/events.h"
#include "train/settings.h"
#include "train/trainer.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace plab {

class RunRecorder {
public:
    // `out` may be empty: the record is kept in memory only.
    RunRecorder(std::filesystem::path out, const TrainSettings& settings, const DataSplit& data,
                std::string name = {});

    void onEvent(const TrainerEvent& event);
    // Writes the summary of the finished run and the record, whatever the status.
    void finish(const RunResult& result);

    // The record so far, and its JSON (what the file holds after the next write).
    const RunRecord& runRecord() const { return record_; }
    nlohmann::json recordJson() const { return runRecordToJson(record_); }
    const std::filesystem::path& path() const { return out_; }
    // Writes now (atomically). Throws std::runtime_error naming the file on failure.
    void flush();
    // Why the last write failed (a full disk, a removed folder), "" when it succeeded.
    // onEvent() never throws: the run's owner checks this after each event and ends the run
    // as failed; the file on disk keeps its last good version.
    [[nodiscard]] const std::string& writeError() const { return writeError_; }

private:
    void flushIfDue();

    std::filesystem::path out_;
    RunRecord record_;
    std::chrono::steady_clock::time_point lastFlush_;
    std::chrono::steady_clock::duration lastWriteTook_{};
    std::string writeError_;
};

// Writes `doc` to `file` through a temporary file in the same folder and a rename.
void writeJsonAtomically(const std::filesystem::path& file, const nlohmann::json& doc);

// Gives the saved record `file` a new name (rewritten atomically, nothing else changed).
void renameRunRecord(const std::filesystem::path& file, const std::string& name);

}  // namespace plab
