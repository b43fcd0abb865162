// Optimizer state tensors on the backend.
#include "optim/state_tensor.h"

#include "backend/backend.h"
#include "nn/layer_ops.h"

namespace plab {

bool holdsStatePacked(Format format, const ComputeBackend& backend)
{
    return formatInfo(format).packable16() && backend.supports(BackendOp::packedUpdates) && packsStorageOn(backend);
}

bool prepareStateTensor(Tensor& state, const Shape& shape, Format format, MemoryAccountant* memory,
                        ComputeBackend& backend)
{
    const bool packed = holdsStatePacked(format, backend);
    if (state.size() != elementCount(shape) || state.size() == 0) {
        if (packed) {   // zeros made packed, never as fp32 values first
            state = Tensor(Shape{0}, format);
            state.pack();
            state.resize(shape);
        } else {
            state = Tensor(shape, format);   // zero-filled
        }
        state.place(backend.allocator());
        state.track(memory, MemoryCategory::optimizerState);
        return true;
    }
    state.place(backend.allocator());
    if (state.storage() != format) {
        state.unpack();
        // fp32 -> fp16/bf16 rounds; the other way (a promotion) is exact.
        if (format != Format::fp32)
            backend.roundArray(format, state.data(), state.data(), static_cast<std::size_t>(state.size()), nullptr,
                               nullptr);
        state.setStorage(format);
    }
    if (packed && !state.packed()) state.pack();
    if (!packed && state.packed()) state.unpack();
    return false;
}

UpdateOperand updateOperand(Tensor& t)
{
    if (t.size() == 0) return {};
    if (t.packed()) return {nullptr, t.bits16()};
    return {t.data(), nullptr};
}

bool anyPacked(const UpdateTensors& t)
{
    for (const UpdateOperand* o : {&t.weights, &t.grad, &t.state1, &t.state2, &t.compensation})
        if (o->bits) return true;
    return false;
}

}  // namespace plab
