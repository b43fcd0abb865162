// Fuzz target: a run record, as the app's run store replays it and `plab report` digests it.
#include "fuzz_targets.h"

#include "json/json_input.h"
#include "report/record_replay.h"
#include "report/run_comparison.h"

#include <exception>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    nlohmann::json doc;
    try {
        doc = plab::parseJsonInput(std::string_view(reinterpret_cast<const char*>(data), size), "record");
    } catch (const std::exception&) {
        return 0;
    }
    try {
        (void)plab::replayRecord(doc, "record");
    } catch (const std::exception&) {
    }
    try {
        (void)plab::digestRunRecord(doc, "record");
    } catch (const std::exception&) {
    }
    return 0;
}
