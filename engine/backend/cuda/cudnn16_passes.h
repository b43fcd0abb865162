// Which packed convolution passes the CUDA backend hands to cuDNN on 16-bit data
// (cuda_conv16.h): PLAB_CUDNN_16 names them, a comma-separated list of "forward", "data"
// (the input gradient) and "filter"; unset, empty or "none" names none. (Telemetry sampled
// sends all three to cuDNN at the steps between snapshots whatever it says.) Host code
// without CUDA headers, checked by tst_cuda_kernel_math.
#pragma once

#include <stdexcept>
#include <string>

namespace plab::cuda {

inline constexpr const char* kCudnn16Variable = "PLAB_CUDNN_16";

struct Cudnn16Passes {
    bool forward = false, data = false, filter = false;
};

// The passes a value of the variable names; anything else (an unknown word, an empty
// word) throws std::invalid_argument naming the variable and the value.
inline Cudnn16Passes cudnn16Passes(const char* value)
{
    Cudnn16Passes passes;
    const std::string text = value ? value : "";
    if (text.empty() || text == "none") return passes;
    std::size_t start = 0;
    for (;;) {
        const std::size_t comma = text.find(',', start);
        const std::string word = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        if (word == "forward")
            passes.forward = true;
        else if (word == "data")
            passes.data = true;
        else if (word == "filter")
            passes.filter = true;
        else
            throw std::invalid_argument(std::string(kCudnn16Variable) + " is \"" + text +
                                        "\"; it takes \"forward\", \"data\", \"filter\", a comma-separated "
                                        "list of them, or \"none\"");
        if (comma == std::string::npos) return passes;
        start = comma + 1;
    }
}

}  // namespace plab::cuda
