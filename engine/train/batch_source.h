// The batches of a run, in order: each epoch's seeded order of the training set cut at the
// batch size of the moment (a live change applies to the next batch), or the steps of a
// batch file (--read-batches), whose epochs end each time the samples taken reach another
// whole training set. The trainer's loop is one loop over either.
#pragma once

#include "data/batch_file.h"

#include <cstdint>
#include <string>
#include <vector>

namespace plab {

class BatchSource {
public:
    // `epochs` passes over `trainCount` samples in epochOrder(trainCount, seed, epoch).
    static BatchSource epochs(std::int64_t trainCount, std::uint64_t seed, int epochs);
    // The file's steps; `origin` names the file in the completion message.
    static BatchSource file(const StepBatches& batches, std::int64_t trainCount, std::string origin);

    struct Batch {
        const std::uint32_t* indices = nullptr;
        std::int64_t count = 0;
    };
    bool done() const;
    // The next batch (at most `batchSize` samples when cutting epochs). Not when done().
    Batch next(int batchSize);
    // After next(): whether that batch ended an epoch, and the epoch the next one is in.
    bool epochEnded() const { return epochEnded_; }
    int epoch() const { return epoch_; }
    // The status message of a run that took every batch.
    std::string completedText(std::int64_t steps) const;

private:
    BatchSource() = default;
    const StepBatches* batches_ = nullptr;   // the file's, or null: epochs
    std::string origin_;
    std::int64_t trainCount_ = 0;
    std::uint64_t seed_ = 0;
    int epochs_ = 0;
    int epoch_ = 0;
    bool epochEnded_ = false;
    std::size_t nextBatch_ = 0;   // file: the index of the next step
    std::int64_t taken_ = 0;      // file: samples taken so far
    std::vector<std::uint32_t> order_;   // epochs: this epoch's order
    std::int64_t position_ = 0;          // epochs: where in it the next batch starts
};

}  // namespace plab
