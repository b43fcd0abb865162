// The trainer's live setting changes (train/trainer.h): the backend's rules a change is
// checked by, a change described as the record says it, refused changes reported, and a
// change applied between two steps.
#include "train/trainer.h"
#include "train/trainer_state.h"

#include "train/backend_support.h"

#include "error.h"

#include <sstream>
#include <string>
#include <vector>

namespace plab {

void Trainer::useBackendRules(const BackendInfo& info)
{
    if (auto problem = recipeProblem(settings_.recipe, info); !problem.empty()) throw InputError(problem);
    control_->setRecipeCheck([info, model = settings_.model, smoothing = settings_.labelSmoothing](const PrecisionRecipe& r) {
        if (auto problem = labelSmoothingProblem(r, model, smoothing); !problem.empty()) return problem;
        return recipeProblem(r, info);
    });
}

std::string Trainer::describeChange(const State& st, const SettingsChange& change) const
{
    std::vector<std::string> parts;
    if (change.recipe && !(*change.recipe == st.recipe))
        if (auto text = describeRecipeChange(st.recipe, *change.recipe); !text.empty()) parts.push_back(text);
    if (change.batch && *change.batch != st.batch)
        parts.push_back("batch " + std::to_string(st.batch) + " -> " + std::to_string(*change.batch));
    if (change.lr && *change.lr != settings_.optimizer.lr) {   // the base rate, which a schedule follows
        std::ostringstream out;
        out << "lr " << settings_.optimizer.lr << " -> " << *change.lr;
        parts.push_back(out.str());
    }
    std::string text;
    for (const auto& p : parts) text += (text.empty() ? "" : "; ") + p;
    return text;
}

void Trainer::reportRefusedChanges(const State& st)
{
    for (const RefusedChange& r : control_->takeRefused())
        emitEvent(ChangeRefusedEvent{st.step, describeChange(st, r.change), r.reason});
}

void Trainer::applyChange(State& st, const SettingsChange& change)
{
    const std::string text = describeChange(st, change);
    if (text.empty()) return;
    if (change.recipe && !(*change.recipe == st.recipe)) {
        const bool scalingChanged = !(change.recipe->lossScaling == st.recipe.lossScaling);
        st.recipe = *change.recipe;
        st.model->applyRecipe(st.recipe, &st.memory, *st.backend);
        if (scalingChanged) st.scaler.reconfigure(st.recipe.lossScaling);
        settings_.recipe = st.recipe;
    }
    if (change.batch) st.batch = settings_.batch = *change.batch;
    if (change.lr) {
        st.optimizer->setLearningRate(*change.lr);
        settings_.optimizer.lr = *change.lr;
    }
    emitEvent(SettingChangeEvent{st.step, text, settings_});
}

}  // namespace plab
