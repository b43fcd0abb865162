// One recorded run: a Trainer whose events go to a RunRecorder (and to an observer: the
// CLI's progress, the app's event queue), where a record that cannot be written (a full
// disk) ends the run as failed, once, and the record's summary is written at the end. The
// CLI's train, sweep and lesson commands and the app's training worker all run this.
#pragma once

#include "record/record_writer.h"
#include "train/trainer.h"

#include <filesystem>
#include <memory>
#include <string>

namespace plab {

class RecordedRun {
public:
    // `recordPath` empty: the record is kept in memory only. Throws what the Trainer's
    // constructor throws (InputError for bad settings, files or memory).
    RecordedRun(const TrainSettings& settings, const DataSplit& data, std::filesystem::path recordPath,
                std::string name = {}, Trainer::EventSink observer = {}, Trainer::BackendFactory makeBackend = {},
                std::shared_ptr<TrainerControl> control = {});
    RecordedRun(const RecordedRun&) = delete;   // the trainer's sink points at this object
    RecordedRun& operator=(const RecordedRun&) = delete;

    Trainer& trainer() { return *trainer_; }
    const RunRecorder& recorder() const { return recorder_; }

    // Trains to the end, then writes the record's summary. A record that could not be
    // written makes the run failed, with the reason; the file keeps its last good version.
    RunResult run();

private:
    RunRecorder recorder_;
    Trainer::EventSink observer_;
    bool recordFailed_ = false;
    std::unique_ptr<Trainer> trainer_;
};

}  // namespace plab
