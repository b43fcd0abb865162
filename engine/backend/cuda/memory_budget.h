// The CUDA backend's device-memory budget: PLAB_CUDA_MEMORY_BUDGET_MIB caps the
// backend's memory pool (cudaMemPoolProps::maxSize), so that a run meets the out-of-memory
// refusal a card with that much free memory would give, and the memory chart's device
// figure is what the pool holds of the budget. Everything the plugin allocates comes from
// that pool (tensors, workspaces, counters); the CUDA context and cuBLAS's own handle stay
// outside it. Host code without CUDA headers, checked by tst_cuda_kernel_math.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace plab::cuda {

inline constexpr const char* kMemoryBudgetVariable = "PLAB_CUDA_MEMORY_BUDGET_MIB";
inline constexpr std::uint64_t kMostMemoryBudgetMib = std::uint64_t{1} << 40;

// The budget in bytes for the variable's value: 0 (no budget) when unset or empty, else a
// whole number of MiB from 1 to 2^40; anything else throws std::invalid_argument naming
// the variable and the value.
inline std::uint64_t memoryBudgetBytes(const char* value)
{
    if (!value || !*value) return 0;
    const auto refuse = [&] {
        return std::invalid_argument(std::string(kMemoryBudgetVariable) + " must be a whole number of MiB from 1 to " +
                                     std::to_string(kMostMemoryBudgetMib) + ", got \"" + value + "\"");
    };
    std::uint64_t mib = 0;
    for (const char* c = value; *c; ++c) {
        if (*c < '0' || *c > '9') throw refuse();
        mib = mib * 10 + static_cast<std::uint64_t>(*c - '0');
        if (mib > kMostMemoryBudgetMib) throw refuse();
    }
    if (mib == 0) throw refuse();
    return mib << 20;
}

}  // namespace plab::cuda
