// What the plugin's kernels share on the device (nvcc only): the indices of grid-stride
// loops, and how the rounding kernels count (kernels.cu, fp8_kernels.cu): RoundingStats and
// histogram counts go to 32-bit counters in shared memory first, then one global atomic
// per nonzero counter per block. Gradients cluster in a few binades (and zeros), so most
// lanes of a warp add to the same few counters: the lanes that add to the same ones are
// grouped and only the lowest of each group adds, the group's size. Counts are integers,
// so the result equals the CPU's exactly whatever the grouping. The grid-stride loops run
// at most kMaxBlocks blocks, which bounds what one block counts (n / kMaxBlocks), so the
// shared counters cannot overflow below n = 2^44.
#pragma once

#include "backend/cuda/kernels.h"

namespace plab::cudakernels {

__device__ __forceinline__ long long firstIndex()
{
    return static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ long long gridStride() { return static_cast<long long>(gridDim.x) * blockDim.x; }

static_assert(kThreads % 32 == 0, "warps are whole: lane = threadIdx.x % 32");
static_assert(kCounterSlots <= (1 << 9) && kStatSlots <= 32 - 9, "a lane's key packs its stats and its bin");

// Zeroes a block's shared counters (kCounterSlots); every thread of the block calls it.
__device__ __forceinline__ void zeroCounters(unsigned int* local)
{
    for (int i = threadIdx.x; i < kCounterSlots; i += blockDim.x) local[i] = 0;
    __syncthreads();
}

// Adds one element's stats (CounterSlot bits) and histogram slot `bin` (when wantHist).
// The lanes that run this __activemask together get the same mask, and all of them go
// straight on (nothing between can diverge) to the __match_any_sync over it, which waits
// for exactly them. Lanes that left the loop, or arrive here apart (independent
// scheduling), are in other masks and form their own groups: the groups may be smaller
// than the warp, never wrong.
__device__ __forceinline__ void countElement(unsigned int* local, unsigned stats, int bin, bool wantHist)
{
    const unsigned lowerLanes = (1u << (threadIdx.x % 32)) - 1u;
    const unsigned lanes = __activemask();
    const unsigned group = __match_any_sync(lanes, stats << 9 | static_cast<unsigned>(bin));
    if ((group & lowerLanes) != 0) return;   // not the group's lowest lane
    const unsigned members = static_cast<unsigned>(__popc(group));
    for (unsigned mask = stats; mask != 0; mask &= mask - 1)
        atomicAdd(&local[__ffs(static_cast<int>(mask)) - 1], members);
    if (wantHist) atomicAdd(&local[bin], members);
}

// Adds a block's shared counters into the global ones; every thread of the block calls it.
__device__ __forceinline__ void addCounters(const unsigned int* local, unsigned long long* counters)
{
    __syncthreads();
    for (int i = threadIdx.x; i < kCounterSlots; i += blockDim.x)
        if (local[i] != 0) atomicAdd(&counters[i], static_cast<unsigned long long>(local[i]));
}

}  // namespace plab::cudakernels
