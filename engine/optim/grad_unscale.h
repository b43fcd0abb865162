// What happens to the weight gradients between backward and the optimizer: the
// finiteness check and unscaling of GradScaler.unscale_ (docs/ARCHITECTURE.md#one-training-step), and
// torch.nn.utils.clip_grad_norm_, which sees the unscaled gradients.
#pragma once

#include "amp/recipe.h"
#include "nn/parameter.h"

#include <cstdint>
#include <string_view>
#include <vector>

namespace plab {

class ComputeBackend;

struct UnscaleResult {
    bool foundNonFinite = false;   // some scaled gradient element was inf or NaN
};

// Checks every scaled gradient element for inf/NaN. When all are finite, multiplies
// each by invScale (the scaler's float(1/double(S))) in fp32; with master weights off
// the product is rounded to the storage format of its layer under the recipe, as
// PyTorch's unscale writes fp16 grads.
// Parameters with an empty grad are skipped.
// Runs on the backend that holds the gradients.
UnscaleResult unscaleGradients(const std::vector<Parameter*>& params, float invScale,
                               const PrecisionRecipe& recipe, ComputeBackend& backend);

// torch.nn.utils.clip_grad_norm_ with the L2 norm: total = sqrt(sum of g^2) over all
// gradients (in double), and when max / (total + 1e-6) < 1 every gradient is
// multiplied by that coefficient in fp32 and rounded to its tensor's storage format.
// A non-finite total leaves the gradients alone. Returns the total norm before
// clipping. Throws std::invalid_argument unless maxNorm is positive and finite.
double clipGradNorm(const std::vector<Parameter*>& params, double maxNorm, ComputeBackend& backend);

// Where a step clips the gradient norm. unscaled: after GradScaler.unscale_, as PyTorch's
// AMP examples do (the limit applies to the true gradients). scaled: before it, the
// mistake those examples warn of: the norm measured is S times the true one, so the limit
// shrinks the gradients S times more than meant (docs/LESSONS.md, lesson 15).
enum class ClipAt : std::uint8_t { unscaled, scaled };
std::string_view clipAtName(ClipAt at);   // "unscaled", "scaled"

// One step's unscale and clipping in the order `at` says: clip then unscale (scaled), or
// unscale then clip (unscaled), clipping only when maxNorm > 0 and the unscale found every
// gradient finite (scaled: a non-finite norm leaves the gradients to the unscale, which
// finds them). Returns the unscale's result.
UnscaleResult unscaleAndClip(const std::vector<Parameter*>& params, float invScale, const PrecisionRecipe& recipe,
                             double maxNorm, ClipAt at, ComputeBackend& backend);

}  // namespace plab
