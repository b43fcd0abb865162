// RFC 4180 CSV writing and reading, and the CSV tables of a run record. See csv_export.h.
#include "report/csv_export.h"

#include "record/record_writer.h"
#include "telemetry/non_finite_sites.h"
#include "train/region_format.h"

#include "error.h"
#include "files/input_file.h"

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <istream>
#include <ostream>
#include <set>
#include <sstream>
#include <stdexcept>

namespace plab {

namespace {

// Shortest text that reads back as the same double ("%.17g" always does).
std::string csvNumber(double v)
{
    char buf[40];
    for (int digits = 6; digits <= 17; ++digits) {
        std::snprintf(buf, sizeof buf, "%.*g", digits, v);
        if (std::strtod(buf, nullptr) == v) break;
    }
    return buf;
}

std::string cell(std::int64_t v) { return std::to_string(v); }
std::string cell(std::uint64_t v) { return std::to_string(v); }
std::string cell(double v) { return csvNumber(v); }
std::string cell(const std::optional<double>& v) { return v ? csvNumber(*v) : std::string(); }
std::string cell(bool v) { return v ? "1" : "0"; }
std::string cell(const std::string& text) { return csvText(text); }

void writeTable(const std::vector<CsvRow>& table, const std::filesystem::path& file)
{
    // Whole or not at all (a temporary file renamed over the target once on disk).
    std::ostringstream out;
    for (const auto& row : table) writeCsvRow(out, row);
    writeFileAtomically(file, out.str());
}

}  // namespace

std::string csvText(const std::string& text)
{
    if (!text.empty() && std::string_view("=+-@\t\r").find(text.front()) != std::string_view::npos) return "'" + text;
    return text;
}

std::string csvField(const std::string& text)
{
    if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
    std::string quoted = "\"";
    for (char c : text) {
        if (c == '"') quoted += '"';
        quoted += c;
    }
    return quoted + '"';
}

void writeCsvRow(std::ostream& out, const CsvRow& row)
{
    for (std::size_t i = 0; i < row.size(); ++i) out << (i ? "," : "") << csvField(row[i]);
    out << "\r\n";
}

std::vector<CsvRow> readCsv(std::istream& in, const std::string& origin)
{
    std::vector<CsvRow> rows;
    CsvRow row;
    std::string field;
    bool quoted = false;        // inside a quoted field
    bool wasQuoted = false;     // the current field was quoted (only a separator may follow)
    bool rowStarted = false;
    std::int64_t line = 1;
    auto endField = [&] {
        row.push_back(field);
        field.clear();
        wasQuoted = false;
    };
    auto endRow = [&] {
        endField();
        rows.push_back(std::move(row));
        row.clear();
        rowStarted = false;
    };
    char c;
    while (in.get(c)) {
        if (quoted) {
            if (c == '"') {
                if (in.peek() == '"') {
                    in.get(c);
                    field += '"';
                } else {
                    quoted = false;
                    wasQuoted = true;
                }
            } else {
                if (c == '\n') ++line;
                field += c;
            }
            continue;
        }
        if (c == ',') {
            endField();
            rowStarted = true;
        } else if (c == '\r' || c == '\n') {
            if (c == '\r' && in.peek() == '\n') in.get(c);
            endRow();
            ++line;
        } else if (wasQuoted) {
            throw InputError(origin + ": line " + std::to_string(line) + ": text after a closing quote");
        } else if (c == '"') {
            if (!field.empty()) throw InputError(origin + ": line " + std::to_string(line) + ": a quote inside an unquoted field");
            quoted = true;
            rowStarted = true;
        } else {
            field += c;
            rowStarted = true;
        }
    }
    if (quoted) throw InputError(origin + ": a quoted field is not closed at the end of the file");
    if (rowStarted || !field.empty() || wasQuoted) endRow();   // last line without CRLF
    return rows;
}

std::vector<CsvRow> readCsvFile(const std::filesystem::path& file)
{
    std::istringstream in(readRegularFile(file, file.string(), std::uint64_t{1} << 30));
    return readCsv(in, file.string());
}

std::vector<CsvRow> stepsTable(const RunRecord& record, const std::string& run)
{
    std::vector<CsvRow> t = {{"run", "step", "epoch", "loss", "loss_scale", "skipped", "lr", "batch", "time_ms",
                              "skip_site", "skip_cause"}};
    for (const StepEvent& s : record.steps) {
        // A skipped step's first non-finite site ("loss activation_grad") and the sentence.
        const NonFiniteSite* cause = firstNonFiniteCause(s.nonFinite);
        t.push_back({cell(run), cell(s.step), cell(std::int64_t{s.epoch}),
                     cell(s.lossFinite() ? std::optional<double>(s.loss) : std::nullopt), cell(s.lossScale), cell(s.skipped),
                     cell(s.lr), cell(std::int64_t{s.batch}), cell(s.timeMs),
                     cause ? siteName(*cause) : std::string(),
                     skipCauseText(s.nonFinite)});
    }
    return t;
}

std::vector<CsvRow> evalsTable(const RunRecord& record, const std::string& run)
{
    std::vector<CsvRow> t = {{"run", "step", "epoch", "test_accuracy", "test_loss"}};
    const bool classifies = modelTask(record.settings.model.kind) == ModelTask::classify;   // else no accuracy: empty
    for (const EvalEvent& e : record.evals)
        t.push_back({cell(run), cell(e.step), cell(std::int64_t{e.epoch}),
                     classifies ? cell(e.testAccuracy) : std::string(), cell(e.testLoss)});
    return t;
}

std::vector<CsvRow> telemetryTable(const RunRecord& record, const std::string& run)
{
    std::vector<CsvRow> t = {{"run", "step", "loss_scale", "layer", "kind", "count", "zeros_in", "underflow",
                              "subnormal", "overflow", "nan", "inf_in", "nonzero_updates", "lost_updates",
                              "non_finite_updates", "state_flushed", "state_non_finite", "format", "counted"}};
    // What the counts are of: the run's own rounding into `format` ("as run"), or, in a
    // PyTorch probe's record, what rounding into the format it judged against would have done
    // to the tensors the training made ("judged, not run").
    const std::string counted = record.judgedFormat.empty() ? "as run" : "judged, not run";
    for (const TelemetryEvent& snap : record.telemetry)
        for (const LayerTelemetry& l : snap.layers) {
            const RoundingStats& s = l.stats;
            CsvRow row = {cell(run), cell(snap.step), cell(snap.lossScale), cell(l.layer), std::string(tensorKindName(l.kind)),
                          cell(s.count), cell(s.zerosIn), cell(s.underflow), cell(s.subnormal), cell(s.overflow),
                          cell(s.nan), cell(s.infIn)};
            // The update counts belong to the weight gradients' entries (empty for the others).
            const bool updates = l.kind == TensorKind::weightGrad;
            for (std::int64_t n : {l.update.nonzero, l.update.lost, l.update.nonFinite, l.update.stateFlushed,
                                    l.update.stateNonFinite})
                row.push_back(updates ? cell(n) : std::string());
            row.push_back(regionFormatFor(record.finalSettings(), record.judgedFormat, l.layer, l.kind).name);
            row.push_back(counted);
            t.push_back(std::move(row));
        }
    return t;
}

std::vector<CsvRow> scalarsTable(const RunRecord& record, const std::string& run)
{
    std::vector<CsvRow> t = {{"run", "step", "name", "value"}};
    for (const ScalarEvent& s : record.scalars)
        t.push_back({cell(run), cell(s.step), csvText(s.name), std::isfinite(s.value) ? cell(s.value) : std::string()});
    return t;
}

const std::vector<std::string>& csvSuffixes()
{
    static const std::vector<std::string> suffixes{"-steps.csv", "-evals.csv", "-telemetry.csv", "-scalars.csv"};
    return suffixes;
}

std::vector<std::filesystem::path> writeRunCsv(const RunRecord& record, const std::string& run,
                                               const std::filesystem::path& folder, const std::string& stem)
{
    std::error_code ec;
    std::filesystem::create_directories(folder, ec);
    if (ec) throw std::runtime_error(folder.string() + ": cannot create the folder (" + ec.message() + ")");
    const auto& suffix = csvSuffixes();
    std::vector<std::pair<std::string, std::vector<CsvRow>>> tables = {
        {suffix[0], stepsTable(record, run)},
        {suffix[1], evalsTable(record, run)},
        {suffix[2], telemetryTable(record, run)},
    };
    if (!record.scalars.empty()) tables.emplace_back(suffix[3], scalarsTable(record, run));
    std::vector<std::filesystem::path> written;
    for (const auto& [suffix, table] : tables) {
        const auto file = folder / (stem + suffix);
        writeTable(table, file);
        written.push_back(file);
    }
    return written;
}

std::string fileStem(const std::string& label)
{
    std::string stem;
    for (unsigned char c : label) {
        const bool keep = std::isalnum(c) || c == '-' || c == '_' || c == '.';
        if (keep) stem += static_cast<char>(std::tolower(c));
        else if (!stem.empty() && stem.back() != '-') stem += '-';
    }
    while (!stem.empty() && (stem.back() == '-' || stem.back() == '.')) stem.pop_back();
    return stem.empty() ? "run" : stem;
}

std::vector<std::string> uniqueFileStems(const std::vector<std::string>& labels)
{
    std::vector<std::string> stems;
    std::set<std::string> used;
    for (const auto& label : labels) {
        std::string stem = fileStem(label);
        for (int n = 2; used.count(stem); ++n) stem = fileStem(label) + "-" + std::to_string(n);
        used.insert(stem);
        stems.push_back(stem);
    }
    return stems;
}

}  // namespace plab
