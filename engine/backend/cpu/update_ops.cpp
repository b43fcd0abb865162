// The optimizers' updates shared among the pool's threads (see update_ops.h).
#include "backend/cpu/update_ops.h"

#include <mutex>

namespace plab::cpu {

namespace {

// part(begin, end, counts) over parts covering [0, n), their counts added to *counts.
template <class Part>
void inParts(ThreadPool& pool, std::int64_t n, UpdateCounts* counts, const Part& part)
{
    std::mutex mutex;
    UpdateCounts total;
    pool.parallelFor(n, kUpdateGrain, [&](std::int64_t begin, std::int64_t end) {
        UpdateCounts local;
        part(static_cast<std::size_t>(begin), static_cast<std::size_t>(end), local);
        const std::lock_guard lock(mutex);
        total += local;
    });
    if (counts) *counts += total;
}

}  // namespace

void sgdUpdate(ThreadPool& pool, const SgdScalars& s, UpdateFormats f, const UpdateTensors& t, std::int64_t n,
               UpdateCounts* counts)
{
    inParts(pool, n, counts, [&](std::size_t b, std::size_t e, UpdateCounts& c) { sgdUpdatePart(s, f, t, b, e, c); });
}

void adamUpdate(ThreadPool& pool, const AdamScalars& s, UpdateFormats f, const UpdateTensors& t, std::int64_t n,
                UpdateCounts* counts)
{
    inParts(pool, n, counts, [&](std::size_t b, std::size_t e, UpdateCounts& c) { adamUpdatePart(s, f, t, b, e, c); });
}

}  // namespace plab::cpu
