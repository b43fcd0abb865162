// The one smoothing of a loss curve, shared by the app's charts and the reports (and the
// same as TensorBoard's): a bias-corrected exponential moving average. Qt-free.
#pragma once

#include "train/events.h"

#include <span>
#include <vector>

namespace plab {

// The smoothing weight the app starts with and a report uses unless told otherwise.
inline constexpr double kDefaultSmoothing = 0.95;
// The largest weight the app's slider and `plab report --smoothing` accept.
inline constexpr double kMaxSmoothing = 0.999;

// out[i] smooths values[0..i]: average = w * average + (1 - w) * x over the finite values,
// divided by 1 - w^n (the bias correction, so the curve does not start from 0). NaN/inf
// inputs are skipped (their output is NaN) and do not disturb it. weight in [0, 1): 0
// keeps the raw values.
std::vector<double> exponentialMovingAverage(std::span<const double> values, double weight);

// The training loss of each step smoothed so (a step whose loss was not finite: NaN), as
// the app's loss chart and the reports draw it.
std::vector<double> smoothedLosses(std::span<const StepEvent> steps, double weight);

}  // namespace plab
