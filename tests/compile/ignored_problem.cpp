// Compiled, never linked, by tests/compile/ignored_problem.sh: a function that returns a
// problem (an error sentence, empty when there is none) is [[nodiscard]] and the build
// makes an ignored result an error, so this file compiles only when the problem is used.
#include "train/settings.h"
#include "train/trainer.h"

int main()
{
    plab::TrainSettings settings;
    plab::TrainerControl control;
#ifdef PLAB_IGNORE_THE_PROBLEM
    plab::validateSettings(settings);
    control.requestChange(plab::SettingsChange{});
#else
    if (!plab::validateSettings(settings).empty()) return 1;
    if (!control.requestChange(plab::SettingsChange{}).empty()) return 1;
#endif
    return 0;
}
