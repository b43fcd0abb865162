// Optimizers with PyTorch's update equations (torch.optim.SGD with momentum, torch.optim.Adam)
// applied to master weights in fp32, or, without master weights, computed and stored in
// the recipe's storage format with a rounding after every operation (as fp16 tensors do).
#pragma once

#include "amp/recipe.h"
#include "nn/parameter.h"
#include "tensor/memory.h"

#include <cstdint>
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

    // The state tensors it keeps per parameter: Adam 2 (its moments), SGD with momentum 1,
    // plain SGD 0.
    virtual int stateTensorCount() const = 0;

    // Creates every parameter's state tensors as its first step does (zeros, in the
    // layer's optimizer-state format, tracked under optimizerState), so a memory footprint
    // can count them before any step (train/memory_check.h).
    void prepareState(const std::vector<Parameter*>& params, const PrecisionRecipe& recipe, MemoryAccountant* memory,
                      ComputeBackend& backend) const;

    // Throws std::invalid_argument unless lr is finite and >= 0.
    void setLearningRate(double lr);
    double learningRate() const { return lr_; }

    // The run's seed, for the random bits of stochastic update rounding (with each
    // parameter's update count and name: numerics/update_rounding.h).
    void setRoundingSeed(std::uint64_t seed) { roundingSeed_ = seed; }

protected:
    // The optimizer's own rule for one parameter whose grad matches its stored weights.
    virtual void stepParameter(Parameter& p, const PrecisionRecipe& recipe, MemoryAccountant* memory,
                               ComputeBackend& backend) const = 0;
    virtual const char* name() const = 0;   // for error messages
    // Makes p's first stateTensorCount() state tensors (state1, state2) tensors of its
    // weights' shape in `format`; true when they were created now (zero-filled): the first step.
    bool prepareStates(Parameter& p, Format format, MemoryAccountant* memory, ComputeBackend& backend) const;
    // The formats p's update writes and how its weights' write rounds under `recipe`:
    // stochastic rounding's key for this update, or Kahan's compensation (made here, zeros,
    // in the weights' format, tracked as optimizer state).
    UpdateFormats updateFormats(Parameter& p, const PrecisionRecipe& recipe, MemoryAccountant* memory,
                                ComputeBackend& backend) const;

private:
    double lr_ = 0.0;
    std::uint64_t roundingSeed_ = 0;
};

}  // namespace plab
