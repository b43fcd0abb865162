// splitmix64 (Steele, Lea, Flood 2014) and uniform initialisation from it.
#include "nn/init.h"

#include "nn/layer.h"

#include <cmath>

namespace plab {

std::uint64_t SplitMix64::next()
{
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

double SplitMix64::uniform01() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

void fillUniform(Tensor& t, double bound, SplitMix64& rng)
{
    for (std::int64_t i = 0; i < t.size(); ++i)
        t[i] = static_cast<float>((2.0 * rng.uniform01() - 1.0) * bound);
}

SplitMix64 layerGenerator(std::uint64_t seed, int layerIndex)
{
    SplitMix64 mix(seed ^ (0xd1b54a32d192ed03ull * static_cast<std::uint64_t>(layerIndex + 1)));
    return SplitMix64(mix.next());
}

void Layer::initialize(std::uint64_t seed, int& layerIndex)
{
    const auto params = parameters();
    if (params.empty()) return;
    const Tensor& weight = params[0]->value;
    const std::int64_t fanIn = weight.size() / weight.dim(0);
    const double bound = 1.0 / std::sqrt(static_cast<double>(fanIn));
    SplitMix64 rng = layerGenerator(seed, layerIndex++);
    for (Parameter* p : params) fillUniform(p->value, bound, rng);
}

}  // namespace plab
