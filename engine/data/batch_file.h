// The sample indices of every training step, as a text file another framework can read to
// feed the same batches in the same order (`plab train --write-batches`), and read back to
// replay them (`--read-batches`). One line per step: its training samples' 0-based indices
// into the training set, space-separated, in the order the step took them; lines starting
// with '#' are comments (the first says what wrote the file).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace plab {

using StepBatches = std::vector<std::vector<std::uint32_t>>;

// The file's text; `about` goes into the first comment line ("mnist, 60000 training images").
std::string batchFileText(const StepBatches& steps, const std::string& about);
void writeBatchFile(const std::filesystem::path& file, const StepBatches& steps, const std::string& about);

// Throws InputError "batches <file>: line N: ..." for text that is not indices, an index
// at or past trainCount, a step of more than 65536 samples, or a file without steps.
StepBatches parseBatchFile(const std::string& text, std::int64_t trainCount, const std::string& origin);
// A regular file of at most kMaxBatchFileBytes (a FIFO or a device is refused, not read).
StepBatches readBatchFile(const std::filesystem::path& file, std::int64_t trainCount);

// 1 GiB: a million steps of 128 six-digit indices is under that.
inline constexpr std::uint64_t kMaxBatchFileBytes = std::uint64_t{1} << 30;

}  // namespace plab
