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
// tracked under optimizerState, held packed where holdsStatePacked says so. Returns true
// when it was created now (zero-filled): the first step. An existing tensor in another
// format (the recipe changed) is re-rounded to it; one packed where it should not be (or
// the other way) changes form, values unchanged. Kahan's compensation is one too.
bool prepareStateTensor(Tensor& state, const Shape& shape, Format format, MemoryAccountant* memory,
                        ComputeBackend& backend);

// Whether optimizer state of `format` is held packed, 2 bytes an element: fp16 or bf16, on
// a backend that packs 16-bit tensors (packsStorageOn) and whose updates take packed
// operands (BackendOp::packedUpdates: the CPU's).
bool holdsStatePacked(Format format, const ComputeBackend& backend);

// t as an operand of the backend's updates: its fp32 values, or its patterns when packed.
UpdateOperand updateOperand(Tensor& t);
// Whether any of these operands is held packed (the update then takes UpdateTensors).
bool anyPacked(const UpdateTensors& t);

}  // namespace plab
