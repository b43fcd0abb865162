// Presentation mode for the classroom: large widget fonts, a high-contrast palette, the
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

    static constexpr double kFontScale = 1.6;   // fonts grow by this factor
    static constexpr int kDockColumnChars = 30;    // a kept side dock's width, in characters
    static constexpr double kMaxDockShare = 0.3;   // of the window's width

signals:
    void activeChanged(bool active);

private:
    void fitSideDocks(const QList<QPointer<QDockWidget>>& docks);

    QMainWindow* window_;
    ChartsView* charts_;
    bool active_ = false;
    QByteArray savedLayout_;
    QFont savedFont_;
    QPalette savedPalette_;
    bool hadOwnFont_ = false;      // the window had a font / palette set on it (else inherited)
    bool hadOwnPalette_ = false;
    QHash<QString, bool> savedGroupVisible_;
    QList<QPointer<QDockWidget>> hiddenDocks_;
};

}  // namespace plab::ui
