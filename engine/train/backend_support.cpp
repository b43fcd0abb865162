// What a backend can run of a recipe, and in which arithmetic (see backend_support.h).
#include "train/backend_support.h"

#include "nn/layer_ops.h"

#include <algorithm>

namespace plab {

namespace {

bool listed(const std::vector<Format>& formats, Format f)
{
    return std::find(formats.begin(), formats.end(), f) != formats.end();
}

// What the backend cannot do of one layer's switches (the whole recipe's without a list).
std::string switchesProblem(const PrecisionRecipe& recipe, const BackendInfo& info)
{
    const std::string backend = "the " + backendDisplayName(info.name) + " backend";
    const std::string format(formatName(recipe.compute));
    if (!listed(info.capabilities.compute, recipe.compute)) {
        const std::string& why = info.capabilities.limitation;
        return backend + " cannot compute in " + format + (why.empty() ? "" : " (" + why + ")");
    }
    if (!recipe.fp32Accumulate && recipe.compute != Format::fp32 &&
        !listed(info.capabilities.sumsInCompute, recipe.compute))
        return backend + " cannot accumulate in " + format + "; turn fp32 accumulation on" +
               (info.name == "cpu" ? "" : ", or use the CPU backend, which emulates it");
    const std::string mode(quantModeName(recipe.quantization.mode));
    if (recipe.quantization.on() && !info.capabilities.quantizes)
        return backend + " cannot quantise matmul/conv inputs below 16 bits (" + mode +
               "); use the CPU backend, which emulates it";
    if (recipe.quantization.blockScaled() && !info.capabilities.quantizesBlocks) {
        const std::string& why = info.capabilities.blocksLimitation;
        return backend + " cannot quantise in blocks (" + mode + (why.empty() ? "" : ": " + why) +
               "); use the CPU backend, which emulates it";
    }
    return {};
}

}  // namespace

std::string recipeProblem(const PrecisionRecipe& recipe, const BackendInfo& info)
{
    if (auto problem = switchesProblem(recipe.forLayer({}), info); !problem.empty()) return problem;
    for (const LayerPrecision& l : recipe.layers)
        if (auto problem = switchesProblem(recipe.forLayer(l.layer), info); !problem.empty())
            return "layer " + l.layer + " (" + l.precision + "): " + problem;
    return {};
}


namespace {

// The record's arithmetic phrase: the backend's for the recipe's GEMMs. Quantised operands
// are emulated (their dequantised values multiplied on fp32 arithmetic) unless the backend
// multiplies FP8 codes itself (the CUDA backend's cuBLASLt FP8 GEMMs), which its phrase for
// FP8 operands then says.
std::string switchesArithmetic(const PrecisionRecipe& recipe, const ComputeBackend& backend)
{
    const StepPrecision p = StepPrecision::of(recipe);
    const GemmPrecision gemm = p.gemm();
    if (!recipe.quantization.on() || !gemm.fp32Accumulate) return backend.arithmeticFor(gemm);
    const std::string emulated = backend.arithmeticFor(gemm);
    if (!recipe.quantization.blockScaled()) {
        GemmPrecision fp8 = gemm;   // the forward pass's operands
        fp8.a = {true, quantizedFormat(p.quant, OperandRole::input)};
        fp8.b = {true, quantizedFormat(p.quant, OperandRole::weight)};
        if (std::string native = backend.arithmeticFor(fp8); native != emulated) return native;
    }
    return "exact: " + std::string(quantModeName(recipe.quantization.mode)) +
           " operands held dequantised in fp32, multiplied and summed in fp32 (" + emulated + ")";
}

}  // namespace

// With per-layer precision, each layer whose arithmetic differs is named after the recipe's.
std::string arithmeticOf(const PrecisionRecipe& recipe, const ComputeBackend& backend)
{
    const std::string common = switchesArithmetic(recipe.forLayer({}), backend);
    std::string out = common;
    for (const LayerPrecision& l : recipe.layers)
        if (auto own = switchesArithmetic(recipe.forLayer(l.layer), backend); own != common)
            out += "; layer " + l.layer + ": " + own;
    return out;
}

}  // namespace plab
