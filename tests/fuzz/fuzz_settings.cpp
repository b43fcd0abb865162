// Fuzz target: a config, as `plab train --config` and the app read it (size- and
// depth-limited JSON, then every key validated).
#include "fuzz_targets.h"

#include "json/json_input.h"
#include "train/settings.h"

#include <exception>
#include <string_view>

#include <nlohmann/json.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    try {
        const auto doc = plab::parseJsonInput(std::string_view(reinterpret_cast<const char*>(data), size), "config",
                                              plab::JsonLimits{std::size_t{16} << 20, 64});
        const plab::TrainSettings s = plab::settingsFromJson(doc, "config");
        (void)plab::settingsToJson(s).dump();   // what is accepted can be written back
    } catch (const std::exception&) {
        // Refused with a sentence: what a bad config gets.
    }
    return 0;
}
