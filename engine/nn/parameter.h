// A trainable parameter and every copy the recipes keep of it.
#pragma once

#include "numerics/update_math.h"
#include "tensor/tensor.h"

#include <cstdint>
#include <string>

namespace plab {

struct Parameter {
    std::string layer;   // "conv1", "fc2", ...
    std::string name;    // "weight" or "bias"

    // With master weights: `master` is the fp32 copy the optimizer updates and `value`
    // is its cast copy in the compute format, refreshed after every update.
    // Without: `master` is empty and `value` is the only copy, stored in the recipe's
    // storage format (fp16/bf16), updated there.
    Tensor master;
    Tensor value;
    Tensor grad;         // weight gradient; holds S * dL/dw until the trainer unscales it
    Tensor state1;       // SGD momentum buffer, or Adam's first moment
    Tensor state2;       // Adam's second moment
    Tensor compensation; // Kahan-compensated updates: what the weights still owe, their format
    std::int64_t optimizerSteps = 0;   // Adam's t
    std::int64_t updatesApplied = 0;   // every optimizer's count of updates (stochastic rounding's step)

    // The last optimizer step's counts (zero when the step was skipped).
    UpdateCounts lastUpdate;

    // The tensor the optimizer writes: master when present, else value.
    Tensor& stored() { return master.size() ? master : value; }
    const Tensor& stored() const { return master.size() ? master : value; }
};

}  // namespace plab
