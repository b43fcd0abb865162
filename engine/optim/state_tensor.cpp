// Optimizer state tensors on the backend.
#include "optim/state_tensor.h"

#include "backend/backend.h"

namespace plab {

bool prepareStateTensor(Tensor& state, const Shape& shape, Format format, MemoryAccountant* memory,
                        ComputeBackend& backend)
{
    if (state.size() != elementCount(shape) || state.size() == 0) {
        state = Tensor(shape, format);   // zero-filled
        state.place(backend.allocator());
        state.track(memory, MemoryCategory::optimizerState);
        return true;
    }
    state.place(backend.allocator());
    if (state.storage() != format) {
        // fp32 -> fp16/bf16 rounds; the other way (a promotion) is exact.
        if (format != Format::fp32)
            backend.roundArray(format, state.data(), state.data(), static_cast<std::size_t>(state.size()), nullptr,
                               nullptr);
        state.setStorage(format);
    }
    return false;
}

}  // namespace plab
