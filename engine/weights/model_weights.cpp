// Model parameters <-> safetensors tensors (see model_weights.h).
#include "weights/model_weights.h"

#include "error.h"

#include <algorithm>
#include <set>

namespace plab {

namespace {

std::string tensorName(const Parameter& p) { return p.layer + "." + p.name; }

const WeightTensor* find(const WeightsFile& w, const std::string& name)
{
    const auto it = std::find_if(w.tensors.begin(), w.tensors.end(), [&](const WeightTensor& t) { return t.name == name; });
    return it == w.tensors.end() ? nullptr : &*it;
}

}  // namespace

WeightsFile modelWeights(Model& model)
{
    WeightsFile w;
    for (Parameter* p : model.parameters()) {
        const Tensor& held = p->stored();
        WeightDtype dtype = WeightDtype::f32;
        if (&held == &p->value && held.storage() == Format::fp16) dtype = WeightDtype::f16;
        if (&held == &p->value && held.storage() == Format::bf16) dtype = WeightDtype::bf16;
        w.tensors.push_back({tensorName(*p), dtype, held.shape(), held.toHost()});
    }
    std::string widths;
    for (int v : model.spec().widths) {
        if (!widths.empty()) widths += ',';
        widths += std::to_string(v);
    }
    w.metadata = {{"format", "pt"}, {"producer", "Precision Lab"}, {"model", model.spec().kind}};
    if (!widths.empty()) w.metadata["widths"] = widths;
    return w;
}

void checkWeightsFit(Model& model, const WeightsFile& w, const std::string& origin)
{
    std::set<std::string> expected;
    for (Parameter* p : model.parameters()) {
        const std::string name = tensorName(*p);
        expected.insert(name);
        const WeightTensor* t = find(w, name);
        if (!t)
            throw InputError(origin + ": no tensor '" + name + "' (model " + model.spec().kind + " has " +
                             shapeString(p->value.shape()) + " there)");
        if (t->shape != p->value.shape())
            throw InputError(origin + ": tensor '" + name + "' has shape " + shapeString(t->shape) + ", model " +
                             model.spec().kind + " needs " + shapeString(p->value.shape()));
    }
    for (const WeightTensor& t : w.tensors)
        if (!expected.count(t.name))
            throw InputError(origin + ": tensor '" + t.name + "' is not a parameter of model " + model.spec().kind);
}

void loadWeights(Model& model, const WeightsFile& w, const std::string& origin)
{
    checkWeightsFit(model, w, origin);
    for (Parameter* p : model.parameters()) {
        const WeightTensor& t = *find(w, tensorName(*p));
        p->value.assignFromHost(t.values.data(), static_cast<std::int64_t>(t.values.size()));
    }
}

}  // namespace plab
