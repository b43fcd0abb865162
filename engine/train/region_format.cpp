// The format a histogram is judged in (see region_format.h).
#include "train/region_format.h"

#include "nn/loss.h"
#include "nn/model.h"
#include "nn/transformer.h"
#include "numerics/format.h"
#include "numerics/minifloat.h"

namespace plab {

RegionFormat regionFormatFor(const TrainSettings& settings, const std::string& layer, TensorKind kind)
{
    // A LayerNorm's statistics and attention's scores round in a format of their own.
    if (const auto own = transformerTapFormat(layer, settings.recipe)) return RegionFormat::of(*own);
    std::string owner = layer;
    if (!settings.recipe.layers.empty() && (layer == "input" || layer == SoftmaxCrossEntropy::kTapName)) {
        const auto names = parameterLayerNames(settings.model);
        if (!names.empty()) owner = layer == "input" ? names.front() : names.back();
    }
    const PrecisionRecipe recipe = settings.recipe.forLayer(owner);
    if (isQuantizedKind(kind) && recipe.quantization.on())
        return RegionFormat::of(kind == TensorKind::quantizedActivationGrad ? recipe.quantization.gradientFormat()
                                                                            : recipe.quantization.forwardFormat());
    return RegionFormat::of(recipe.compute);
}

RegionFormat regionFormatFor(const TrainSettings& settings, const std::string& judgedFormat, const std::string& layer,
                             TensorKind kind)
{
    if (const auto f = parseFormat(judgedFormat)) return RegionFormat::of(*f);
    if (const auto m = parseMiniFormat(judgedFormat)) return RegionFormat::of(*m);
    return regionFormatFor(settings, layer, kind);
}

}  // namespace plab
