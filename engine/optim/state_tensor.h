// Optimizer-state tensors (every optimizer's): in the recipe's format, placed where the
// backend keeps its tensors. The element-wise update arithmetic is in
// numerics/update_math.h and runs on the backend; which copies a parameter has is in
// nn/parameter_copies.h.
#pragma once

#include "amp/recipe.h"
#include "nn/parameter.h"
#include "tensor/memory.h"

namespace plab {

class ComputeBackend;

// Makes `state` an optimizer-state tensor of `shape` in `format` on the backend's memory,
// tracked under optimizerState. Returns true when it was created now (zero-filled): the
// first step. An existing tensor in another format (the recipe changed) is re-rounded to it.
bool prepareStateTensor(Tensor& state, const Shape& shape, Format format, MemoryAccountant* memory,
                        ComputeBackend& backend);

}  // namespace plab
