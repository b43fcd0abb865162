// The learning-rate schedules of lr_schedule.h.
#include "optim/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace plab {

std::string_view lrShapeName(LrShape shape)
{
    return shape == LrShape::cosine ? "cosine" : "constant";
}

std::optional<LrShape> parseLrShape(std::string_view name)
{
    if (name == "constant") return LrShape::constant;
    if (name == "cosine") return LrShape::cosine;
    return std::nullopt;
}

double scheduledLr(double base, const LrSchedule& schedule, std::int64_t step, std::int64_t total)
{
    step = std::max<std::int64_t>(step, 0);
    const std::int64_t warmup = std::max<std::int64_t>(schedule.warmupSteps, 0);
    if (step < warmup) return base * static_cast<double>(step + 1) / static_cast<double>(warmup);
    if (schedule.shape == LrShape::constant) return base;
    const double rest = static_cast<double>(std::max<std::int64_t>(1, total - warmup));
    const double done = std::min(1.0, static_cast<double>(step - warmup) / rest);
    return base * 0.5 * (1.0 + std::cos(std::numbers::pi * done));
}

}  // namespace plab
