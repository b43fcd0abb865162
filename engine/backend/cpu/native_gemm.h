// Matrix products on the CPU's native 16-bit units through oneDNN: the
// operands, already rounded to bf16 (or fp16) by the layers' rounding taps, are packed
// into 16-bit arrays exactly and multiplied by oneDNN's matmul with fp32 accumulation in
// the hardware's order (AVX-512 BF16's dot products, AMX tiles) into an fp32 destination,
// so the output's rounding stays a tap of ours. The "hardware" arithmetic; the "exact"
// one is OpenBLAS sgemm on the same operands (products exact in fp32, docs/ARCHITECTURE.md#numerics).
#pragma once

#include "backend/backend.h"
#include "backend/cpu/thread_pool.h"

#include <cstdint>
#include <memory>
#include <string>

namespace plab::cpu {

// What this CPU and this oneDNN multiply natively, probed once by creating a small matmul
// per type: an implementation that is oneDNN's reference code (scalar loops), or none,
// counts as not native.
struct NativeSupport {
    bool bf16 = false;
    bool fp16 = false;
    std::string isa;        // oneDNN's effective ISA, e.g. "avx512_core_bf16"
    std::string bf16Text;   // "AVX-512 BF16 via oneDNN 2.6.3", or why not: "this CPU has no native bf16 ..."
    std::string fp16Text;
};
const NativeSupport& nativeSupport();
bool nativelySupported(Format f);   // bf16 or fp16 with native support; false for others
const std::string& nativeSupportText(Format f);

class NativeGemm {
public:
    explicit NativeGemm(ThreadPool& pool);
    ~NativeGemm();
    NativeGemm(const NativeGemm&) = delete;
    NativeGemm& operator=(const NativeGemm&) = delete;

    // Row-major C (M, N) = op(A) op(B) + beta * C as ComputeBackend::gemm, for operands
    // representable in f (bf16 or fp16; packed exactly, a value that is not is rounded to
    // nearest even first). Only when nativelySupported(f). Blocks of C's rows or columns run
    // on the pool's threads, one single-threaded oneDNN call each (never K: each element
    // is one call's sum, whichever thread computes it). False, with C untouched, when
    // oneDNN has no primitive for the shape or K is 0 (the caller runs the exact arithmetic).
    [[nodiscard]] bool run(Format f, Transpose transA, Transpose transB, std::int64_t M, std::int64_t N, std::int64_t K,
             const float* A, std::int64_t lda, const float* B, std::int64_t ldb, float beta, float* C,
             std::int64_t ldc);

    // run on operands already held as f's 16-bit patterns, strided as run's (aLd, bLd),
    // with no packing copy: the same blocks and calls as run makes on their
    // dense copies.
    [[nodiscard]] bool run16(Format f, Transpose transA, Transpose transB, std::int64_t M, std::int64_t N,
                             std::int64_t K, const std::uint16_t* A, std::int64_t aLd, const std::uint16_t* B,
                             std::int64_t bLd, float beta, float* C, std::int64_t ldc);

    // Bytes held for packed operands and oneDNN's scratchpads (workspace).
    std::size_t workspaceBytes() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace plab::cpu
