// The state of one training run (Trainer::State), shared by the trainer's units: the loop
// (trainer.cpp), its telemetry and memory events (trainer_telemetry.cpp), its live changes
// (trainer_changes.cpp) and its output files (trainer_outputs.cpp). Private to engine/train.
#pragma once

#include "train/trainer.h"

#include "amp/loss_scaler.h"
#include "backend/backend.h"
#include "data/batch_file.h"
#include "nn/model.h"
#include "nn/step_precision.h"
#include "optim/optimizer.h"
#include "telemetry/telemetry.h"
#include "optim/grad_accumulation.h"
#include "tensor/memory.h"

#include <array>
#include <chrono>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace plab {

struct Trainer::State {
    // Members are destroyed in reverse order: the accountant outlives every tensor that
    // reports to it (their destructors remove their bytes), the telemetry outlives the
    // backend that may hold pointers into it until a flush, and the backend outlives the
    // tensors placed on its allocator.
    MemoryAccountant memory;
    TelemetryCollector telemetry;
    std::unique_ptr<ComputeBackend> backend;
    std::unique_ptr<Model> model;
    std::unique_ptr<Optimizer> optimizer;
    LossScaler scaler;
    PrecisionRecipe recipe;
    int batch = 32;
    std::int64_t step = 0;
    int epoch = 0;
    std::int64_t skipped = 0;
    std::int64_t imagesTrained = 0;
    double trainSeconds = 0.0;
    double lastAccuracy = 0.0;
    double lastTestLoss = std::numeric_limits<double>::quiet_NaN();   // none before the first evaluation
    std::int64_t lastEvalStep = -1;
    std::int64_t lastTelemetryStep = -1;
    std::int64_t foldedStep = 0;   // the last step whose counts the run totals hold
    // Per layer: the optimizer's update counts of the last step and of the run.
    std::map<std::string, std::pair<UpdateCounts, UpdateCounts>> updates;
    std::chrono::steady_clock::time_point started;
    std::int64_t plannedSteps = 0;
    std::int64_t backendScratch = 0;   // the backend's own scratch, counted as workspace
    // The step's inputs (after the backend: released before it) and what the ops see.
    std::vector<Parameter*> params;
    std::array<Tensor, 2> work;   // the layers' shared fp32 work buffers (StepContext::work)
    StepContext ctx;
    Tensor images;
    std::vector<std::uint8_t> labels;
    // Gradient accumulation (settings' gradAccumSteps > 1): one buffer per parameter, in the
    // accumulation format's bytes, counted as gradients; this step's counts of what their
    // additions took in and lost, one per parameter.
    std::vector<Tensor> accumulated;
    std::vector<AccumulationCounts> accumulation;
    StepBatches batchLog;   // every step's sample indices, when settings ask to write them
};

}  // namespace plab
