// One training step as the app's charts and the reports read it: from a live StepEvent
// or from a run record's "steps" (the one type for both).
#pragma once

#include "train/events.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

namespace plab {

struct StepPoint {
    std::int64_t step = 0;
    int epoch = 0;
    std::optional<double> loss;    // empty when the loss was not finite
    double lossScale = 1.0;
    bool skipped = false;
    double lr = 0.0;
    int batch = 0;
    double timeMs = 0.0;
    std::vector<NonFiniteSite> nonFinite;   // a skipped step's sites (StepEvent::nonFinite)

    bool operator==(const StepPoint&) const = default;
    double lossOrNaN() const { return loss.value_or(std::numeric_limits<double>::quiet_NaN()); }
    static StepPoint of(const StepEvent& e)
    {
        return {e.step,      e.epoch, std::isfinite(e.loss) ? std::optional<double>(e.loss) : std::nullopt,
                e.lossScale, e.skipped, e.lr, e.batch, e.timeMs, e.nonFinite};
    }
};

}  // namespace plab
