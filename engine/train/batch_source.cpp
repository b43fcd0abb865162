// The batches of a run (see batch_source.h).
#include "train/batch_source.h"

#include "data/dataset.h"

#include <algorithm>

namespace plab {

BatchSource BatchSource::epochs(std::int64_t trainCount, std::uint64_t seed, int epochs)
{
    BatchSource s;
    s.trainCount_ = trainCount;
    s.seed_ = seed;
    s.epochs_ = epochs;
    return s;
}

BatchSource BatchSource::file(const StepBatches& batches, std::int64_t trainCount, std::string origin)
{
    BatchSource s;
    s.batches_ = &batches;
    s.trainCount_ = trainCount;
    s.origin_ = std::move(origin);
    return s;
}

bool BatchSource::done() const
{
    if (batches_) return nextBatch_ >= batches_->size();
    return epoch_ >= epochs_ || trainCount_ <= 0;
}

BatchSource::Batch BatchSource::next(int batchSize)
{
    if (batches_) {
        const auto& b = (*batches_)[nextBatch_++];
        taken_ += static_cast<std::int64_t>(b.size());
        epochEnded_ = taken_ >= (epoch_ + 1) * trainCount_;
        if (epochEnded_) epoch_ = static_cast<int>(taken_ / trainCount_);
        return {b.data(), static_cast<std::int64_t>(b.size())};
    }
    if (position_ == 0) order_ = epochOrder(trainCount_, seed_, epoch_);
    const std::int64_t n = std::min<std::int64_t>(batchSize, trainCount_ - position_);
    const Batch batch{order_.data() + position_, n};
    position_ += n;
    epochEnded_ = position_ >= trainCount_;
    if (epochEnded_) {
        ++epoch_;
        position_ = 0;
    }
    return batch;
}

std::string BatchSource::completedText(std::int64_t steps) const
{
    if (batches_) return "completed the " + std::to_string(steps) + " steps of " + origin_;
    return "completed " + std::to_string(steps) + " steps";
}

}  // namespace plab
