// Fuzz target: the runs folder's index (.plab-index.json), a cache anyone can edit: read as
// the app reads it at start-up (RunsIndex::load, then each entry's listing), and each listing
// that reads written back and read again. A listing that reads holds values in their ranges
// (an accuracy of 12,300 % had been shown), and what it writes reads back.
#include "fuzz_targets.h"

#include "json/json_input.h"
#include "report/runs_index.h"

#include <cmath>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string_view>

#include <unistd.h>

#include <nlohmann/json.hpp>

namespace {

void checkListing(const nlohmann::json& entry)
{
    plab::RunListing listing;
    try {
        listing = plab::listingFromJson(entry, "entry");
    } catch (const std::exception&) {
        return;   // refused: the app reads the record instead
    }
    for (const double a : {listing.lastAccuracy, listing.bestAccuracy})
        if (!std::isnan(a) && !(a >= 0.0 && a <= 1.0)) std::abort();
    if (listing.skippedSteps > listing.steps || listing.stepMs < 0 || listing.imagesPerSecond < 0) std::abort();
    try {
        (void)plab::listingFromJson(plab::listingToJson(listing), "written back");
    } catch (const std::exception&) {
        std::abort();   // what the index writes, it reads
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    nlohmann::json doc;
    try {
        doc = plab::parseJsonInput(text, "index");
    } catch (const std::exception&) {
        return 0;
    }
    if (doc.is_object() && doc.contains("records") && doc["records"].is_object())
        for (const auto& [name, entry] : doc["records"].items())
            if (entry.is_object() && entry.contains("listing")) checkListing(entry["listing"]);
    checkListing(doc);
    // The loader itself, from a file as the app reads it.
    static const std::filesystem::path folder = [] {
        auto dir = std::filesystem::temp_directory_path() / ("plab-fuzz-index-" + std::to_string(::getpid()));
        std::filesystem::create_directories(dir);
        return dir;
    }();
    {
        std::ofstream out(folder / plab::kRunsIndexFileName, std::ios::binary | std::ios::trunc);
        out.write(text.data(), static_cast<std::streamsize>(text.size()));
    }
    try {
        const plab::RunsIndex index = plab::RunsIndex::load(folder);
        (void)index.size();
    } catch (const std::exception&) {
        std::abort();   // an unusable index is an empty one, never an error
    }
    return 0;
}
