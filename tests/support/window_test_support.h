// What the main-window suites share: a window whose data, runs and settings all live in a
// test's own folder, so no test reads or writes the user's.
#pragma once

#include "main_window.h"

#include <QString>

#include <filesystem>

namespace plab::testing {

inline ui::MainWindowOptions isolatedWindowOptions(const std::filesystem::path& dir)
{
    ui::MainWindowOptions o;
    o.dataDir = QString::fromStdString(dir.string());
    o.runsDir = QString::fromStdString((dir / "runs").string());
    o.settingsFile = QString::fromStdString((dir / "settings.ini").string());
    return o;
}

}  // namespace plab::testing
