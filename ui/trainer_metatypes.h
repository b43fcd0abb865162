// Qt meta-type declarations for the engine's value types that cross from the training
// thread to the GUI thread in queued signals (events, results, settings, changes).
#pragma once

#include "train/events.h"
#include "train/settings.h"
#include "train/trainer.h"

#include <QMetaType>
#include <QVector>

Q_DECLARE_METATYPE(plab::TrainerEvent)
Q_DECLARE_METATYPE(plab::RunResult)
Q_DECLARE_METATYPE(plab::TrainSettings)
Q_DECLARE_METATYPE(plab::SettingsChange)

namespace plab::ui {

// Registers the types above (and QVector<TrainerEvent>) once; safe to call repeatedly.
void registerTrainerMetaTypes();

}  // namespace plab::ui
