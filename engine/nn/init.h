// Seeded weight initialisation, identical on every machine: a splitmix64 generator (not
// the standard distributions, whose algorithms are implementation-defined) and PyTorch's
// default init for Conv2d and Linear: kaiming_uniform(a = sqrt(5)) for the weights, which
// is U(-1/sqrt(fan_in), 1/sqrt(fan_in)), and the same bound for the biases.
#pragma once

#include "tensor/tensor.h"

#include <cstdint>

namespace plab {

class SplitMix64 {
public:
    explicit SplitMix64(std::uint64_t seed) : state_(seed) {}
    std::uint64_t next();
    double uniform01();   // [0, 1) with 53 random bits

private:
    std::uint64_t state_;
};

// Fills t with U(-bound, bound), each value computed in double and rounded to fp32 once.
void fillUniform(Tensor& t, double bound, SplitMix64& rng);

// The generator of layer `layerIndex` for a model seed: independent streams, so changing
// one layer's width leaves the other layers' initial weights as they were.
SplitMix64 layerGenerator(std::uint64_t seed, int layerIndex);

}  // namespace plab
