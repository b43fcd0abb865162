// The master / compute-copy rule of a recipe applied to one parameter, on the backend.
#include "nn/parameter_copies.h"

#include "backend/backend.h"

namespace plab {

void placeParameter(Parameter& p, ComputeBackend& backend)
{
    DeviceAllocator* device = backend.allocator();
    for (Tensor* t : {&p.master, &p.value, &p.grad, &p.state1, &p.state2}) t->place(device);
}

void alignParameterWithRecipe(Parameter& p, const PrecisionRecipe& recipe, MemoryAccountant* memory,
                              ComputeBackend& backend)
{
    placeParameter(p, backend);
    if (recipe.keepsMasterCopy()) {
        if (p.master.size() == 0) p.master = p.value;   // a promotion: exact
        p.master.setStorage(Format::fp32);
        p.master.track(memory, MemoryCategory::masterWeights);
        refreshComputeCopy(p, recipe, backend);
    } else {
        if (p.master.size() != 0) {
            p.value = p.master;
            p.master = Tensor();
        }
        const Format f = recipe.weightFormat();
        if (f != Format::fp32)
            backend.roundArray(f, p.value.data(), p.value.data(), static_cast<std::size_t>(p.value.size()), nullptr,
                               nullptr);
        p.value.setStorage(f);
    }
    p.value.track(memory, MemoryCategory::weights);
}

void refreshComputeCopy(Parameter& p, const PrecisionRecipe& recipe, ComputeBackend& backend)
{
    if (p.master.size() == 0) return;
    const Format f = recipe.weightFormat();
    if (f == Format::fp32) {
        p.value = p.master;   // a copy assignment keeps value's accounting category
        return;
    }
    if (p.value.size() != p.master.size()) p.value.resize(p.master.shape());
    backend.roundArray(f, p.master.data(), p.value.data(), static_cast<std::size_t>(p.master.size()), nullptr,
                       nullptr);
    p.value.setStorage(f);
}

}  // namespace plab
