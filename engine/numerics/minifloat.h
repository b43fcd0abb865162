// Formats below 16 bits: the OCP 8-bit floating point formats E4M3 and E5M2
// (OFP8 revision 1.0) and the element formats of OCP Microscaling (MX v1.0): FP6 E2M3,
// FP6 E3M2 and FP4 E2M1. Exact scalar conversions from fp32: round to nearest, ties to
// even, subnormals kept; a value too large for the format either saturates to the largest
// finite value of its sign or becomes the format's non-finite value (E5M2: +-inf, E4M3:
// NaN; FP6 and FP4 have none and always saturate). Every value is held in fp32 exactly.
//
//   format    bias  largest finite  smallest subnormal  inf  NaN
//   E4M3       7    448             2^-9                no   S.1111.111
//   E5M2      15    57344           2^-16               yes  S.11111.{01,10,11}
//   FP6 E2M3   1    7.5             2^-3                no   no
//   FP6 E3M2   3    28              2^-4                no   no
//   FP4 E2M1   1    6               2^-1                no   no
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <span>
#include <vector>

namespace plab {

enum class MiniFormat : std::uint8_t { e4m3, e5m2, e2m3, e3m2, e2m1 };

struct MiniFormatInfo {
    MiniFormat format;
    std::string_view name;    // "e4m3", "e5m2", "fp6-e2m3", "fp6-e3m2", "fp4-e2m1"
    int exponentBits;
    int mantissaBits;
    int bias;
    bool hasInf;              // E5M2 only
    bool hasNaN;              // E4M3 (S.1111.111) and E5M2
    double maxFinite;
    int minNormalLog2;        // 1 - bias
    int minSubnormalLog2;     // 1 - bias - mantissaBits
    int bits() const { return 1 + exponentBits + mantissaBits; }
};

const MiniFormatInfo& miniFormatInfo(MiniFormat f);
std::span<const MiniFormatInfo> miniFormats();   // in the order of the MiniFormat enum
std::optional<MiniFormat> parseMiniFormat(std::string_view name);   // the names above

enum class Overflow : std::uint8_t {
    saturate,    // to the largest finite value of the sign (infinities too)
    nonFinite,   // to +-inf (E5M2) or NaN (E4M3); FP6 and FP4 saturate (they have neither)
};

// The bit pattern (in the low bits()) of x rounded to f. A NaN gives the format's NaN
// (E4M3 S.1111.111, E5M2 S.11111.11) and nullopt for FP6/FP4, which cannot hold one.
std::optional<std::uint8_t> encodeMini(MiniFormat f, float x, Overflow overflow);
// The value of a bit pattern (its low bits()); NaN for the NaN patterns.
float decodeMini(MiniFormat f, std::uint8_t bits);
// x rounded to f as the fp32 value that represents it exactly (NaN where f has none).
float roundToMini(MiniFormat f, float x, Overflow overflow);

// ---- OCP Microscaling (MX v1.0): blocks of 32 elements sharing one E8M0 scale --------

inline constexpr int kMxBlockSize = 32;

// The MX formats by the names `plab convert` takes, with their element formats (OCP MX
// v1.0 names MXFP8 in both FP8 encodings, MXFP6 in both FP6 ones, and MXFP4).
struct MxFormatInfo {
    std::string_view name;   // "mxfp8", "mxfp8-e5m2", "mxfp6-e2m3", "mxfp6-e3m2", "mxfp4"
    MiniFormat element;
};
std::span<const MxFormatInfo> mxFormats();

// The largest power of two of the element format's normals (emax): E4M3 8, E5M2 15,
// FP6 E2M3 2, FP6 E3M2 4, FP4 E2M1 2.
int mxElementEmax(MiniFormat f);

struct MxBlock {
    bool nanScale = false;       // a NaN or infinity in the block: the scale is E8M0's NaN (0xff)
    int scaleExponent = -127;    // X = 2^scaleExponent, in [-127, 127] (E8M0 bits: + 127)
    std::vector<float> elements; // P_i in the element format (NaN for all when nanScale)
    std::uint8_t scaleBits() const { return nanScale ? 0xff : static_cast<std::uint8_t>(scaleExponent + 127); }
    float value(std::size_t i) const;   // X * P_i, exactly (NaN when nanScale)
};

// How an MX block's shared exponent is rounded. floor: the OCP MX v1.0 reference,
// floor(log2(amax)) - emax, which leaves the block's largest value in [2^emax,
// 2^(emax+1)), above the largest finite of E4M3 (448), E5M2, FP6 and FP4, where it
// saturates. ceil: Transformer Engine's MXFP8, the smallest exponent whose scale keeps the
// amax within the element's largest finite (ceil(log2(amax / largest finite))), so nothing
// saturates; TE computes amax * (1 / largest) in fp32 and rounds its exponent up, which can
// differ from this exact rule only where amax / largest lies within an fp32 rounding of a
// power of two.
enum class MxScaleRounding : std::uint8_t { floor, ceil };
std::string_view mxScaleRoundingName(MxScaleRounding r);   // "floor", "ceil"
std::optional<MxScaleRounding> parseMxScaleRounding(std::string_view name);

// The MX v1.0 conversion of one block (at most kMxBlockSize values): the shared exponent
// floor(log2(max |V_i|)) - emax of the element format (rounding ceil: the smallest e with
// max |V_i| / 2^e <= the element's largest finite), clamped to E8M0's [-127, 127] (-127 for
// a block of zeros), then each V_i / X rounded to the element format, to nearest even,
// saturating to its largest finite value.
MxBlock mxQuantize(MiniFormat element, const float* values, std::size_t count,
                   MxScaleRounding rounding = MxScaleRounding::floor);

// ---- NVFP4 (NVIDIA Blackwell): blocks of 16 FP4 E2M1 elements, an E4M3 block scale and
// one fp32 scale for the whole tensor. Written from Transformer Engine's definition
// (transformer_engine/common/cast/nvfp4/core_nvfp4.cuh), every step in fp32:
//   S_enc  = 448 * 6 / amax(tensor), fp32's largest finite where that overflows, 1 for a
//            tensor of zeros or one whose amax is infinite or NaN (the tensor tells nothing);
//   S_b    = e4m3(amax(block) * (S_enc * (1/6))), round to nearest even, saturating;
//   P_i    = e2m1(V_i * min(1 / (S_b * (1 / S_enc)), fp32 max)), saturating;
//   value  = (P_i * S_b) / S_enc   (P_i * S_b is exact, so the value is the dequantised
//            one rounded once to fp32; cuBLASLt applies 1 / S_enc with its alpha instead).
// A block whose S_b rounds to 0 holds zeros (Transformer Engine's elements there are
// multiplied by 0 all the same). A block holding a NaN or an infinity is NaN throughout, as an MX block with a NaN scale
// (Transformer Engine's kernel would saturate an infinity; the emulation keeps it visible,
// so that loss scaling sees the overflow).

inline constexpr int kNvfp4BlockSize = 16;

float nvfp4TensorScale(float tensorAmax);

struct Nvfp4Block {
    bool nanScale = false;        // a NaN or an infinity in the block
    std::uint8_t scaleBits = 0;   // S_b's E4M3 pattern (0x7f, E4M3's NaN, when nanScale)
    float blockScale = 0.0f;      // S_b's value (0: the block's values all underflowed)
    float tensorScale = 1.0f;     // S_enc
    std::vector<float> elements;  // P_i in FP4 E2M1 (NaN for all when nanScale)
    float value(std::size_t i) const;
    // The factor each element is multiplied by, S_b * (1 / S_enc) in fp32 (NaN when nanScale).
    float decodeScale() const;
};

// One block (at most kNvfp4BlockSize values) of a tensor whose encode scale is tensorScale.
Nvfp4Block nvfp4Quantize(const float* values, std::size_t count, float tensorScale);

}  // namespace plab
