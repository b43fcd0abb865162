// The probes of blas_cuts.h, each run once.
#include "backend/cpu/blas_cuts.h"

#include <cblas.h>

#include <algorithm>
#include <cstring>
#include <string_view>
#include <vector>

namespace plab::cpu {

bool blasCutsSumAlike()
{
    static const bool alike = [] {
        const std::string_view core = openblas_get_corename();
        return core == "SkylakeX" || core == "skylakex" || core == "Cooperlake" || core == "cooperlake";
    }();
    return alike;
}

namespace {
// C (M, N) = A (M, K) * B (N, K)^T + beta C, B's transpose as the filter gradient takes it,
// over columns [k0, k1) of the sum; single-threaded, as CpuBackend::sgemm calls OpenBLAS.
void partialProduct(const std::vector<float>& A, const std::vector<float>& B, int M, int N, int K, int k0, int k1,
                    float beta, std::vector<float>& C)
{
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, k1 - k0, 1.0f, A.data() + k0, K, B.data() + k0, K,
                beta, C.data(), N);
}
}  // namespace

std::int64_t blasReductionBlock()
{
    static const std::int64_t block = [] {
        // 5,000 long, so that every candidate fits four times; 64 x 96, so that pieces from
        // 163 long are past OpenBLAS's small-matrix kernels (up to 10^6 multiply-adds),
        // which sum in another order.
        constexpr int M = 64, N = 96, K = 5000, kLongest = 1024;
        std::vector<float> A(std::size_t{M} * K), B(std::size_t{N} * K), whole(M * N), cut(M * N);
        std::uint32_t state = 7;
        auto next = [&] {   // values of every sign and several binades
            state = state * 1664525u + 1013904223u;
            return static_cast<float>(static_cast<std::int32_t>(state)) / 2147483648.0f * float(1 + state % 13);
        };
        for (float& v : A) v = next();
        for (float& v : B) v = next();
        if (openblas_get_num_threads() != 1) openblas_set_num_threads(1);
        partialProduct(A, B, M, N, K, 0, K, 0.0f, whole);
        auto cutAt = [&](int length, int pieces) {   // pieces of `length`, the last to K
            for (int i = 0; i < pieces; ++i)
                partialProduct(A, B, M, N, K, i * length, i + 1 == pieces ? K : (i + 1) * length,
                               i == 0 ? 0.0f : 1.0f, cut);
            return std::memcmp(whole.data(), cut.data(), whole.size() * sizeof(float)) == 0;
        };
        for (int length = 16; length <= kLongest; length += 16)
            if (cutAt(length, 2) && cutAt(length, 4)) return std::int64_t{length};
        return std::int64_t{0};
    }();
    return block;
}

SgemmCut sgemmCut(std::int64_t M, std::int64_t N, std::int64_t pieces)
{
    SgemmCut cut;
    cut.columns = N >= M;
    cut.extent = cut.columns ? N : M;
    if (pieces < 2) {
        cut.block = cut.extent;
        return cut;
    }
    cut.block = ((cut.extent + pieces - 1) / pieces + 15) / 16 * 16;
    cut.blocks = (cut.extent + cut.block - 1) / cut.block;
    return cut;
}

std::int64_t sgemmMostPieces(std::int64_t most, std::int64_t M, std::int64_t N)
{
    return std::min(most, std::max(M, N) / 32);
}

std::int64_t sgemmPieces(std::int64_t most, std::int64_t M, std::int64_t N, std::int64_t K)
{
    return std::min(sgemmMostPieces(most, M, N), M * N * K >> 21);
}

std::int64_t blasReductionCut(std::int64_t most, std::int64_t M, std::int64_t N)
{
    const std::int64_t block = blasReductionBlock();
    if (block == 0 || M <= 0 || N <= 0) return 0;
    const std::int64_t pieces = sgemmMostPieces(most, M, N);
    const SgemmCut cut = sgemmCut(M, N, pieces);
    const std::int64_t narrowest = cut.narrowest() * (cut.columns ? M : N);
    const std::int64_t least = std::max(pieces < 2 ? 0 : (pieces * (std::int64_t{1} << 21) + M * N - 1) / (M * N),
                                        ((std::int64_t{1} << 21) + narrowest - 1) / narrowest);
    return std::max<std::int64_t>(1, (least + block - 1) / block) * block;
}

}  // namespace plab::cpu
