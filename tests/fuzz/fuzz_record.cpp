// Fuzz target: a run record, read as every reader reads it (readRunRecord), then replayed as
// the app's run store does and digested as `plab report` does.
#include "fuzz_targets.h"

#include "json/json_input.h"
#include "record/run_record.h"
#include "report/run_comparison.h"
#include "report/runs_index.h"

#include <exception>
#include <string_view>

#include <nlohmann/json.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    nlohmann::json doc;
    try {
        doc = plab::parseJsonInput(std::string_view(reinterpret_cast<const char*>(data), size), "record");
    } catch (const std::exception&) {
        return 0;
    }
    try {
        const plab::RunRecord record = plab::readRunRecord(doc, "record");
        (void)plab::listingOf(record);
        (void)plab::runRecordToJson(record);
        (void)plab::digestRunRecord(record, "record");
    } catch (const std::exception&) {
    }
    return 0;
}
