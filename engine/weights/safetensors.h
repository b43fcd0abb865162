// Weights files in the safetensors format (huggingface/safetensors, the format PyTorch
// users exchange weights in): an 8-byte little-endian header length N, N bytes of JSON
// header {"<name>": {"dtype": "F32", "shape": [32, 1, 3, 3], "data_offsets": [begin,
// end]}, ..., "__metadata__": {"<key>": "<text>"}}, then the tensors' raw little-endian
// bytes, offsets counted from the end of the header. Read with every rule the reference
// implementation enforces (offsets that tile the data exactly, sizes that match shapes),
// so a file this reads is one PyTorch's `safetensors.torch.load_file` reads the same.
#pragma once

#include "tensor/tensor.h"

#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace plab {

// The element types a run holds: fp32 masters and weights, and the 16-bit weights of a
// pure recipe.
enum class WeightDtype { f32, f16, bf16 };
std::string_view weightDtypeName(WeightDtype d);   // "F32", "F16", "BF16"

struct WeightTensor {
    std::string name;            // "conv1.weight"
    WeightDtype dtype = WeightDtype::f32;
    Shape shape;                 // PyTorch's: conv (out, in, kh, kw), linear (out, in)
    std::vector<float> values;   // row-major, each exactly representable in dtype
};

struct WeightsFile {
    std::vector<WeightTensor> tensors;            // in the order written (offsets ascending)
    std::map<std::string, std::string> metadata;  // "__metadata__": text only
};

// The header is at most 100 MB (the reference implementation's limit).
inline constexpr std::uint64_t kMaxSafetensorsHeader = 100'000'000;

// The file's bytes. Throws std::invalid_argument when a value is not exactly
// representable in its tensor's dtype or a shape does not match the value count.
std::string encodeSafetensors(const WeightsFile& w);

// Throws InputError "<origin>: ..." naming the tensor for a truncated file, a header length
// past the end, a header over 100 MB or not UTF-8 JSON, an unknown dtype, a shape whose
// size differs from its byte range, or offsets that overlap, leave gaps or run past the end.
WeightsFile decodeSafetensors(std::string_view bytes, const std::string& origin);

// The file, read whole ("weights <file>" in messages), or written atomically.
WeightsFile readSafetensors(const std::filesystem::path& file);
void writeSafetensors(const std::filesystem::path& file, const WeightsFile& w);

}  // namespace plab
