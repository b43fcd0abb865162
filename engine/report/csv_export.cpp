// RFC 4180 CSV writing and reading, and the CSV tables of a run record. See csv_export.h.
#include "report/csv_export.h"

#include "report/run_record.h"

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

using nlohmann::json;

namespace {

// Shortest text that reads back as the same double ("%.17g" always does).
std::string numberText(double v)
{
    char buf[40];
    for (int digits = 6; digits <= 17; ++digits) {
        std::snprintf(buf, sizeof buf, "%.*g", digits, v);
        if (std::strtod(buf, nullptr) == v) break;
    }
    return buf;
}

std::string cell(const json& v)
{
    if (v.is_null()) return {};
    if (v.is_boolean()) return v.get<bool>() ? "1" : "0";
    if (v.is_number_integer()) return std::to_string(v.get<std::int64_t>());
    if (v.is_number()) return numberText(v.get<double>());
    if (v.is_string()) return v.get<std::string>();
    return v.dump();
}

std::string cellOf(const json& obj, const char* key)
{
    const auto it = obj.find(key);
    return it == obj.end() ? std::string() : cell(*it);
}

void writeTable(const std::vector<CsvRow>& table, const std::filesystem::path& file)
{
    // Whole or not at all (a temporary file renamed over the target once on disk).
    std::ostringstream out;
    for (const auto& row : table) writeCsvRow(out, row);
    writeFileAtomically(file, out.str());
}

}  // namespace

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

std::vector<CsvRow> stepsTable(const json& record, const std::string& run)
{
    std::vector<CsvRow> t = {{"run", "step", "epoch", "loss", "loss_scale", "skipped", "lr", "batch", "time_ms"}};
    for (const auto& s : record.value("steps", json::array()))
        t.push_back({run, cellOf(s, "step"), cellOf(s, "epoch"), cellOf(s, "loss"), cellOf(s, "loss_scale"),
                     cellOf(s, "skipped"), cellOf(s, "lr"), cellOf(s, "batch"), cellOf(s, "time_ms")});
    return t;
}

std::vector<CsvRow> evalsTable(const json& record, const std::string& run)
{
    std::vector<CsvRow> t = {{"run", "step", "epoch", "test_accuracy", "test_loss"}};
    for (const auto& e : record.value("evals", json::array()))
        t.push_back({run, cellOf(e, "step"), cellOf(e, "epoch"), cellOf(e, "test_accuracy"), cellOf(e, "test_loss")});
    return t;
}

std::vector<CsvRow> telemetryTable(const json& record, const std::string& run)
{
    std::vector<CsvRow> t = {{"run", "step", "loss_scale", "layer", "kind", "count", "zeros_in", "underflow",
                              "subnormal", "overflow", "nan", "inf_in", "nonzero_updates", "lost_updates",
                              "non_finite_updates", "state_flushed", "state_non_finite"}};
    for (const auto& snap : record.value("telemetry", json::array()))
        for (const auto& l : snap.value("layers", json::array())) {
            const json stats = l.value("stats", json::object());
            t.push_back({run, cellOf(snap, "step"), cellOf(snap, "loss_scale"), cellOf(l, "layer"), cellOf(l, "kind"),
                         cellOf(stats, "count"), cellOf(stats, "zeros_in"), cellOf(stats, "underflow"),
                         cellOf(stats, "subnormal"), cellOf(stats, "overflow"), cellOf(stats, "nan"),
                         cellOf(stats, "inf_in"), cellOf(l, "nonzero_updates"), cellOf(l, "lost_updates"),
                         cellOf(l, "non_finite_updates"), cellOf(l, "state_flushed"), cellOf(l, "state_non_finite")});
        }
    return t;
}

std::vector<std::filesystem::path> writeRunCsv(const json& record, const std::string& run,
                                               const std::filesystem::path& folder, const std::string& stem)
{
    std::error_code ec;
    std::filesystem::create_directories(folder, ec);
    if (ec) throw std::runtime_error(folder.string() + ": cannot create the folder (" + ec.message() + ")");
    const std::vector<std::pair<std::string, std::vector<CsvRow>>> tables = {
        {"-steps.csv", stepsTable(record, run)},
        {"-evals.csv", evalsTable(record, run)},
        {"-telemetry.csv", telemetryTable(record, run)},
    };
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
