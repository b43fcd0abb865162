// The commands to one run (train/trainer.h): pause, resume, stop, and setting changes
// checked by the run's rules, queued for the trainer or kept as refusals for its record.
#include "train/trainer.h"

#include "train/settings.h"

#include <cmath>
#include <utility>

namespace plab {

void TrainerControl::pause()
{
    std::lock_guard lock(mutex_);
    paused_ = true;
}

void TrainerControl::resume()
{
    {
        std::lock_guard lock(mutex_);
        paused_ = false;
    }
    wake_.notify_all();
}

void TrainerControl::stop()
{
    {
        std::lock_guard lock(mutex_);
        stop_.store(true);
    }
    wake_.notify_all();
}

std::string TrainerControl::problemWith(const SettingsChange& change,
                                        const std::function<std::string(const PrecisionRecipe&)>& check) const
{
    if (change.recipe) {
        if (auto problem = change.recipe->validate(); !problem.empty()) return problem;
        if (check)
            if (auto problem = check(*change.recipe); !problem.empty()) return problem;
    }
    // The batch size and the learning rate against their settings rows' ranges.
    const auto named = [](const char* key, std::string problem) {
        return problem.empty() ? problem : std::string(key) + " " + problem;
    };
    if (change.batch)
        if (auto problem = named("batch", settingWholeProblem(*findSettingKey("batch"), *change.batch)); !problem.empty())
            return problem;
    if (change.lr)
        if (auto problem = named("lr", settingNumberProblem(*findSettingKey("lr"), *change.lr)); !problem.empty())
            return problem;
    if (change.batch && !batchesFixed_.empty()) return batchesFixed_;
    return {};
}

std::string TrainerControl::requestChange(const SettingsChange& change)
{
    std::lock_guard lock(mutex_);
    if (auto problem = problemWith(change, recipeCheck_); !problem.empty()) {
        refused_.push_back({change, problem});
        return problem;
    }
    if (change.recipe) pending_.recipe = change.recipe;
    if (change.batch) pending_.batch = change.batch;
    if (change.lr) pending_.lr = change.lr;
    return {};
}

void TrainerControl::setRecipeCheck(std::function<std::string(const PrecisionRecipe&)> check)
{
    std::lock_guard lock(mutex_);
    recipeCheck_ = std::move(check);
    if (!pending_.recipe || !recipeCheck_) return;
    if (auto problem = recipeCheck_(*pending_.recipe); !problem.empty()) {
        refused_.push_back({SettingsChange{pending_.recipe, std::nullopt, std::nullopt}, problem});
        pending_.recipe.reset();
    }
}

void TrainerControl::fixBatches(std::string reason)
{
    std::lock_guard lock(mutex_);
    batchesFixed_ = std::move(reason);
}

SettingsChange TrainerControl::takePending()
{
    std::lock_guard lock(mutex_);
    return std::exchange(pending_, {});
}

std::vector<RefusedChange> TrainerControl::takeRefused()
{
    std::lock_guard lock(mutex_);
    return std::exchange(refused_, {});
}

bool TrainerControl::waitWhilePaused(const std::function<void()>& onPause,
                                     const std::function<void()>& onResume)
{
    std::unique_lock lock(mutex_);
    if (!paused_ || stop_) return false;
    lock.unlock();
    onPause();
    lock.lock();
    // Polled as well as woken: stopFromSignal stores without notifying.
    while (!wake_.wait_for(lock, kPausePoll, [&] { return !paused_ || stop_; })) {
    }
    lock.unlock();
    onResume();
    return true;
}

}  // namespace plab
