// What every optimizer's elementwise update shares: optimizer-state tensors in the
// recipe's format, rounding what an op writes, and the final update step: write
// p + alpha * direction rounded to the stored format and count the updates that were
// lost to that rounding. (Which copies a parameter has: nn/parameter_copies.h.)
#pragma once

#include "amp/recipe.h"
#include "nn/parameter.h"
#include "tensor/memory.h"

#include <cstddef>
#include <cstdint>

// std::fma is one instruction on CPUs with FMA3 and a libm call elsewhere; loops that
// use it get an FMA3 clone picked at load time. Results are identical either way: fma
// is exactly rounded in hardware and in libm.
#if defined(__GNUC__) && defined(__x86_64__) && !defined(__FMA__)
#define PLAB_FMA_CLONES __attribute__((target_clones("fma", "default")))
#else
#define PLAB_FMA_CLONES
#endif

namespace plab {

// Makes `state` an optimizer-state tensor of `shape` in `format`, tracked under
// optimizerState. Returns true when it was created now (zero-filled): the first step.
// An existing tensor in another format (the recipe changed) is re-rounded to it.
bool prepareStateTensor(Tensor& state, const Shape& shape, Format format, MemoryAccountant* memory);

// Rounds what one elementwise op wrote into a tensor of format f. PyTorch's kernels on
// fp16/bf16 tensors compute in fp32 ("opmath") and round once when they store.
void roundWritten(Format f, float* x, std::size_t n);

// p[i] = round_f(p[i] + alpha * direction[i]) for i < n, computed as one fused
// multiply-add in fp32 (what `param.add_(d, alpha=a)` and `addcdiv_` compile to on the
// GPU), rounded once to f when stored. The update alpha * direction[i] is evaluated in
// double (exact for two floats) to tell a zero update from a lost one.
void applyUpdate(Format f, float* p, const float* direction, float alpha, std::size_t n, UpdateCounts& counts);

}  // namespace plab
