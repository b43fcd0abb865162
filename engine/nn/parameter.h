// A trainable parameter and every copy the recipes keep of it.
#pragma once

#include "tensor/tensor.h"

#include <cstdint>
#include <string>

namespace plab {

// What one optimizer step did to a parameter's stored weights.
struct UpdateCounts {
    std::int64_t nonzero = 0;     // elements whose computed update was nonzero
    std::int64_t lost = 0;        // ... and whose stored weight did not change
    std::int64_t nonFinite = 0;   // finite weights that the update made inf or NaN
    UpdateCounts& operator+=(const UpdateCounts& o)
    {
        nonzero += o.nonzero;
        lost += o.lost;
        nonFinite += o.nonFinite;
        return *this;
    }
};

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
    std::int64_t optimizerSteps = 0;   // Adam's t

    // The last optimizer step's counts (zero when the step was skipped).
    UpdateCounts lastUpdate;

    // The tensor the optimizer writes: master when present, else value.
    Tensor& stored() { return master.size() ? master : value; }
};

}  // namespace plab
