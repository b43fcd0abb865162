// Help > User Guide (the README and the docs a user reads first, built into the app, so
// they open offline) and Help > Keyboard Shortcuts (every menu action's keys, read from the
// window's actions, so the list is never out of date).
#pragma once

class QWidget;
class QDialog;

namespace plab::ui {

// Non-modal; each returns the dialog shown (deleted when closed).
QDialog* showUserGuide(QWidget* parent);
QDialog* showKeyboardShortcuts(QWidget* window);

}  // namespace plab::ui
