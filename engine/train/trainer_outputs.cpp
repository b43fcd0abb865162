// The trainer's files (train/trainer.h): what a run reads before it starts (the initial
// weights, checked against the model; the batches to replay) and what it writes at its end
// (the batches it trained on, the final weights).
#include "train/trainer.h"
#include "train/trainer_state.h"

#include "weights/model_weights.h"

#include <functional>
#include <string>

namespace plab {

RunFiles readRunFiles(const TrainSettings& settings, const DataSplit& data)
{
    RunFiles files;
    if (!settings.initWeights.empty()) {
        files.initialWeights = readSafetensors(settings.initWeights);
        const auto model = Model::create(settings.model, settings.seed);   // the shapes to check against
        checkWeightsFit(*model, files.initialWeights, "weights " + settings.initWeights);
    }
    if (!settings.readBatches.empty()) files.batches = readBatchFile(settings.readBatches, data.train.count);
    return files;
}

std::string Trainer::writeOutputFiles(State& st, RunStatus status)
{
    std::string problems;
    auto attempt = [&](const std::string& what, const std::function<void()>& write) {
        try {
            write();
        } catch (const std::exception& e) {
            problems += (problems.empty() ? "" : "; ") + ("the " + what + " were not written: " + e.what());
        }
    };
    if (!settings_.writeBatches.empty())
        attempt("batches", [&] {
            writeBatchFile(settings_.writeBatches, st.batchLog,
                           data_.name + ", " + std::to_string(data_.train.count) + " training images, seed " +
                               std::to_string(settings_.seed));
        });
    // The weights of a run that failed may be half-updated: not written.
    if (!settings_.saveWeights.empty() && status != RunStatus::failed && st.model)
        attempt("weights", [&] {
            st.backend->flush();
            writeSafetensors(settings_.saveWeights, modelWeights(*st.model));
        });
    return problems;
}

}  // namespace plab
