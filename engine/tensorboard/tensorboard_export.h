// Run records as TensorBoard event files, so runs can be looked at beside a user's other
// experiments (TensorBoard, or W&B's `wandb sync`, which reads the same files). Qt-free.
//
// One folder per run, DIR/<run>/, holding one file events.out.tfevents.<start>.precision-lab:
// TFRecord framing (length, masked CRC-32C of the length, the payload, its masked CRC-32C)
// around Event protobufs (tensorboard_event.proto). The first event gives the file version;
// then, at each step, the scalars and the histograms the record holds:
//   loss/train, loss_scale, lr, skipped_steps (the count so far)          every step
//   loss/test, accuracy/test                                              every evaluation
//   underflow_pct/<layer>/<kind>, overflow_pct/<layer>/<kind>             every telemetry step
//       of the nonzero finite values rounded, the percent that became 0 or +-inf
//   lost_updates_pct/<layer>   the percent of nonzero updates that left the weight unchanged
//   memory_mib/<category>, memory_mib/total                                each memory sample
//   skip_cause                 a text (TensorBoard's text plugin) at each skipped step
//                              whose record names its sites: skipCauseText's sentence
//   log2_abs/<layer>/<kind>    a histogram of log2|x| of the nonzero finite values: the
//                              record's bin [2^e, 2^(e+1)) is TensorBoard's bucket (e-1, e]
//                              shifted to [e, e+1), so the horizontal axis reads log2|x|
// Wall times are the record's start plus the steps' own times. Shares with nothing to
// count (no nonzero value rounded) are left out, as the record writes null.
#pragma once

#include "report/run_comparison.h"

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace plab {

// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78) and TFRecord's mask of it:
// ((crc >> 15) | (crc << 17)) + 0xa282ead8.
std::uint32_t crc32c(std::string_view bytes);
std::uint32_t maskedCrc32c(std::string_view bytes);

// One TFRecord: 8-byte little-endian length, masked CRC of those 8 bytes, the payload,
// masked CRC of the payload.
void appendTfRecord(std::string& out, std::string_view payload);

struct TensorBoardFile {
    std::filesystem::path file;
    std::int64_t scalars = 0;      // scalar values written
    std::int64_t histograms = 0;   // histograms written
    std::int64_t texts = 0;        // texts written (skip_cause)
};

// The event file of one run, as bytes (the file's contents), with its counts.
std::string tensorBoardEvents(const RunDigest& run, TensorBoardFile* counts = nullptr);

// Seconds since 1970 of a record's "created_at" (UTC, "2026-11-28T12:00:00Z"): the wall time
// of its events and its event file's name. 0 for a date it cannot be (before 1970, after 9999,
// a month 13) or text that is none.
double epochSeconds(const std::string& iso);

// The short id of a run in its TensorBoard folder's name: six hex digits of a hash of when it
// started and its settings.
std::string tensorBoardRunId(const RunDigest& run);

// Writes each run of the comparison into dir/<file stem of its label>-<its id>/, atomically:
// two runs never share a folder (even when their names map to one stem), and the same run
// exported again replaces its own file. A name too long for a folder is cut (`notes` says
// so). Throws InputError for a folder that cannot be made (a file or dangling link in the
// way), std::runtime_error for a file that cannot be written.
std::vector<TensorBoardFile> writeTensorBoardRuns(const RunComparison& runs, const std::filesystem::path& dir,
                                                  std::vector<std::string>* notes = nullptr);

}  // namespace plab
