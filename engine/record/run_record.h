// Replays a saved run record as the trainer's own events, so that a record written by
// `plab train --out` (or a run interrupted by a crash) is shown exactly as a live run:
// the UI feeds both through the same code.
#pragma once

#include "train/events.h"
#include "train/settings.h"
#include "train/trainer.h"

#include <nlohmann/json.hpp>

#include <vector>

namespace plab {

struct ReplayedRun {
    TrainSettings settings;             // as the run started
    std::vector<TrainerEvent> events;   // in the order the trainer sent them (by step)
    RunResult result;                   // from the summary; status "running" in a record
                                        // that was cut short reads as stopped
    bool interrupted = false;           // the record never got its final summary
};

// Throws InputError (naming `origin`) when the record lacks what a replay needs.
ReplayedRun replayRecord(const nlohmann::json& record, const std::string& origin);

}  // namespace plab
