// torch.optim.SGD with momentum (dampening 0, no Nesterov, no weight decay), applied
// to fp32 master weights or, without them, to weights stored in fp16/bf16.
#pragma once

#include "optim/optimizer.h"

namespace plab {

class SgdOptimizer final : public Optimizer {
public:
    SgdOptimizer(double lr, double momentum);

    double momentum() const { return momentum_; }
    int stateTensorCount() const override { return momentum_ != 0.0 ? 1 : 0; }   // PyTorch keeps no buffer without momentum

private:
    void stepParameter(Parameter& p, const PrecisionRecipe& recipe, MemoryAccountant* memory,
                       ComputeBackend& backend) const override;
    const char* name() const override { return "SGD"; }

    double momentum_;
};

}  // namespace plab
