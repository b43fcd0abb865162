// The format whose regions (flushed, subnormal, normal, overflow) a run's histogram of one
// tap is judged in. The app's histogram chart and the report's histogram both ask here, so
// a per-layer recipe shades a layer in the same format in both.
#pragma once

#include "telemetry/format_regions.h"
#include "telemetry/telemetry.h"
#include "train/settings.h"

#include <string>

namespace plab {

// The layer's compute format, or for a quantised kind the element format the layer's
// recipe gave those values to. With per-layer precision the input is rounded as the first
// layer with weights and the loss gradient as the logits, the last layer's output.
RegionFormat regionFormatFor(const TrainSettings& settings, const std::string& layer, TensorKind kind);
// The same, unless a probe record names the format its telemetry judged against
// (RunRecord::judgedFormat, "" for the lab's own runs): then that one, for every site.
RegionFormat regionFormatFor(const TrainSettings& settings, const std::string& judgedFormat, const std::string& layer,
                             TensorKind kind);

}  // namespace plab
