// Optimizer::create: the one place that maps an OptimizerConfig to an optimizer.
#include "optim/optimizer.h"

#include "optim/adam.h"
#include "optim/sgd.h"
#include "nn/parameter_copies.h"
#include "optim/state_tensor.h"
#include "numerics/update_rounding.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace plab {

std::unique_ptr<Optimizer> Optimizer::create(const OptimizerConfig& cfg)
{
    if (cfg.kind == "adam") return std::make_unique<AdamOptimizer>(cfg.lr, cfg.beta1, cfg.beta2, cfg.eps);
    if (cfg.kind == "sgd") return std::make_unique<SgdOptimizer>(cfg.lr, cfg.momentum);
    throw std::invalid_argument("unknown optimizer '" + cfg.kind + "': expected adam or sgd");
}

}  // namespace plab

namespace plab {

void Optimizer::setLearningRate(double lr)
{
    if (!std::isfinite(lr) || lr < 0.0)
        throw std::invalid_argument("learning rate must be a finite number >= 0, got " + std::to_string(lr));
    lr_ = lr;
}

bool Optimizer::prepareStates(Parameter& p, Format format, MemoryAccountant* memory, ComputeBackend& backend) const
{
    bool created = false;
    Tensor* states[] = {&p.state1, &p.state2};
    for (int i = 0; i < stateTensorCount(); ++i)
        created = prepareStateTensor(*states[i], p.stored().shape(), format, memory, backend) || created;
    return created;
}

void Optimizer::prepareState(const std::vector<Parameter*>& params, const PrecisionRecipe& recipe,
                             MemoryAccountant* memory, ComputeBackend& backend) const
{
    for (Parameter* p : params) {
        const PrecisionRecipe layerRecipe = recipe.forLayer(p->layer);
        prepareStates(*p, layerRecipe.optimizerStateFormat(), memory, backend);
        updateFormats(*p, layerRecipe, memory, backend);   // Kahan's compensation
    }
}

UpdateFormats Optimizer::updateFormats(Parameter& p, const PrecisionRecipe& recipe, MemoryAccountant* memory,
                                       ComputeBackend& backend) const
{
    // Weights and gradient: fp32 beside masters, else storage; the state: the recipe's
    // optimizer-state format (by default the weights').
    UpdateFormats f{recipe.gradientFormat(), recipe.optimizerStateFormat()};
    f.write.rounding = recipe.updateRounding;
    if (recipe.updateRounding == UpdateRounding::kahan) {
        // Held packed as the optimizer state is (2 bytes an element where the backend packs
        // 16-bit state), then passed as an UpdateTensors operand; else its fp32 values here.
        prepareStateTensor(p.compensation, p.stored().shape(), f.weights, memory, backend);
        f.write.compensation = p.compensation.packed() ? nullptr : p.compensation.data();
    } else if (p.compensation.size()) {
        p.compensation = Tensor();   // the recipe changed: what it owed is dropped with it
    }
    if (recipe.updateRounding == UpdateRounding::stochastic) {
        // The tensor by its name (FNV-1a), so the bits do not depend on the order of the
        // parameters or on the backend.
        std::uint64_t tensor = 0xCBF29CE484222325ull;
        for (const char c : p.layer + "." + p.name) tensor = (tensor ^ static_cast<unsigned char>(c)) * 0x100000001B3ull;
        f.write.key = update_rounding::stepKey(roundingSeed_, static_cast<std::uint64_t>(p.updatesApplied), tensor);
    }
    return f;
}

void Optimizer::step(const std::vector<Parameter*>& params, const PrecisionRecipe& recipe, MemoryAccountant* memory,
                     ComputeBackend& backend)
{
    for (Parameter* p : params) {
        p->lastUpdate = {};
        // Per-layer precision: each parameter follows its layer's recipe.
        const PrecisionRecipe layerRecipe = recipe.forLayer(p->layer);
        alignParameterWithRecipe(*p, layerRecipe, memory, backend);
        if (p->grad.size() == 0) continue;   // not part of this step's graph
        if (p->grad.size() != p->stored().size())
            throw std::logic_error(std::string(name()) + ": gradient of " + p->layer + "." + p->name + " has " +
                                   std::to_string(p->grad.size()) + " elements, the weights " +
                                   std::to_string(p->stored().size()));
        stepParameter(*p, layerRecipe, memory, backend);
        ++p->updatesApplied;
        refreshComputeCopy(*p, layerRecipe, backend);
    }
}

}  // namespace plab
