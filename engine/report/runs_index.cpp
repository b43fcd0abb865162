// Listings of run records, the runs folder's index of them, and the folder scan.
#include "report/runs_index.h"

#include "error.h"
#include "files/atomic_file.h"
#include "files/record_lock.h"
#include "json/json_input.h"
#include "record/record_writer.h"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <thread>

#include <nlohmann/json.hpp>

namespace plab {

using nlohmann::json;

namespace {

constexpr const char* kIndexFormat = "precision-lab runs index";
constexpr int kIndexVersion = 3;   // 2: a probe record's judged_format and as_run; 3: last_test_loss
constexpr std::int64_t kMaxStep = std::int64_t{1} << 53;
constexpr std::int64_t kMaxCount = std::int64_t{1} << 62;

json accuracyJson(double a) { return std::isfinite(a) ? json(a) : json(nullptr); }

// Checked as a record's are (an index is a cache anyone can edit): a listing outside the
// ranges is refused, and the record is read instead.
double accuracyFrom(const json& j, const char* key)
{
    const json& v = j.at(key);
    if (v.is_null()) return std::numeric_limits<double>::quiet_NaN();
    const double a = jsonReal(v, key);
    if (!(a >= 0.0 && a <= 1.0)) throw InputError(std::string(key) + " must be a fraction from 0 to 1, got " + jsonExcerpt(v));
    return a;
}

double nonNegativeFrom(const json& j, const char* key)
{
    const json& v = j.at(key);
    const double x = jsonReal(v, key);
    if (!(x >= 0.0 && std::isfinite(x))) throw InputError(std::string(key) + " must be a number from 0, got " + jsonExcerpt(v));
    return x;
}

RunStatus statusNamed(const std::string& name, const std::string& origin)
{
    if (const auto s = parseRunStatus(name)) return *s;
    throw InputError(origin + ": unknown status " + quotedExcerpt(name));
}

}  // namespace

RunListing listingOf(const RunRecord& record)
{
    // The same facts as the app's RunData gathers from the same run's events.
    RunListing l;
    l.name = record.name;
    l.settings = record.settings;
    l.current = record.finalSettings();
    for (const StepEvent& p : record.steps) {
        l.images += p.batch;
        l.stepMs += p.timeMs;
    }
    for (const EvalEvent& e : record.evals) {
        l.lastAccuracy = e.testAccuracy;
        l.lastTestLoss = e.testLoss;
        l.bestAccuracy = std::max(std::isnan(l.bestAccuracy) ? 0.0 : l.bestAccuracy, e.testAccuracy);
    }
    for (const RecordedEvent& event : record.events) {
        if (const auto* e = std::get_if<SettingChangeEvent>(&event)) l.changes.push_back(*e);
        else if (const auto* e = std::get_if<ChangeRefusedEvent>(&event)) l.refusals.push_back(*e);
    }
    l.backend = record.backend;
    l.versions = record.versions.backend;
    l.arithmetic = record.arithmetic.value_or("");
    l.judgedFormat = record.judgedFormat;
    l.sourceAsRun = record.sourceAsRun;
    l.plannedSteps = record.stepsPlanned();
    const RunResult result = record.result();
    l.status = result.status;
    l.message = result.message;
    l.unfinished = record.interrupted();
    l.steps = result.steps;
    l.skippedSteps = result.skippedSteps;
    l.imagesPerSecond = result.imagesPerSecond;
    return l;
}

json listingToJson(const RunListing& l)
{
    json changes = json::array(), refusals = json::array();
    for (const auto& c : l.changes)
        changes.push_back({{"step", c.step}, {"description", c.description}, {"settings", settingsToJson(c.settings)}});
    for (const auto& r : l.refusals)
        refusals.push_back({{"step", r.step}, {"description", r.description}, {"reason", r.reason}});
    json j = {{"name", l.name},
              {"settings", settingsToJson(l.settings)},
              {"status", std::string(runStatusName(l.status))},
              {"message", l.message},
              {"unfinished", l.unfinished},
              {"steps", l.steps},
              {"planned_steps", l.plannedSteps},
              {"skipped_steps", l.skippedSteps},
              {"images", l.images},
              {"step_ms", l.stepMs},
              {"images_per_second", l.imagesPerSecond},
              {"last_accuracy", accuracyJson(l.lastAccuracy)},
              {"best_accuracy", accuracyJson(l.bestAccuracy)},
              {"last_test_loss", accuracyJson(l.lastTestLoss)},
              {"backend", l.backend},
              {"versions", l.versions},
              {"arithmetic", l.arithmetic},
              {"judged_format", l.judgedFormat},
              {"as_run", l.sourceAsRun},
              {"changes", std::move(changes)},
              {"refusals", std::move(refusals)}};
    // Most runs never change a setting: the current settings only where they differ.
    if (!(l.current == l.settings)) j["current"] = settingsToJson(l.current);
    return j;
}

RunListing listingFromJson(const json& j, const std::string& origin)
{
    RunListing l;
    try {
        if (!j.is_object()) throw InputError("not an object");
        l.name = j.at("name").get<std::string>();
        l.settings = settingsFromJson(j.at("settings"), origin + " settings", SettingsReading::stored);
        l.current = j.contains("current") ? settingsFromJson(j["current"], origin + " current", SettingsReading::stored) : l.settings;
        l.status = statusNamed(j.at("status").get<std::string>(), origin);
        l.message = j.at("message").get<std::string>();
        l.unfinished = j.at("unfinished").get<bool>();
        l.steps = jsonWhole(j.at("steps"), 0, kMaxStep, "steps");
        l.plannedSteps = jsonWhole(j.at("planned_steps"), 0, kMaxStep, "planned_steps");
        l.skippedSteps = jsonWhole(j.at("skipped_steps"), 0, kMaxStep, "skipped_steps");
        l.images = jsonWhole(j.at("images"), 0, kMaxCount, "images");
        if (l.skippedSteps > l.steps) throw InputError("skipped_steps is above steps");
        l.stepMs = nonNegativeFrom(j, "step_ms");
        l.imagesPerSecond = nonNegativeFrom(j, "images_per_second");
        l.lastAccuracy = accuracyFrom(j, "last_accuracy");
        l.bestAccuracy = accuracyFrom(j, "best_accuracy");
        if (!j.at("last_test_loss").is_null()) l.lastTestLoss = nonNegativeFrom(j, "last_test_loss");
        l.backend = j.at("backend").get<std::string>();
        l.versions = j.at("versions").get<std::vector<std::string>>();
        l.arithmetic = j.at("arithmetic").get<std::string>();
        l.judgedFormat = j.at("judged_format").get<std::string>();
        l.sourceAsRun = j.at("as_run").get<std::string>();
        for (const auto& c : j.at("changes"))
            l.changes.push_back({jsonWhole(c.at("step"), 0, kMaxStep, "step"), c.at("description").get<std::string>(),
                                 settingsFromJson(c.at("settings"), origin + " change settings", SettingsReading::stored)});
        for (const auto& r : j.at("refusals"))
            l.refusals.push_back({jsonWhole(r.at("step"), 0, kMaxStep, "step"), r.at("description").get<std::string>(),
                                  r.at("reason").get<std::string>()});
    } catch (const json::exception& e) {
        throw InputError(origin + ": not a run listing (" + e.what() + ")");
    } catch (const InputError& e) {
        throw InputError(origin + ": " + e.what());
    }
    return l;
}

std::optional<RecordStamp> recordStamp(const std::filesystem::path& file)
{
    struct stat st {};
    if (::stat(file.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
    return RecordStamp{static_cast<std::uint64_t>(st.st_size),
                       static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec,
                       static_cast<std::uint64_t>(st.st_ino)};
}

RunsIndex RunsIndex::load(const std::filesystem::path& folder)
{
    RunsIndex index;
    try {
        json doc = readJsonFile(folder / kRunsIndexFileName, "runs index");
        if (!doc.is_object() || doc.value("format", std::string()) != kIndexFormat ||
            doc.value("version", 0) != kIndexVersion || !doc.contains("records") || !doc["records"].is_object())
            return index;
        for (auto&& [name, entry] : doc["records"].items()) {
            if (!entry.is_object() || !entry.contains("listing")) continue;
            try {
                const RecordStamp stamp{static_cast<std::uint64_t>(jsonWhole(entry.at("size"), 0, kMaxCount, "size")),
                                        jsonWhole(entry.at("modified_ns"), std::numeric_limits<std::int64_t>::min(),
                                                  std::numeric_limits<std::int64_t>::max(), "modified_ns"),
                                        static_cast<std::uint64_t>(jsonWhole(entry.at("inode"), 0, kMaxCount, "inode"))};
                index.entries_[name] = {stamp, std::move(entry["listing"])};   // moved, not copied: an index may be large
            } catch (const std::exception&) {
                index.changed_ = true;   // a bad entry: dropped, the record is read again
            }
        }
    } catch (const std::exception&) {
        // No index yet, or one that cannot be read: it is a cache, rebuilt by this scan.
    }
    return index;
}

std::optional<RunListing> RunsIndex::find(const std::string& fileName, const RecordStamp& stamp) const
{
    const auto it = entries_.find(fileName);
    if (it == entries_.end() || !(it->second.stamp == stamp)) return std::nullopt;
    try {
        return listingFromJson(it->second.listing, "runs index entry " + fileName);
    } catch (const std::exception&) {
        return std::nullopt;   // read the record instead
    }
}

void RunsIndex::put(const std::string& fileName, const RecordStamp& stamp, const RunListing& listing)
{
    entries_[fileName] = {stamp, listingToJson(listing)};
    changed_ = true;
}

void RunsIndex::keepOnly(const std::vector<std::string>& fileNames)
{
    std::map<std::string, Entry> kept;
    for (const auto& name : fileNames)
        if (auto it = entries_.find(name); it != entries_.end()) kept.insert(entries_.extract(it));
    if (!entries_.empty()) changed_ = true;   // entries of records that are gone
    entries_ = std::move(kept);
}

void RunsIndex::save(const std::filesystem::path& folder) const
{
    json records = json::object();
    for (const auto& [name, e] : entries_)
        records[name] = {{"size", e.stamp.size}, {"modified_ns", e.stamp.modifiedNs}, {"inode", e.stamp.inode},
                         {"listing", e.listing}};
    const json doc = {{"format", kIndexFormat}, {"version", kIndexVersion}, {"records", std::move(records)}};
    // The index is a file of ours: never written through a FIFO or device of that name
    // (writeFileAtomically writes those in place, and a FIFO without a reader blocks).
    const std::filesystem::path file = folder / kRunsIndexFileName;
    std::error_code ec;
    const auto status = std::filesystem::status(file, ec);
    if (!ec && std::filesystem::exists(status) && !std::filesystem::is_regular_file(status))
        throw std::runtime_error("cannot write " + file.string() + ": it is not a regular file");
    writeFileAtomically(file, doc.dump() + "\n");
}

namespace {

// Reads one record whole (the same checks as opening it in the app).
void readRecord(ScannedRecord& out)
{
    try {
        out.listing = listingOf(loadRunRecord(out.file));
    } catch (const std::exception& e) {
        out.error = e.what();
    }
}

}  // namespace

std::vector<std::string> recordFileNames(const std::filesystem::path& folder)
{
    std::vector<std::string> names;
    std::error_code ec;
    for (std::filesystem::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (name.size() <= 5 || name.front() == '.' || name.substr(name.size() - 5) != ".json") continue;
        // Folders, FIFOs and devices named *.json are not records; a symbolic link is
        // followed when read (and refused there, with a reason, unless it names a record).
        std::error_code typeError;
        if (!it->is_symlink(typeError) && !it->is_regular_file(typeError)) continue;
        names.push_back(name);
    }
    std::sort(names.begin(), names.end());
    return names;
}

ScannedRecord scanRecord(const std::filesystem::path& file)
{
    ScannedRecord r;
    r.file = file;
    r.id = file.stem().string();
    readRecord(r);
    if (r.listing && r.listing->unfinished) r.writerAlive = recordWriterAlive(r.file);
    return r;
}

std::size_t scanRunsFolder(const std::filesystem::path& folder,
                           const std::function<void(std::vector<ScannedRecord>&&)>& deliver,
                           const std::atomic<bool>& cancelled, RunsScanOptions options)
{
    const std::vector<std::string> names = recordFileNames(folder);

    RunsIndex index = RunsIndex::load(folder);
    index.keepOnly(names);
    std::size_t read = 0;
    const int threads = std::max(1, options.threads);
    const std::size_t batch = std::max<std::size_t>(1, options.batchSize);
    for (std::size_t first = 0; first < names.size() && !cancelled; first += batch) {
        const std::size_t last = std::min(names.size(), first + batch);
        std::vector<ScannedRecord> records(last - first);
        std::vector<std::optional<RecordStamp>> stamps(records.size());
        std::vector<std::size_t> misses;
        for (std::size_t i = 0; i < records.size(); ++i) {
            ScannedRecord& r = records[i];
            r.file = folder / names[first + i];
            r.id = r.file.stem().string();
            stamps[i] = recordStamp(r.file);
            if (stamps[i]) r.listing = index.find(names[first + i], *stamps[i]);
            if (!r.listing) misses.push_back(i);
        }
        // The records the index does not hold are parsed whole, on `threads` threads.
        std::atomic<std::size_t> next{0};
        auto work = [&] {
            for (std::size_t k; !cancelled && (k = next++) < misses.size();) readRecord(records[misses[k]]);
        };
        std::vector<std::thread> helpers;
        for (int t = 1; t < threads && static_cast<std::size_t>(t) < misses.size(); ++t) helpers.emplace_back(work);
        work();
        for (auto& h : helpers) h.join();
        if (cancelled) break;
        for (std::size_t i : misses) {
            ++read;
            // Stamped before the read: a record rewritten meanwhile is read again next time.
            if (records[i].listing && stamps[i]) index.put(names[first + i], *stamps[i], *records[i].listing);
        }
        for (ScannedRecord& r : records)
            if (r.listing && r.listing->unfinished) r.writerAlive = recordWriterAlive(r.file);
        deliver(std::move(records));
    }
    // Also when cancelled (the app closed during a long first scan): what was read so far
    // is kept for the next start.
    if (index.changed()) {
        try {
            index.save(folder);
        } catch (const std::exception&) {
            // A folder this user cannot write: the list works, each start reads the records.
        }
    }
    return read;
}

}  // namespace plab
