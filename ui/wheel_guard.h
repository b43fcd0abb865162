// The mouse wheel over a scrolled panel scrolls it: a combo box, spin box or slider in it
// takes the wheel only while it has the keyboard focus (clicked or tabbed to), as users of
// a long settings form expect; otherwise the wheel goes to the enclosing scroll area that
// can scroll. (Scrolling the settings panel had turned conv2's precision to NVFP4 unseen.)
#pragma once

#include <QObject>

class QWidget;

namespace plab::ui {

class WheelGuard : public QObject {
    Q_OBJECT
public:
    explicit WheelGuard(QObject* parent = nullptr) : QObject(parent) {}
    // Guards every such control under `root` (again after rows are added: a control is
    // guarded once).
    void guard(QWidget* root);

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;
};

}  // namespace plab::ui
