// Writing run records: one JSON document per run (schema in docs/RUN_RECORD.md; read back
// by readRunRecord, run_record.h), built from the trainer's events and rewritten atomically
// (temp file + rename) at most about once a second and at the end, so it is valid at every
// moment and a crash loses at most the last second.
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

    const nlohmann::json& record() const { return record_; }
    // The record as written so far, read back (readRunRecord).
    RunRecord runRecord() const;
    const std::filesystem::path& path() const { return out_; }
    // Writes now (atomically). Throws std::runtime_error naming the file on failure.
    void flush();
    // Why the last write failed (a full disk, a removed folder), "" when it succeeded.
    // onEvent() never throws: the run's owner checks this after each event and ends the run
    // as failed; the file on disk keeps its last good version.
    [[nodiscard]] const std::string& writeError() const { return writeError_; }

private:
    void flushIfDue();
    void updateSummary(const std::string& status, const std::string& message);

    std::filesystem::path out_;
    nlohmann::json record_;
    std::chrono::steady_clock::time_point lastFlush_;
    std::chrono::steady_clock::time_point started_;
    nlohmann::json lastMemoryBytes_;
    // The run totals of the latest telemetry event, per tap, for the summary's fractions.
    struct LayerTotals {
        std::string layer;
        TensorKind kind;
        RoundingStats stats;
        UpdateCounts updates;
    };
    std::vector<LayerTotals> lastTotals_;
    std::int64_t lastTotalsStep_ = 0;   // the step lastTotals_ reach
    double bestAccuracy_ = -1.0;
    std::string status_ = "starting";
    std::string writeError_;
};

// Writes `doc` to `file` through a temporary file in the same folder and a rename.
void writeJsonAtomically(const std::filesystem::path& file, const nlohmann::json& doc);

// Gives the saved record `file` a new name (rewritten atomically, nothing else changed).
void renameRunRecord(const std::filesystem::path& file, const std::string& name);

// Facts about this machine and build for the record's "machine" and "versions".
nlohmann::json machineInfo(int threads);
nlohmann::json versionInfo();

}  // namespace plab
