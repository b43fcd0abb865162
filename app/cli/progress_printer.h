// The progress line of `plab train` on stderr: step, loss, loss scale, skipped steps,
// throughput and the estimated time left; evaluations and status changes on their own
// lines. On a terminal the line is rewritten in place; otherwise printed every ~2 s.
#pragma once

#include "train/events.h"

#include <chrono>
#include <cstdint>
#include <ostream>

namespace plab::cli {

class ProgressPrinter {
public:
    ProgressPrinter(std::ostream& out, bool quiet);
    void setPlannedSteps(std::int64_t steps, int epochs);
    void setModelTask(ModelTask task) { task_ = task; }   // what an evaluation's line says
    void onEvent(const TrainerEvent& e);
    void finish();

private:
    void printStep(const StepEvent& e);
    void endLine();

    std::ostream& out_;
    bool quiet_;
    bool terminal_;
    bool lineOpen_ = false;
    std::int64_t planned_ = 0;
    int epochs_ = 1;
    ModelTask task_ = ModelTask::classify;
    double stepMsSum_ = 0.0;
    std::int64_t imagesSum_ = 0;
    std::int64_t stepsSeen_ = 0;
    std::chrono::steady_clock::time_point lastPrint_{};
};

}  // namespace plab::cli
