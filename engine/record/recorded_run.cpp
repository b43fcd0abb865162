// One recorded run (see recorded_run.h).
#include "record/recorded_run.h"

#include <stdexcept>

namespace plab {

RecordedRun::RecordedRun(const TrainSettings& settings, const DataSplit& data, std::filesystem::path recordPath,
                         std::string name, Trainer::EventSink observer, Trainer::BackendFactory makeBackend,
                         std::shared_ptr<TrainerControl> control)
    : recorder_(std::move(recordPath), settings, data, std::move(name)), observer_(std::move(observer))
{
    auto sink = [this](const TrainerEvent& e) {
        recorder_.onEvent(e);
        if (observer_) observer_(e);
        // Thrown into the trainer, which ends the run as failed; its failure event that
        // follows is recorded in memory and observed, not thrown again.
        if (!recordFailed_ && !recorder_.writeError().empty()) {
            recordFailed_ = true;
            throw std::runtime_error("the run record could not be written: " + recorder_.writeError());
        }
    };
    trainer_ = std::make_unique<Trainer>(settings, data, sink, std::move(makeBackend), std::move(control));
}

RunResult RecordedRun::run()
{
    RunResult result = trainer_->run();
    try {
        recorder_.finish(result);
    } catch (const std::exception& e) {
        if (result.status != RunStatus::failed) {
            result.status = RunStatus::failed;
            result.message = std::string("the run record could not be written: ") + e.what();
        }
    }
    return result;
}

}  // namespace plab
