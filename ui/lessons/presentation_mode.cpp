// Presentation mode (see presentation_mode.h).
#include "lessons/presentation_mode.h"

#include "charts/charts_view.h"

#include <QDockWidget>
#include <QEvent>
#include <QMainWindow>
#include <QTimer>

#include <algorithm>
#include <cmath>

namespace plab::ui {

namespace {

// Black on white with saturated highlights: readable on a projector.
QPalette highContrastPalette()
{
    QPalette p;
    p.setColor(QPalette::Window, Qt::white);
    p.setColor(QPalette::WindowText, Qt::black);
    p.setColor(QPalette::Base, Qt::white);
    p.setColor(QPalette::AlternateBase, QColor(0xee, 0xee, 0xee));
    p.setColor(QPalette::Text, Qt::black);
    p.setColor(QPalette::Button, QColor(0xf0, 0xf0, 0xf0));
    p.setColor(QPalette::ButtonText, Qt::black);
    p.setColor(QPalette::Highlight, QColor(0x00, 0x3c, 0xb4));
    p.setColor(QPalette::HighlightedText, Qt::white);
    p.setColor(QPalette::ToolTipBase, Qt::white);
    p.setColor(QPalette::ToolTipText, Qt::black);
    // Disabled controls stay visibly disabled (setColor above set every group alike: a
    // finished lesson's Stop button looked as pressable as Run): mid grey on a paler button.
    const QColor disabledText(0x8c, 0x8c, 0x8c);
    for (QPalette::ColorRole role : {QPalette::WindowText, QPalette::Text, QPalette::ButtonText})
        p.setColor(QPalette::Disabled, role, disabledText);
    p.setColor(QPalette::Disabled, QPalette::Button, QColor(0xf7, 0xf7, 0xf7));
    return p;
}

}  // namespace

PresentationMode::PresentationMode(QMainWindow* window, ChartsView* charts)
    : QObject(window), window_(window), charts_(charts)
{
}

void PresentationMode::enter(const QStringList& charts, const QList<QDockWidget*>& keepDocks)
{
    if (active_) leave();
    active_ = true;
    savedLayout_ = window_->saveState();
    savedFont_ = window_->font();
    savedPalette_ = window_->palette();
    hadOwnFont_ = window_->testAttribute(Qt::WA_SetFont);
    hadOwnPalette_ = window_->testAttribute(Qt::WA_SetPalette);
    hiddenDocks_.clear();
    for (QDockWidget* dock : window_->findChildren<QDockWidget*>()) {
        if (keepDocks.contains(dock)) {
            dock->show();
            continue;
        }
        if (dock->isVisible()) hiddenDocks_ << dock;
        dock->hide();
    }
    savedGroupVisible_.clear();
    for (const QString& name : ChartsView::groupNames()) {
        QWidget* group = charts_->group(name);
        savedGroupVisible_.insert(name, !group->isHidden());
        group->setVisible(charts.isEmpty() || charts.contains(name));
    }
    charts_->setPresentationMode(true);
    window_->setPalette(highContrastPalette());
    keptDocks_ = QList<QPointer<QDockWidget>>(keepDocks.begin(), keepDocks.end());
    pixels_ = 0;
    applyFontPixels();
    window_->installEventFilter(this);
    charts_->redrawNow();
    emit activeChanged(true);
}

int PresentationMode::fontPixelsFor(QSize window)
{
    const double ratio = std::min(window.width() / 1920.0, window.height() / 1080.0);
    return std::max(kMinPixels, static_cast<int>(std::lround(kPixelsAt1080p * ratio)));
}

void PresentationMode::applyFontPixels()
{
    const int pixels = fontPixelsFor(window_->size());
    if (pixels == pixels_) return;
    pixels_ = pixels;
    QFont font = savedFont_;
    font.setPixelSize(pixels);
    window_->setFont(font);
    charts_->setPresentationFontPixels(pixels);
    // Once the docks and the new font are laid out: the kept side docks only as wide as
    // their content needs, the charts the rest.
    QTimer::singleShot(0, this, [this] { fitSideDocks(keptDocks_); });
}

bool PresentationMode::eventFilter(QObject* watched, QEvent* event)
{
    if (active_ && watched == window_ && event->type() == QEvent::Resize) applyFontPixels();
    return QObject::eventFilter(watched, event);
}

void PresentationMode::fitSideDocks(const QList<QPointer<QDockWidget>>& docks)
{
    if (!active_) return;
    QList<QDockWidget*> side;
    QList<int> widths;
    for (QDockWidget* dock : docks) {
        if (!dock || !dock->isVisible() || dock->isFloating()) continue;
        const Qt::DockWidgetArea area = window_->dockWidgetArea(dock);
        if (area != Qt::LeftDockWidgetArea && area != Qt::RightDockWidgetArea) continue;
        // A column of about kDockColumnChars characters of the large font (wrapped text reads
        // well there), wider only where the content cannot be narrower, at most kMaxDockShare
        // of the window.
        const int column = dock->fontMetrics().averageCharWidth() * kDockColumnChars;
        const int needed = std::max(column, dock->minimumSizeHint().width());
        side << dock;
        widths << std::min(needed, static_cast<int>(window_->width() * kMaxDockShare));
    }
    if (!side.isEmpty()) window_->resizeDocks(side, widths, Qt::Horizontal);
}

void PresentationMode::leave()
{
    if (!active_) return;
    active_ = false;
    pixels_ = 0;
    window_->removeEventFilter(this);
    charts_->setPresentationFontPixels(0);
    // A font or palette the window did not have of its own is inherited again (a default
    // QFont / QPalette resolves nothing), so later theme changes still reach it.
    window_->setFont(hadOwnFont_ ? savedFont_ : QFont());
    window_->setPalette(hadOwnPalette_ ? savedPalette_ : QPalette());
    charts_->setPresentationMode(false);
    for (auto it = savedGroupVisible_.cbegin(); it != savedGroupVisible_.cend(); ++it)
        charts_->group(it.key())->setVisible(it.value());
    for (const QPointer<QDockWidget>& dock : hiddenDocks_)
        if (dock) dock->show();
    window_->restoreState(savedLayout_);
    charts_->redrawNow();
    emit activeChanged(false);
}

}  // namespace plab::ui
