// See wheel_guard.h.
#include "wheel_guard.h"

#include <QAbstractScrollArea>
#include <QAbstractSlider>
#include <QAbstractSpinBox>
#include <QApplication>
#include <QComboBox>
#include <QScrollBar>
#include <QWheelEvent>

#include <cstdlib>

namespace plab::ui {

namespace {

constexpr const char* kGuarded = "plabWheelGuarded";

void guardOne(QWidget* w, QObject* filter)
{
    if (w->property(kGuarded).toBool()) return;
    w->setProperty(kGuarded, true);
    w->setFocusPolicy(Qt::StrongFocus);   // the wheel alone no longer gives it the focus
    w->installEventFilter(filter);
}

}  // namespace

void WheelGuard::guard(QWidget* root)
{
    for (auto* w : root->findChildren<QComboBox*>()) guardOne(w, this);
    for (auto* w : root->findChildren<QAbstractSpinBox*>()) guardOne(w, this);
    for (auto* w : root->findChildren<QAbstractSlider*>())
        if (!qobject_cast<QScrollBar*>(w)) guardOne(w, this);
}

bool WheelGuard::eventFilter(QObject* watched, QEvent* event)
{
    if (event->type() != QEvent::Wheel) return false;
    auto* w = qobject_cast<QWidget*>(watched);
    if (!w || w->hasFocus()) return false;
    // To the nearest enclosing scroll area that can scroll that way (a table of rows sized
    // to its contents cannot: the panel around it can).
    const auto* wheel = static_cast<QWheelEvent*>(event);
    const bool vertical = std::abs(wheel->angleDelta().y()) >= std::abs(wheel->angleDelta().x());
    for (QWidget* p = w->parentWidget(); p; p = p->parentWidget()) {
        auto* area = qobject_cast<QAbstractScrollArea*>(p);
        if (!area) continue;
        const QScrollBar* bar = vertical ? area->verticalScrollBar() : area->horizontalScrollBar();
        if (bar && bar->maximum() > bar->minimum()) {
            QApplication::sendEvent(area->viewport(), event);
            break;
        }
    }
    return true;   // never to the control itself
}

}  // namespace plab::ui
