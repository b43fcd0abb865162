// TensorBoard event files from run records (see tensorboard_export.h).
#include "tensorboard/tensorboard_export.h"

#include "files/atomic_file.h"
#include "files/output_paths.h"

#include "error.h"
#include "report/csv_export.h"
#include "telemetry/non_finite_sites.h"
#include "tensorboard/tensorboard_event.pb.h"   // made by protoc in the build folder

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <iterator>
#include <map>
#include <stdexcept>

namespace plab {

namespace {

constexpr std::array<std::uint32_t, 256> makeCrc32cTable()
{
    std::array<std::uint32_t, 256> table{};
    for (std::uint32_t i = 0; i < 256; ++i) {
        std::uint32_t c = i;
        for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        table[i] = c;
    }
    return table;
}
constexpr auto kCrc32cTable = makeCrc32cTable();

// Builds the events of one run in step order; events of the same step share one Event.
class EventWriter {
public:
    explicit EventWriter(double start) : start_(start) {}

    void stepTime(std::int64_t step, double wallTime) { wallTimes_[step] = wallTime; }

    void scalar(std::int64_t step, const std::string& tag, double value)
    {
        auto* v = summaryAt(step)->add_value();
        v->set_tag(tag);
        v->set_simple_value(static_cast<float>(value));
        ++scalars_;
    }

    // A text for TensorBoard's text plugin: a scalar string tensor (DT_STRING).
    void text(std::int64_t step, const std::string& tag, const std::string& value)
    {
        constexpr int kDtString = 7;
        auto* v = summaryAt(step)->add_value();
        v->set_tag(tag);
        v->mutable_metadata()->mutable_plugin_data()->set_plugin_name("text");
        auto* tensor = v->mutable_tensor();
        tensor->set_dtype(kDtString);
        tensor->mutable_tensor_shape();
        tensor->add_string_val(value);
        ++texts_;
    }

    // A histogram of log2|x|: the record's bins [2^e, 2^(e+1)) become buckets whose right
    // edges are e+1, the first starting at the lowest filled bin's e.
    void log2Histogram(std::int64_t step, const std::string& tag, const GradientHistogram& h)
    {
        int first = -1, last = -1;
        for (int b = 0; b < GradientHistogram::kBins; ++b)
            if (h.bins[std::size_t(b)] != 0) {
                if (first < 0) first = b;
                last = b;
            }
        if (first < 0) return;
        auto* v = summaryAt(step)->add_value();
        v->set_tag(tag);
        auto* histo = v->mutable_histo();
        double num = 0, sum = 0, sumSquares = 0;
        for (int b = first; b <= last; ++b) {
            const double count = double(h.bins[std::size_t(b)]);
            const double mid = GradientHistogram::exponentOf(b) + 0.5;   // a bin's values, as its middle
            histo->add_bucket_limit(GradientHistogram::exponentOf(b) + 1);
            histo->add_bucket(count);
            num += count;
            sum += count * mid;
            sumSquares += count * mid * mid;
        }
        histo->set_min(GradientHistogram::exponentOf(first));
        histo->set_max(GradientHistogram::exponentOf(last) + 1);
        histo->set_num(num);
        histo->set_sum(sum);
        histo->set_sum_squares(sumSquares);
        ++histograms_;
    }

    std::string bytes() const
    {
        std::string out;
        tensorboard::Event version;
        version.set_wall_time(start_);
        version.set_file_version("brain.Event:2");
        appendTfRecord(out, version.SerializeAsString());
        for (const auto& [step, summary] : summaries_) {
            tensorboard::Event event;
            event.set_wall_time(wallTime(step));
            event.set_step(step);
            *event.mutable_summary() = summary;
            appendTfRecord(out, event.SerializeAsString());
        }
        return out;
    }

    std::int64_t scalars() const { return scalars_; }
    std::int64_t histograms() const { return histograms_; }
    std::int64_t texts() const { return texts_; }

private:
    tensorboard::Summary* summaryAt(std::int64_t step) { return &summaries_[step]; }

    // The wall time of the step, else of the latest step before it, else the start.
    double wallTime(std::int64_t step) const
    {
        auto it = wallTimes_.upper_bound(step);
        return it == wallTimes_.begin() ? start_ : std::prev(it)->second;
    }

    double start_;
    std::map<std::int64_t, tensorboard::Summary> summaries_;
    std::map<std::int64_t, double> wallTimes_;
    std::int64_t scalars_ = 0, histograms_ = 0, texts_ = 0;
};

}  // namespace

std::uint32_t crc32c(std::string_view bytes)
{
    std::uint32_t c = 0xFFFFFFFFu;
    for (unsigned char b : bytes) c = kCrc32cTable[(c ^ b) & 0xFFu] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

std::uint32_t maskedCrc32c(std::string_view bytes)
{
    const std::uint32_t c = crc32c(bytes);
    return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

void appendTfRecord(std::string& out, std::string_view payload)
{
    auto littleEndian = [](std::uint64_t v, int n) {
        std::string s;
        for (int i = 0; i < n; ++i) s += static_cast<char>((v >> (8 * i)) & 0xFFu);
        return s;
    };
    const std::string length = littleEndian(payload.size(), 8);
    out += length;
    out += littleEndian(maskedCrc32c(length), 4);
    out += payload;
    out += littleEndian(maskedCrc32c(payload), 4);
}

std::string tensorBoardEvents(const RunDigest& run, TensorBoardFile* counts)
{
    const double start = epochSeconds(run.record.createdAt);
    EventWriter w(start);
    double elapsedMs = 0.0;
    std::int64_t skipped = 0;
    for (const StepEvent& s : run.record.steps) {
        elapsedMs += s.timeMs;
        w.stepTime(s.step, start + elapsedMs / 1000.0);
        if (s.lossFinite()) w.scalar(s.step, "loss/train", s.loss);
        w.scalar(s.step, "loss_scale", s.lossScale);
        w.scalar(s.step, "lr", s.lr);
        if (s.skipped) ++skipped;
        w.scalar(s.step, "skipped_steps", double(skipped));
        if (s.skipped && !s.nonFinite.empty()) w.text(s.step, "skip_cause", skipCauseText(s.nonFinite));
    }
    // An autoencoder has no accuracy: its test loss is its MSE, with the PSNR beside it.
    const bool reconstructs = modelTask(run.record.settings.model.kind) == ModelTask::reconstruct;
    for (const EvalEvent& e : run.record.evals) {
        if (!reconstructs) w.scalar(e.step, "accuracy/test", e.testAccuracy);
        if (std::isfinite(e.testLoss)) w.scalar(e.step, "loss/test", e.testLoss);
        if (reconstructs && std::isfinite(e.testLoss) && e.testLoss > 0) w.scalar(e.step, "psnr_db/test", psnrDb(e.testLoss));
    }
    for (const TelemetryEvent& t : run.record.telemetry) {
        for (const LayerTelemetry& l : t.layers) {
            const std::string where = l.layer + "/" + std::string(tensorKindName(l.kind));
            const std::uint64_t rounded = l.stats.nonzeroFinite();
            // Percent, as the tags say (the record holds fractions).
            if (auto u = shareOf(l.stats.underflow, rounded)) w.scalar(t.step, "underflow_pct/" + where, *u * 100.0);
            if (auto o = shareOf(l.stats.overflow, rounded)) w.scalar(t.step, "overflow_pct/" + where, *o * 100.0);
            if (l.kind == TensorKind::weightGrad)
                if (auto lost = l.update.lostShare()) w.scalar(t.step, "lost_updates_pct/" + l.layer, *lost * 100.0);
            w.log2Histogram(t.step, "log2_abs/" + where, l.histogram);
        }
    }
    // The values a PyTorch script logged of its own, under its names (NaN and infinities,
    // null in the record, are left out as the loss's are).
    for (const ScalarEvent& s : run.record.scalars)
        if (std::isfinite(s.value)) w.scalar(s.step, "logged/" + s.name, s.value);
    constexpr double kMiB = 1024.0 * 1024.0;
    for (const MemoryEvent& m : run.record.memory.samples) {
        for (std::size_t c = 0; c < m.memory.live.size() && c < run.memoryCategories.size(); ++c)
            w.scalar(m.step, "memory_mib/" + run.memoryCategories[c], double(m.memory.live[c]) / kMiB);
        w.scalar(m.step, "memory_mib/total", double(m.memory.totalLive) / kMiB);
    }
    if (counts) {
        counts->scalars = w.scalars();
        counts->histograms = w.histograms();
        counts->texts = w.texts();
    }
    return w.bytes();
}

double epochSeconds(const std::string& iso)
{
    int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
    if (std::sscanf(iso.c_str(), "%d-%d-%dT%d:%d:%d", &year, &month, &day, &hour, &minute, &second) != 6) return 0.0;
    // A date a run can have been made on; anything else (year -2147483648, whose year - 1900
    // overflowed) is unknown, never another date.
    if (year < 1970 || year > 9999 || month < 1 || month > 12 || day < 1 || day > 31 || hour < 0 || hour > 23 ||
        minute < 0 || minute > 59 || second < 0 || second > 60)
        return 0.0;
    std::tm tm{};
    tm.tm_year = year - 1900;
    tm.tm_mon = month - 1;
    tm.tm_mday = day;
    tm.tm_hour = hour;
    tm.tm_min = minute;
    tm.tm_sec = second;
    const std::time_t t = timegm(&tm);
    return t < 0 ? 0.0 : double(t);
}

std::string tensorBoardRunId(const RunDigest& run)
{
    // FNV-1a over what makes the run this run: when it started and its settings (seed included).
    // The settings as the record holds them: its keys only (an older record lacks newer ones).
    const nlohmann::json all = settingsToJson(run.record.settings);
    nlohmann::json held = nlohmann::json::object();
    for (const std::string& key : run.record.settingKeys) held[key] = all.at(key);
    std::uint64_t h = 14695981039346656037ull;
    for (const std::string& part : {run.record.createdAt, std::string("\n"), held.dump()})
        for (const unsigned char c : part) h = (h ^ c) * 1099511628211ull;
    char id[8];
    std::snprintf(id, sizeof id, "%06llx", static_cast<unsigned long long>(h & 0xFFFFFF));
    return id;
}

std::vector<TensorBoardFile> writeTensorBoardRuns(const RunComparison& runs, const std::filesystem::path& dir,
                                                  std::vector<std::string>* notes)
{
    makeOutputFolder(dir, "the TensorBoard folder");
    // A folder per run: its name plus a short id of the run, so two runs whose names map to
    // one stem never share a folder, and the same run exported again finds its own.
    std::vector<std::string> stems;
    for (const RunDigest& r : runs.runs) {
        const std::string id = tensorBoardRunId(r);
        bool cut = false;
        std::string folder = fitFileName(fileStem(r.label), id.size() + 8, &cut) + "-" + id;
        if (cut && notes)
            notes->push_back("the run name " + quotedExcerpt(r.label, 40) + " is too long for a folder name: its folder is " + folder);
        const std::string base = folder;
        for (int n = 2; std::find(stems.begin(), stems.end(), folder) != stems.end(); ++n)
            folder = base + "-" + std::to_string(n);   // the same run given twice
        stems.push_back(folder);
    }
    std::vector<TensorBoardFile> written;
    for (std::size_t i = 0; i < runs.runs.size(); ++i) {
        const RunDigest& run = runs.runs[i];
        const auto folder = dir / stems[i];
        makeOutputFolder(folder, "the TensorBoard folder of run " + quotedExcerpt(run.label, 60));
        TensorBoardFile file;
        const std::string bytes = tensorBoardEvents(run, &file);
        const auto seconds = static_cast<long long>(epochSeconds(run.record.createdAt));
        file.file = folder / ("events.out.tfevents." + std::to_string(seconds) + ".precision-lab");
        writeFileAtomically(file.file, bytes);
        written.push_back(file);
    }
    return written;
}

}  // namespace plab
