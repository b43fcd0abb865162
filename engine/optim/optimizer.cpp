// Optimizer::create: the one place that maps an OptimizerConfig to an optimizer.
#include "optim/optimizer.h"

#include "optim/adam.h"
#include "optim/sgd.h"

#include <stdexcept>

namespace plab {

std::unique_ptr<Optimizer> Optimizer::create(const OptimizerConfig& cfg)
{
    if (cfg.kind == "adam") return std::make_unique<AdamOptimizer>(cfg.lr, cfg.beta1, cfg.beta2, cfg.eps);
    if (cfg.kind == "sgd") return std::make_unique<SgdOptimizer>(cfg.lr, cfg.momentum);
    throw std::invalid_argument("unknown optimizer '" + cfg.kind + "': expected adam or sgd");
}

}  // namespace plab
