// The plain-language summary of a report: short sentences generated only from what the
// compared run records show (accuracy, divergence, non-finite weights, underflow with and
// without loss scaling, lost updates, skipped steps and the loss scale, memory,
// throughput), plus facts of the number formats themselves (e.g. whether Adam's eps is
// 0 in fp16). Nothing is said that the data does not support. Qt-free.
#pragma once

#include "report/run_comparison.h"

#include <string>
#include <vector>

namespace plab {

struct SummarySentence {
    std::string topic;   // "accuracy", "divergence", "underflow", "lost_updates", "loss_scale", "memory", "throughput"
    std::string text;    // one sentence, ending with a full stop
};

std::vector<SummarySentence> summarizeRuns(const RunComparison& comparison);

}  // namespace plab
