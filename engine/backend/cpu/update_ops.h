// The optimizers' updates on the CPU backend's threads: numerics/update_math.h's updates in
// parts of at least kUpdateGrain elements, one part per loop chunk. Each element's
// arithmetic, random bits and compensation are its own, so the results are those of one
// update over the whole, bit for bit, whatever the parts; the counts are added.
#pragma once

#include "backend/cpu/thread_pool.h"
#include "numerics/update_math.h"

#include <cstdint>

namespace plab::cpu {

inline constexpr std::int64_t kUpdateGrain = 1 << 14;

void sgdUpdate(ThreadPool& pool, const SgdScalars& s, UpdateFormats f, const UpdateTensors& t, std::int64_t n,
               UpdateCounts* counts);
void adamUpdate(ThreadPool& pool, const AdamScalars& s, UpdateFormats f, const UpdateTensors& t, std::int64_t n,
                UpdateCounts* counts);

}  // namespace plab::cpu
