// The copies of a parameter under a recipe, and the rounded, counted weight update that
// SGD and Adam share.
#include "optim/parameter_copies.h"

#include "numerics/bulk_round.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace plab {

Format weightValueFormat(const PrecisionRecipe& recipe)
{
    return recipe.masterWeights ? recipe.compute : recipe.storage();
}

Format optimizerStateFormat(const PrecisionRecipe& recipe)
{
    return recipe.masterWeights ? Format::fp32 : recipe.storage();
}

void roundWritten(Format f, float* x, std::size_t n)
{
    if (f != Format::fp32 && n) roundArray(f, x, n);
}

void alignParameterWithRecipe(Parameter& p, const PrecisionRecipe& recipe, MemoryAccountant* memory)
{
    // With fp32 compute a master would duplicate `value` bit for bit (DESIGN.md's "-"),
    // so the optimizer then updates `value` itself when no master exists.
    const bool masterNeeded = recipe.masterWeights && recipe.compute != Format::fp32;
    if (masterNeeded && p.master.size() == 0 && p.value.size() != 0) {
        // Promotion: every value of a reduced format is exact in fp32.
        p.master = Tensor(p.value.shape(), Format::fp32);
        std::copy(p.value.data(), p.value.data() + p.value.size(), p.master.data());
        p.master.track(memory, MemoryCategory::masterWeights);
        refreshComputeCopy(p, recipe);
    } else if (!recipe.masterWeights && p.master.size() != 0) {
        // Demotion, as model.half() casts the fp32 weights once.
        const Format f = recipe.storage();
        if (p.value.size() != p.master.size()) p.value.resize(p.master.shape());
        roundArray(f, p.master.data(), p.value.data(), static_cast<std::size_t>(p.master.size()));
        p.value.setStorage(f);
        p.master = Tensor();
    }
}

void refreshComputeCopy(Parameter& p, const PrecisionRecipe& recipe)
{
    if (p.master.size() == 0) return;
    if (p.value.size() != p.master.size()) p.value.resize(p.master.shape());
    const auto n = static_cast<std::size_t>(p.master.size());
    const Format f = weightValueFormat(recipe);
    if (f == Format::fp32)
        std::copy(p.master.data(), p.master.data() + n, p.value.data());
    else
        roundArray(f, p.master.data(), p.value.data(), n);
}

bool prepareStateTensor(Tensor& state, const Shape& shape, Format format, MemoryAccountant* memory)
{
    if (state.size() != elementCount(shape) || state.size() == 0) {
        state = Tensor(shape, format);   // zero-filled
        state.track(memory, MemoryCategory::optimizerState);
        return true;
    }
    if (state.storage() != format) {
        // fp32 -> fp16/bf16 rounds; the other way (a promotion) is exact.
        roundWritten(format, state.data(), static_cast<std::size_t>(state.size()));
        state.setStorage(format);
    }
    return false;
}

PLAB_FMA_CLONES void applyUpdate(Format f, float* p, const float* direction, float alpha, std::size_t n, UpdateCounts& counts)
{
    constexpr std::size_t kBlock = 256;
    std::array<float, kBlock> before{};
    for (std::size_t start = 0; start < n; start += kBlock) {
        const std::size_t len = std::min(kBlock, n - start);
        float* w = p + start;
        const float* d = direction + start;
        for (std::size_t i = 0; i < len; ++i) {
            before[i] = w[i];
            w[i] = std::fma(alpha, d[i], w[i]);
        }
        roundWritten(f, w, len);
        for (std::size_t i = 0; i < len; ++i) {
            // NaN compares unequal to 0 and to itself: a NaN update is nonzero, never lost.
            const double update = static_cast<double>(alpha) * static_cast<double>(d[i]);
            if (update == 0.0) continue;
            ++counts.nonzero;
            if (w[i] == before[i]) ++counts.lost;
        }
    }
}

}  // namespace plab
