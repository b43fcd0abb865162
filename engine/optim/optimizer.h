// Optimizers with PyTorch's update equations (torch.optim.SGD with momentum, torch.optim.Adam)
// applied to master weights in fp32, or, without master weights, computed and stored in
// the recipe's storage format with a rounding after every operation (as fp16 tensors do).
#pragma once

#include "amp/recipe.h"
#include "nn/parameter.h"
#include "tensor/memory.h"

#include <memory>
#include <string>
#include <vector>

namespace plab {

class ComputeBackend;

struct OptimizerConfig {
    std::string kind = "adam";   // "adam" or "sgd"
    double lr = 1e-3;
    double momentum = 0.9;       // SGD
    double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;   // Adam
    bool operator==(const OptimizerConfig&) const = default;
};

// The state tensors the optimizer keeps per parameter: Adam 2 (its moments), SGD with
// momentum 1, plain SGD 0. The memory planners (the memory check, the app's batch
// planner) count them.
int optimizerStateTensorsFor(const std::string& optimizerKind, double momentum);

class Optimizer {
public:
    virtual ~Optimizer() = default;
    // Throws std::invalid_argument for an unknown kind or a bad value.
    static std::unique_ptr<Optimizer> create(const OptimizerConfig& cfg);

    // One update of every parameter from its (already unscaled) grad, on the backend that
    // holds the parameters. Updates Parameter::lastUpdate (nonzero, lost and
    // non-finite-making updates; complete after backend.flush()), and refreshes `value`
    // from `master` (rounded to the compute format) when master weights are on.
    void step(const std::vector<Parameter*>& params, const PrecisionRecipe& recipe, MemoryAccountant* memory,
              ComputeBackend& backend);

    // Throws std::invalid_argument unless lr is finite and >= 0.
    void setLearningRate(double lr);
    double learningRate() const { return lr_; }

protected:
    // The optimizer's own rule for one parameter whose grad matches its stored weights.
    virtual void stepParameter(Parameter& p, const PrecisionRecipe& recipe, MemoryAccountant* memory,
                               ComputeBackend& backend) const = 0;
    virtual const char* name() const = 0;   // for error messages

private:
    double lr_ = 0.0;
};

}  // namespace plab
