// Batch files (see batch_file.h).
#include "data/batch_file.h"

#include "error.h"
#include "files/atomic_file.h"
#include "files/input_file.h"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>
#include <string_view>

namespace plab {

std::string batchFileText(const StepBatches& steps, const std::string& about)
{
    std::string out = "# plab batches 1: one line per training step, its samples' 0-based indices into the training set (" +
                      about + ")\n";
    for (const auto& step : steps) {
        for (std::size_t i = 0; i < step.size(); ++i) {
            if (i) out += ' ';
            out += std::to_string(step[i]);
        }
        out += '\n';
    }
    return out;
}

void writeBatchFile(const std::filesystem::path& file, const StepBatches& steps, const std::string& about)
{
    writeFileAtomically(file, batchFileText(steps, about));
}

StepBatches parseBatchFile(const std::string& text, std::int64_t trainCount, const std::string& origin)
{
    constexpr std::size_t kMaxBatch = 65536;   // the largest batch a run takes
    StepBatches steps;
    std::size_t lineStart = 0;
    for (long long lineNumber = 1; lineStart < text.size(); ++lineNumber) {
        std::size_t lineEnd = text.find('\n', lineStart);
        if (lineEnd == std::string::npos) lineEnd = text.size();
        const std::string_view line(text.data() + lineStart, lineEnd - lineStart);
        lineStart = lineEnd + 1;
        auto fail = [&](const std::string& what) {
            return InputError(origin + ": line " + std::to_string(lineNumber) + ": " + what);
        };
        if (!line.empty() && line.front() == '#') continue;
        std::vector<std::uint32_t> step;
        std::size_t pos = 0;
        while (pos < line.size()) {
            if (line[pos] == ' ' || line[pos] == '\t' || line[pos] == '\r') {
                ++pos;
                continue;
            }
            std::uint64_t v = 0;
            const auto [end, ec] = std::from_chars(line.data() + pos, line.data() + line.size(), v);
            const std::size_t used = static_cast<std::size_t>(end - (line.data() + pos));
            if (ec != std::errc() || (pos + used < line.size() && line[pos + used] != ' ' && line[pos + used] != '\t' &&
                                      line[pos + used] != '\r'))
                // The column only, never the text: a file named by someone else's lesson or record
                // may be one the message must not show.
                throw fail("column " + std::to_string(pos + 1) +
                           ": expected sample indices (whole numbers from 0) separated by spaces");
            if (v >= static_cast<std::uint64_t>(trainCount))
                throw fail("index " + std::to_string(v) + " is past the training set's " + std::to_string(trainCount) +
                           " images");
            if (step.size() == kMaxBatch) throw fail("more than 65536 samples in one step");
            step.push_back(static_cast<std::uint32_t>(v));
            pos += used;
        }
        if (step.empty()) throw fail("an empty step (a step takes at least one sample)");
        steps.push_back(std::move(step));
    }
    if (steps.empty()) throw InputError(origin + ": no steps (one line of sample indices per step)");
    return steps;
}

StepBatches readBatchFile(const std::filesystem::path& file, std::int64_t trainCount)
{
    const std::string origin = "batches " + file.string();
    return parseBatchFile(readRegularFile(file, origin, kMaxBatchFileBytes), trainCount, origin);
}

}  // namespace plab
