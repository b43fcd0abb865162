// Writing run records (record_writer.h).
#include "record/record_writer.h"

#include <algorithm>

#include <nlohmann/json.hpp>

namespace plab {

using nlohmann::json;

void writeJsonAtomically(const std::filesystem::path& file, const json& doc)
{
    std::string text = doc.dump(1);
    text += '\n';
    writeFileAtomically(file, text);
}

void renameRunRecord(const std::filesystem::path& file, const std::string& name)
{
    json record = loadRunRecordDocument(file);
    record["name"] = name;
    writeJsonAtomically(file, record);
}

RunRecorder::RunRecorder(std::filesystem::path out, const TrainSettings& settings, const DataSplit& data,
                         std::string name)
    : out_(std::move(out)), record_(RunRecord::start(settings, data, std::move(name)))
{
    lastFlush_ = std::chrono::steady_clock::now();
    if (!out_.empty()) flush();
}

void RunRecorder::onEvent(const TrainerEvent& event)
{
    record_.apply(event);
    flushIfDue();
}

void RunRecorder::finish(const RunResult& result)
{
    record_.finish(result);
    if (out_.empty()) return;
    try {
        flush();
        writeError_.clear();   // the final version is on disk after all
    } catch (const std::exception& e) {
        writeError_ = e.what();
        throw;
    }
}

void RunRecorder::flushIfDue()
{
    const auto now = std::chrono::steady_clock::now();
    // After a failed write the record stays in memory; finish() tries once more. A long
    // record's write takes long (400,000 steps: about 0.9 s, bench/RESULTS.md): it waits
    // ten times that, so writing takes at most about a tenth of the run.
    const auto wait = std::max<std::chrono::steady_clock::duration>(std::chrono::seconds(1), 10 * lastWriteTook_);
    if (out_.empty() || !writeError_.empty() || now - lastFlush_ < wait) return;
    try {
        flush();
    } catch (const std::exception& e) {
        writeError_ = e.what();   // the caller ends the run (writeError()); never thrown from onEvent
    }
}

void RunRecorder::flush()
{
    const auto start = std::chrono::steady_clock::now();
    writeJsonAtomically(out_, runRecordToJson(record_));
    lastFlush_ = std::chrono::steady_clock::now();
    lastWriteTook_ = lastFlush_ - start;
}

}  // namespace plab
