// CSV export of run records (RFC 4180: comma separated, CRLF line ends, fields with a
// comma, quote, CR or LF quoted with doubled quotes): per-step scalars, per-evaluation
// metrics, and per-layer telemetry counts; and a reader of the same dialect, so exports
// can be checked by reading them back. Qt-free.
#pragma once

#include "record/run_record.h"

#include <filesystem>
#include <iosfwd>
#include <string>
#include <vector>

namespace plab {

using CsvRow = std::vector<std::string>;

// One field as RFC 4180 wants it (quoted only when needed).
std::string csvField(const std::string& text);
// A text cell (a run's name, a layer's): one that begins with =, +, -, @, a tab or a carriage
// return gets a leading apostrophe, so a spreadsheet shows it as text and never runs it as a
// formula (=HYPERLINK(...) in a run's name).
std::string csvText(const std::string& text);
void writeCsvRow(std::ostream& out, const CsvRow& row);

// Parses a whole CSV document. Throws InputError (naming `origin`) for an unterminated
// quoted field or a stray quote inside an unquoted field.
std::vector<CsvRow> readCsv(std::istream& in, const std::string& origin);
std::vector<CsvRow> readCsvFile(const std::filesystem::path& file);

// The tables of one run record; the first row is the header. Numbers are written with
// enough digits to read back the same double; a non-finite loss is an empty field.
// `run` fills the first column (the run's label), so that files of several runs can be
// concatenated.
std::vector<CsvRow> stepsTable(const RunRecord& record, const std::string& run);     // run,step,epoch,loss,...
std::vector<CsvRow> evalsTable(const RunRecord& record, const std::string& run);     // run,step,epoch,test_accuracy,...
std::vector<CsvRow> telemetryTable(const RunRecord& record, const std::string& run); // run,step,loss_scale,layer,...
// The values the training logged of its own (a probe's probe.log): run,step,name,value (a
// value that was not finite is an empty field).
std::vector<CsvRow> scalarsTable(const RunRecord& record, const std::string& run);

// Writes <stem>-steps.csv, <stem>-evals.csv and <stem>-telemetry.csv into `folder`
// (created when missing), and <stem>-scalars.csv when the record has logged values;
// returns the files written. Throws std::runtime_error naming
// the file when one cannot be written.
std::vector<std::filesystem::path> writeRunCsv(const RunRecord& record, const std::string& run,
                                               const std::filesystem::path& folder, const std::string& stem);
// What writeRunCsv may put after the stem: "-steps.csv", "-evals.csv", "-telemetry.csv",
// "-scalars.csv".
const std::vector<std::string>& csvSuffixes();

// A file-name-safe form of a run label: letters, digits, '-', '_' and '.'.
std::string fileStem(const std::string& label);

// The file stems of several runs' labels, made unique by "-2", "-3", ... in order.
std::vector<std::string> uniqueFileStems(const std::vector<std::string>& labels);

}  // namespace plab
