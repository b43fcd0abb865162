// torch.optim.Adam (PyTorch 1.13 defaults: the single-tensor, non-amsgrad path, no
// weight decay), applied to fp32 master weights or, without them, to weights and
// moments stored in fp16/bf16 with the rounding of every in-place op that implies.
#pragma once

#include "optim/optimizer.h"

namespace plab {

class AdamOptimizer final : public Optimizer {
public:
    AdamOptimizer(double lr, double beta1, double beta2, double eps);

    int stateTensorCount() const override { return 2; }

private:
    void stepParameter(Parameter& p, const PrecisionRecipe& recipe, MemoryAccountant* memory,
                       ComputeBackend& backend) const override;
    const char* name() const override { return "Adam"; }

    double beta1_;
    double beta2_;
    double eps_;
};

}  // namespace plab
