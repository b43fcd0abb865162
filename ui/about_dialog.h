// Help > About: what this build is and what it runs on (Qt, the engine, OpenBLAS from the
// CPU backend, CUDA and cuDNN from the plugin probe, or why they are not available).
#pragma once

#include <QString>

class QWidget;

namespace plab::ui {

QString aboutText();   // rich text
void showAboutDialog(QWidget* parent);

}  // namespace plab::ui
