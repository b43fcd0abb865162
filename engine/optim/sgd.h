// torch.optim.SGD with momentum (dampening 0, no Nesterov, no weight decay), applied
// to fp32 master weights or, without them, to weights stored in fp16/bf16.
#pragma once

#include "optim/optimizer.h"

namespace plab {

class SgdOptimizer final : public Optimizer {
public:
    SgdOptimizer(double lr, double momentum);

    void step(const std::vector<Parameter*>& params, const PrecisionRecipe& recipe,
              MemoryAccountant* memory) override;
    void setLearningRate(double lr) override;
    double learningRate() const override { return lr_; }
    double momentum() const { return momentum_; }

private:
    void stepParameter(Parameter& p, const PrecisionRecipe& recipe, MemoryAccountant* memory) const;

    double lr_;
    double momentum_;
};

}  // namespace plab
