// The master / compute-copy rule of a recipe applied to one parameter.
#include "nn/parameter_copies.h"

#include "numerics/bulk_round.h"

#include <algorithm>

namespace plab {

void alignParameterWithRecipe(Parameter& p, const PrecisionRecipe& recipe, MemoryAccountant* memory)
{
    if (recipe.keepsMasterCopy()) {
        if (p.master.size() == 0) {
            p.master = Tensor(p.value.shape(), Format::fp32);
            std::copy(p.value.data(), p.value.data() + p.value.size(), p.master.data());
        }
        p.master.setStorage(Format::fp32);
        p.master.track(memory, MemoryCategory::masterWeights);
        refreshComputeCopy(p, recipe);
    } else {
        if (p.master.size() != 0) {
            p.value = p.master;
            p.master = Tensor();
        }
        const Format f = recipe.weightFormat();
        if (f != Format::fp32) roundArray(f, p.value.data(), static_cast<std::size_t>(p.value.size()));
        p.value.setStorage(f);
    }
    p.value.track(memory, MemoryCategory::weights);
}

void refreshComputeCopy(Parameter& p, const PrecisionRecipe& recipe)
{
    if (p.master.size() == 0) return;
    if (p.value.size() != p.master.size()) p.value.resize(p.master.shape());
    const auto n = static_cast<std::size_t>(p.master.size());
    const Format f = recipe.weightFormat();
    if (f == Format::fp32)
        std::copy(p.master.data(), p.master.data() + n, p.value.data());
    else
        roundArray(f, p.master.data(), p.value.data(), n);
    p.value.setStorage(f);
}

}  // namespace plab
