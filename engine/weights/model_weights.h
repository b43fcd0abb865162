// A model's weights as the equivalent PyTorch nn.Module's state_dict() names and shapes
// them (scripts/plab_torch.py defines the three modules; docs/WEIGHTS.md lists them):
// "conv1.weight" [32, 1, 3, 3], "fc1.weight" [10, 3136] over PyTorch's flatten order
// (C, H, W), biases "<layer>.bias".
#pragma once

#include "amp/recipe.h"
#include "nn/model.h"
#include "weights/safetensors.h"

#include <string>

namespace plab {

// The weights as the run holds them: the fp32 master copy where the recipe keeps one
// (F32), else the stored weights in their storage format (F16 or BF16 under a pure
// recipe, F32 otherwise). Metadata names the producer and the model.
WeightsFile modelWeights(Model& model);

// Throws InputError "<origin>: ..." naming the tensor when `w` lacks one of the model's
// parameters, has one the model lacks, or has one of another shape.
void checkWeightsFit(Model& model, const WeightsFile& w, const std::string& origin);

// Sets every parameter's values from `w` (checked first by checkWeightsFit: nothing is
// changed when it throws). For a model just created, before applyRecipe puts the weights
// into the recipe's formats.
void loadWeights(Model& model, const WeightsFile& w, const std::string& origin);

}  // namespace plab
