// A recorded recipe (a run record's "recipe" object, docs/RUN_RECORD.md) in words, for the
// comparison of runs and the report.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <string>

namespace plab {

// "AMP FP16", or for a custom recipe the preset's name and each switch that differs from the
// preset: "Pure BF16 with Kahan-compensated updates", "AMP FP16 without loss scaling".
std::string recipePhraseOf(const nlohmann::json& recipe);

// The optimizer state's format by PyTorch's rule, its parameter's dtype: fp32 beside master
// weights, else the storage format (what records before the state was set apart imply).
std::string optimizerStateByRule(const nlohmann::json& recipe);

}  // namespace plab
