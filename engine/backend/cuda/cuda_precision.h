// What a device can do (its compute capability) and how the GPU sums the products of a
// GEMM or a convolution for each GemmPrecision: shared by the cuBLAS GEMM (cuda_gemm.cpp,
// which defines choosePath) and the cuDNN convolutions (cuda_conv.cpp), so that both
// follow one rule and refuse with one wording.
#pragma once

#include "backend/backend.h"

#include <string_view>

namespace plab::cuda {

// What a device can do, from its compute capability.
struct DeviceCapability {
    int major = 0;
    int minor = 0;
    bool bf16() const { return major >= 8; }   // bf16 tensor-core GEMM: Ampere and newer
    bool tf32() const { return major >= 8; }   // tf32 tensor cores: Ampere and newer
    bool fp8() const { return major > 8 || (major == 8 && minor >= 9); }   // FP8 tensor cores: Ada, Hopper, newer
};

// Whether a GEMM of p runs on FP8 codes through cuBLASLt (cuda_fp8.cpp): both operands
// FP8 with per-tensor scales, fp32 accumulation, a device of compute capability 8.9 or
// newer, and not E5M2 by E5M2 (which cuBLASLt has no kernel for). Otherwise FP8 operands
// are read as the dequantised fp32 values they also are (fp32Strict, the CPU's emulation).
// The convolutions of such a p are refused, so that the layer lowers them to these GEMMs.
bool runsFp8(const GemmPrecision& p, DeviceCapability cap);

// The kernels' number of a packed tensor's format, fp16 or bf16 (cuda_packed_ops.cpp), and
// of FP8 codes' element, E4M3 or E5M2 (cuda_fp8.cpp); std::invalid_argument naming the op
// `what` for any other.
int format16(Format f, const char* what);
int fp8Format(MiniFormat f, const char* what);

// The arithmetic a GemmPrecision asks of the GPU:
//   fp32 (either accumulation)  -> fp32Strict: fp32 FMAs, no TF32
//   tf32, fp32 accumulation     -> tf32: tensor cores on tf32 operands, fp32-wide sums
//   fp16 / bf16, fp32 accum.    -> bits16Fp32Accumulate: 16-bit operands, fp32-wide sums
//   fp16, fp16 accumulation     -> fp16Accumulate: fp16 sums without tensor cores (cuBLAS's
//                                  pedantic fp16, cuDNN's FMA math), in the library's order
//                                  of additions, not the CPU's
// The tensor cores' products of tf32, fp16 and bf16 values are exact, but their fp32
// accumulation is not IEEE round-to-nearest after every addition (Fasi et al., "Numerical
// behavior of NVIDIA tensor cores", 2021): see cuda_gemm.cpp and cuda_conv.cpp.
enum class GemmPath { fp32Strict, tf32, bits16Fp32Accumulate, fp16Accumulate };

// The path for p on a device of capability cap, or a std::runtime_error saying why the GPU
// cannot do it: "the GPU has no bf16 accumulation; ..." (neither bf16 nor tf32 sums exist
// in cuBLAS, cuDNN or the hardware), or bf16/tf32 before compute capability 8.0.
// `products` names the op in the message: "GEMMs", "convolutions".
GemmPath choosePath(GemmPrecision p, DeviceCapability cap, std::string_view products);

}  // namespace plab::cuda
