// Learning-rate schedules: a linear warm-up over the first updates, then the
// base rate held (constant) or lowered along a half cosine towards 0 over the planned updates,
// as vision transformers are trained (Dosovitskiy et al. 2021: a linear warm-up, then a
// cosine or linear decay); scripts/vit_recipe_search.py's lr_at is the same rule in PyTorch.
// Every update counts, including those a loss scaler skips, as a scheduler stepped once per
// iteration does.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace plab {

enum class LrShape { constant, cosine };

struct LrSchedule {
    LrShape shape = LrShape::constant;
    std::int64_t warmupSteps = 0;   // updates of linear warm-up (0: none)
    // Whether it changes the rate at all: the default holds the base rate throughout.
    bool varies() const { return shape != LrShape::constant || warmupSteps > 0; }
    bool operator==(const LrSchedule&) const = default;
};

std::string_view lrShapeName(LrShape shape);
std::optional<LrShape> parseLrShape(std::string_view name);

// The rate of update `step` (0 for the first) of `total` planned: base * (step + 1) / warmup
// during the warm-up; then base (constant), or base * (1 + cos(pi * f)) / 2 with f =
// (step - warmup) / (total - warmup) the fraction of the rest done (cosine). Updates past
// `total` (a run resumed or extended) keep the last rate of the cosine, 0.
double scheduledLr(double base, const LrSchedule& schedule, std::int64_t step, std::int64_t total);

}  // namespace plab
