// read_bench: reading long run records, a large runs index and a hostile document
// (issue 66, finding 5), as time per megabyte across sizes (flat = linear).
//   read_bench [--repeats 5] [--folder DIR]
// Writes synthetic records of 10k, 100k and 400k steps (every step's fields, an evaluation
// every 1,000 steps, telemetry of 8 layers every 1,000), a runs index of 300,000 entries and
// a document of 400,000 empty objects into DIR (default: a temporary folder), then times, as
// medians of --repeats: the JSON parse (parseJsonInput, nlohmann's SAX DOM builder behind a
// depth counter), the whole read of a record (loadRunRecord: parse and typed record) and the
// index's load, and a recorder's write of each record (typed record to JSON to text) beside
// the text alone. Side by side in the same run, the parse the lab used before (nlohmann's
// callback parser with the same depth guard), on the sizes where it ends in reasonable time.
#include "json/json_input.h"
#include "record/run_record.h"
#include "report/runs_index.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

double medianMs(int repeats, const std::function<void()>& f)
{
    std::vector<double> ms;
    for (int i = 0; i < repeats; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        f();
        ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
}

std::string slurp(const fs::path& f)
{
    std::ifstream in(f, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

// The parse before issue 66: the callback parser, whose end of every object searched the
// enclosing one for discarded values.
json callbackParse(const std::string& text)
{
    const json::parser_callback_t guard = [](int depth, json::parse_event_t, json&) {
        if (depth > 64) throw std::runtime_error("too deep");
        return true;
    };
    return json::parse(text.begin(), text.end(), guard);
}

void writeRecord(const fs::path& file, int steps)
{
    std::ofstream out(file, std::ios::binary);
    out << R"({"format_version": 1, "name": "long run", "created_at": "2026-11-28T12:00:00Z", )"
        << R"("settings": {"recipe": "amp-fp16", "model": "small-cnn"}, "backend": {"name": "cpu"}, "steps": [)";
    for (int s = 1; s <= steps; ++s)
        out << (s > 1 ? "," : "") << R"({"step": )" << s << R"(, "epoch": )" << s / 1875 << R"(, "loss": )"
            << 2.3 / (1.0 + s * 1e-3) << R"(, "loss_scale": 65536.0, "skipped": false, "lr": 0.001, "batch": 32, "time_ms": 4.25})";
    out << R"(], "evals": [)";
    for (int s = 1000, n = 0; s <= steps; s += 1000, ++n)
        out << (n ? "," : "") << R"({"step": )" << s << R"(, "epoch": 0, "test_accuracy": 0.97, "test_loss": 0.1})";
    out << R"(], "telemetry": [)";
    for (int s = 1000, n = 0; s <= steps; s += 1000, ++n) {
        out << (n ? "," : "") << R"({"step": )" << s << R"(, "loss_scale": 65536.0, "layers": [)";
        for (int l = 0; l < 8; ++l)
            out << (l ? "," : "") << R"({"layer": "layer)" << l << R"(", "kind": "weight_grad", "stats": {"count": 4096, )"
                << R"("zeros_in": 12, "underflow": 40, "subnormal": 3, "overflow": 0, "nan": 0, "inf_in": 0}, )"
                << R"("histogram": {"first_exponent": -30, "counts": [1, 4, 9, 30, 120, 400, 900, 1300, 900, 300, 100, 20]}, )"
                << R"("lost_updates": 30, "nonzero_updates": 4000, "non_finite_updates": 0})";
        out << "]}";
    }
    out << R"(], "events": [], "memory": {"samples": [], "peak": {"total": 1000}}, )"
        << R"("summary": {"status": "completed", "steps": )" << steps << R"(, "skipped_steps": 0, "test_accuracy": 0.97}})";
}

// An index as the app writes it, each listing of a run whose settings name only its recipe
// (what a record of an older build holds; the app's own list every key, about 1.3 KB more).
void writeIndex(const fs::path& folder, int entries)
{
    const std::string listing =
        R"({"name": "AMP FP16 12:00:00", "settings": {"recipe": "amp-fp16"}, "status": "completed", "message": "", )"
        R"("unfinished": false, "steps": 938, "planned_steps": 938, "skipped_steps": 3, "images": 30016, )"
        R"("step_ms": 4.2, "images_per_second": 7000.0, "last_accuracy": 0.97, "best_accuracy": 0.97, )"
        R"("backend": "cpu", "versions": [], "arithmetic": "exact", "changes": [], "refusals": []})";
    std::ofstream out(folder / plab::kRunsIndexFileName, std::ios::binary);
    out << R"({"format": "precision-lab runs index", "version": 1, "records": {)";
    for (int i = 0; i < entries; ++i)
        out << (i ? "," : "") << "\"run-" << i << R"(.json": {"size": 1000, "modified_ns": 1, "inode": )" << i
            << R"(, "listing": )" << listing << '}';
    out << "}}";
}

}  // namespace

int main(int argc, char** argv)
{
    int repeats = 5;
    fs::path folder;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string a = argv[i];
        if (a == "--repeats") repeats = std::max(1, std::atoi(argv[i + 1]));
        else if (a == "--folder") folder = argv[i + 1];
    }
    if (folder.empty()) folder = fs::temp_directory_path() / "plab-read-bench";
    fs::create_directories(folder);

    std::printf("%-34s %9s %12s %10s %12s %12s\n", "input", "MB", "parse ms", "ms/MB", "read ms", "before ms/MB");
    for (const int steps : {10000, 100000, 400000}) {
        const fs::path file = folder / ("record-" + std::to_string(steps) + ".json");
        writeRecord(file, steps);
        const std::string text = slurp(file);
        const double mb = static_cast<double>(text.size()) / 1e6;
        const double parse = medianMs(repeats, [&] { (void)plab::parseJsonInput(text, "record"); });
        const double read = medianMs(repeats, [&] { (void)plab::loadRunRecord(file); });
        const plab::RunRecord record = plab::loadRunRecord(file);
        // A recorder's write of it (once a second as a run goes): the typed record as JSON,
        // then its text; side by side, the text alone (the recorder kept a JSON document
        // until 2026-11-29 and wrote only that).
        const json document = plab::runRecordToJson(record);
        const double write = medianMs(repeats, [&] { (void)plab::runRecordToJson(record).dump(1); });
        const double dumpOnly = medianMs(repeats, [&] { (void)document.dump(1); });
        double before = -1.0;
        if (steps <= 100000) before = medianMs(std::min(repeats, 3), [&] { (void)callbackParse(text); }) / mb;
        std::printf("%-34s %9.2f %12.1f %10.1f %12.1f %12s   (written: %.0f ms, its text alone %.0f ms)\n",
                    ("record, " + std::to_string(steps) + " steps").c_str(), mb, parse, parse / mb, read,
                    before < 0 ? "-" : std::to_string(static_cast<int>(before + 0.5)).c_str(), write, dumpOnly);
    }
    {
        writeIndex(folder, 300000);
        const double mb = static_cast<double>(fs::file_size(folder / plab::kRunsIndexFileName)) / 1e6;
        std::size_t n = 0;
        const double load = medianMs(repeats, [&] { n = plab::RunsIndex::load(folder).size(); });
        // And every entry's listing read, as the app's start-up reads them.
        const plab::RunsIndex index = plab::RunsIndex::load(folder);
        const double listings = medianMs(1, [&] {
            for (int i = 0; i < 300000; ++i)
                (void)index.find("run-" + std::to_string(i) + ".json", plab::RecordStamp{1000, 1, static_cast<std::uint64_t>(i)});
        });
        std::printf("%-34s %9.2f %12.1f %10.1f %12.1f %12s   (%zu entries; every listing read: %.0f ms)\n",
                    "runs index, 300,000 entries", mb, load, load / mb, load, "-", n, listings);
    }
    for (const int objects : {40000, 400000}) {
        std::string text = "[";
        for (int i = 0; i < objects; ++i) text += i ? ",{}" : "{}";
        text += "]";
        const double mb = static_cast<double>(text.size()) / 1e6;
        const double parse = medianMs(repeats, [&] { (void)plab::parseJsonInput(text, "objects"); });
        double before = -1.0;
        if (objects <= 40000) before = medianMs(std::min(repeats, 3), [&] { (void)callbackParse(text); }) / mb;
        std::printf("%-34s %9.2f %12.1f %10.1f %12s %12s\n", (std::to_string(objects) + " empty objects").c_str(), mb,
                    parse, parse / mb, "-", before < 0 ? "-" : std::to_string(static_cast<int>(before + 0.5)).c_str());
    }
    return 0;
}
