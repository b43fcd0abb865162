// Presentation mode for the classroom: large widget fonts scaled with the window (24 px at
// 1920x1080, 16 px at 1280x720: fontPixelsFor), a high-contrast palette, the
// charts' own presentation look (ChartsView::setPresentationMode: thick lines, larger
// chart fonts, full-contrast text and grid), only the lesson's chart groups (all when no
// lesson is open), every dock hidden but the ones asked to stay (the lesson panel), which
// on the left or right take only the width their content needs: the charts get the rest.
// Leaving restores the fonts, palette, chart groups and the window layout.
#pragma once

#include <QByteArray>
#include <QFont>
#include <QHash>
#include <QList>
#include <QObject>
#include <QPalette>
#include <QPointer>
#include <QSize>
#include <QStringList>

QT_BEGIN_NAMESPACE
class QDockWidget;
class QMainWindow;
QT_END_NAMESPACE

namespace plab::ui {

class ChartsView;

class PresentationMode : public QObject {
    Q_OBJECT
public:
    PresentationMode(QMainWindow* window, ChartsView* charts);

    // charts: the group names to show (empty: all); keepDocks stay visible.
    void enter(const QStringList& charts, const QList<QDockWidget*>& keepDocks);
    void leave();
    bool isActive() const { return active_; }

    // The fonts' size in pixels for a window of this size: kPixelsAt1080p at 1920x1080,
    // in proportion to the smaller of the two ratios elsewhere, never below kMinPixels.
    static int fontPixelsFor(QSize window);
    static constexpr int kPixelsAt1080p = 24;
    static constexpr int kMinPixels = 14;
    static constexpr int kDockColumnChars = 30;    // a kept side dock's width, in characters
    static constexpr double kMaxDockShare = 0.3;   // of the window's width

    // The fonts' pixel size now (0 while inactive).
    int fontPixels() const { return pixels_; }

signals:
    void activeChanged(bool active);

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;   // the window resized

private:
    void fitSideDocks(const QList<QPointer<QDockWidget>>& docks);
    void applyFontPixels();   // for the window's size now

    QMainWindow* window_;
    ChartsView* charts_;
    bool active_ = false;
    int pixels_ = 0;
    QList<QPointer<QDockWidget>> keptDocks_;
    QByteArray savedLayout_;
    QFont savedFont_;
    QPalette savedPalette_;
    bool hadOwnFont_ = false;      // the window had a font / palette set on it (else inherited)
    bool hadOwnPalette_ = false;
    QHash<QString, bool> savedGroupVisible_;
    QList<QPointer<QDockWidget>> hiddenDocks_;
};

}  // namespace plab::ui
