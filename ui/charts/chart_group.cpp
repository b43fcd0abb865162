// Chart groups and their timed views (see chart_group.h).
#include "charts/chart_group.h"

#include "charts/chart_series.h"
#include "charts/chart_text.h"

#include <QAbstractSeries>
#include <QElapsedTimer>
#include <QFontMetricsF>
#include <QGraphicsSimpleTextItem>
#include <QLegend>
#include <QPainter>
#include <QValueAxis>
#include <QXYSeries>

#include <algorithm>
#include <cmath>

namespace plab::ui {

namespace {
constexpr qreal kPresentationFontScale = 1.5;
constexpr qreal kPresentationMinWidth = 3.0;   // main lines
constexpr qreal kPresentationFaintWidth = 2.0;   // raw, dashed and marker lines

// The font `factor` times as large, whether it was sized in points or pixels.
QFont scaledFont(QFont f, qreal factor)
{
    if (f.pointSizeF() > 0) f.setPointSizeF(f.pointSizeF() * factor);
    else if (f.pixelSize() > 0) f.setPixelSize(std::max(1, static_cast<int>(std::lround(f.pixelSize() * factor))));
    return f;
}

QFont pixelFont(QFont f, qreal pixels)
{
    f.setPixelSize(std::max(1, static_cast<int>(std::lround(pixels))));
    return f;
}
}  // namespace

TimedChartView::TimedChartView(QChart* chart, QWidget* parent) : QChartView(chart, parent)
{
    setRenderHint(QPainter::Antialiasing);
    setMinimumSize(kMinimumSize);
    setFrameShape(QFrame::NoFrame);
    setViewportUpdateMode(QGraphicsView::FullViewportUpdate);
    setOptimizationFlags(QGraphicsView::DontSavePainterState | QGraphicsView::DontAdjustForAntialiasing);
    if (scene()) scene()->setItemIndexMethod(QGraphicsScene::NoIndex);
}

void TimedChartView::paintEvent(QPaintEvent* event)
{
    QElapsedTimer t;
    t.start();
    QChartView::paintEvent(event);
    lastPaintNs_ = t.nsecsElapsed();
}

ChartGroup::ChartGroup(QString name, QWidget* parent) : QWidget(parent), name_(std::move(name))
{
    setObjectName(name_);
}

qint64 ChartGroup::lastPaintNs() const
{
    qint64 ns = 0;
    for (const auto* view : findChildren<TimedChartView*>()) ns += view->lastPaintNs();
    return ns;
}

QColor ChartGroup::layerColor(const QColor& runColor, std::size_t li)
{
    if (li == 0) return runColor;
    const int i = static_cast<int>(li);
    return li % 2 ? runColor.lighter(100 + 25 * i) : runColor.darker(100 + 20 * i);
}

QPen ChartGroup::runPen(const QColor& color, qreal width, Qt::PenStyle style) const
{
    if (!presentation_) return cosmeticPen(color, width, style);
    const bool faint = color.alpha() < 255 || width < 1.5 || style != Qt::SolidLine;
    QColor c = color;
    if (c.alpha() < 255) c.setAlpha(std::max(c.alpha(), 140));   // raw curves stay behind, but visible
    return cosmeticPen(c, std::max(width * 1.5, faint ? kPresentationFaintWidth : kPresentationMinWidth), style);
}

QString ChartGroup::runLabel(const RunPtr& run, const QList<RunPtr>& runs) const
{
    if (!presentation_ || runs.size() < 2) return run->name();
    QStringList names;
    names.reserve(runs.size());
    for (const RunPtr& r : runs) names << r->name();
    return distinguishingName(run->name(), names);
}

void ChartGroup::setChartTitle(QChart* chart, const QString& what, const QList<RunPtr>& runs, const QString& shortWhat)
{
    if (!presentation_) {
        const QString title = runs.isEmpty() ? what : QStringLiteral("%1 · %2").arg(what, runs.front()->name());
        if (chart->title() != title) chart->setTitle(title);
        return;
    }
    if (!titles_.contains(chart))
        connect(chart, &QGraphicsWidget::geometryChanged, this, [this, chart] { fitTitle(chart); });
    TitleParts& parts = titles_[chart];
    parts.what = shortWhat.isEmpty() ? what : shortWhat;
    parts.run = runs.isEmpty() ? QString() : runLabel(runs.front(), runs);
    fitTitle(chart);
}

void ChartGroup::showComparisonInLegend(QChart* chart, QAbstractSeries* series, bool watched) const
{
    setLegendVisible(chart, series, watched || !presentation_);
}

void ChartGroup::fitTitle(QChart* chart)
{
    const auto it = titles_.constFind(chart);
    if (!presentation_ || it == titles_.constEnd()) return;
    const TitleParts& parts = it.value();
    QString title = parts.run.isEmpty() ? parts.what : QStringLiteral("%1 · %2").arg(parts.what, parts.run);
    // The title gets the chart's width less its margins and the text item's own margins;
    // before the first layout (width 0) one line is assumed.
    const qreal room = chart->size().width() - chart->margins().left() - chart->margins().right() - 16;
    if (!parts.run.isEmpty() && room > 0 && QFontMetricsF(chart->titleFont()).horizontalAdvance(title) > room)
        title = parts.what.toHtmlEscaped() + QStringLiteral("<br>") + parts.run.toHtmlEscaped();   // titles are HTML
    if (chart->title() != title) chart->setTitle(title);
}

void ChartGroup::setPresentationMode(bool on)
{
    if (presentation_ == on) return;
    if (on) normalFont_ = QWidget::font();
    presentation_ = on;
    // Child widgets (combos, labels, the planner table) follow the group's font; an empty
    // QFont resolves nothing, so the inherited font comes back.
    if (on) {
        setFont(presentationFont(1.0));
    } else {
        setFont(QFont());
    }
    applyPalette(palette_);
    presentationModeChanged();
}

void ChartGroup::setPresentationFontPixels(int pixels)
{
    if (presentationPixels_ == pixels) return;
    presentationPixels_ = pixels;
    if (!presentation_) return;
    setFont(presentationFont(1.0));
    applyFonts();
    for (auto it = titles_.cbegin(); it != titles_.cend(); ++it) fitTitle(it.key());
}

QFont ChartGroup::presentationFont(qreal factor) const
{
    return presentationPixels_ > 0 ? pixelFont(normalFont_, presentationPixels_ * factor)
                                   : scaledFont(normalFont_, factor * kPresentationFontScale);
}

void ChartGroup::adaptAntialiasing()
{
    for (QChart* chart : charts()) {
        qsizetype points = 0;
        for (QAbstractSeries* s : chart->series())
            if (auto* xy = qobject_cast<QXYSeries*>(s)) points += xy->count();
        const bool smooth = points <= kAntialiasedPoints;
        if (const auto* scene = chart->scene())
            for (QGraphicsView* view : scene->views())
                if (view->renderHints().testFlag(QPainter::Antialiasing) != smooth)
                    view->setRenderHint(QPainter::Antialiasing, smooth);
    }
}

QList<QAbstractSeries*> ChartGroup::series() const
{
    QList<QAbstractSeries*> all;
    for (QChart* chart : charts()) all += chart->series();
    return all;
}

void ChartGroup::applyPalette(const QPalette& palette)
{
    palette_ = palette;
    const bool dark = palette.color(QPalette::Window).lightness() < 128;
    // Presentation mode: pure black/white and a grid that survives a projector.
    const QColor base = presentation_ ? (dark ? QColor(Qt::black) : QColor(Qt::white)) : palette.color(QPalette::Base);
    const QColor text = presentation_ ? (dark ? QColor(Qt::white) : QColor(Qt::black)) : palette.color(QPalette::Text);
    for (QChart* chart : charts()) {
        const auto theme = dark ? QChart::ChartThemeDark : QChart::ChartThemeLight;
        if (chart->theme() != theme) chart->setTheme(theme);   // resets series colors and fonts: redraw follows
        chart->setBackgroundBrush(base);
        chart->setPlotAreaBackgroundVisible(false);
        chart->setTitleBrush(text);
        chart->legend()->setLabelColor(text);
        for (QAbstractAxis* axis : chart->axes()) {
            axis->setLabelsColor(text);
            axis->setTitleBrush(text);
            QPen grid = axis->gridLinePen();
            if (presentation_) {
                grid.setColor(faded(text, 110));
                grid.setWidthF(1.0);
            } else {
                grid.setColor(faded(text, 40));
            }
            axis->setGridLinePen(grid);
        }
    }
    applyFonts();
}

void ChartGroup::applyFonts()
{
    // Fonts are derived from the widget font each time, so turning presentation off
    // restores exactly the normal sizes.
    // With a pixel size for the window every text is at least that size; otherwise (or
    // off) sizes follow the widget font.
    const bool pixels = presentation_ && presentationPixels_ > 0;
    auto sized = [&](qreal factor, bool bold) {
        QFont f = !presentation_ ? scaledFont(QWidget::font(), factor)
                                 : presentationFont(pixels ? std::max(1.0, factor) : factor);
        f.setBold(bold);
        return f;
    };
    for (QChart* chart : charts()) {
        chart->setTitleFont(sized(1.0, true));
        chart->legend()->setFont(sized(0.85, false));
        for (QAbstractAxis* axis : chart->axes()) {
            axis->setLabelsFont(sized(0.85, false));
            // Axis titles run along the plot's height: at presentation sizes a little smaller
            // (and bold) than the rest, so they fit beside short panels.
            QFont title = pixels ? presentationFont(0.85) : sized(0.9, presentation_);
            title.setBold(presentation_);
            axis->setTitleFont(title);
        }
        // Our own captions on the chart (marker labels, counts, peaks).
        for (QGraphicsItem* item : chart->childItems())
            if (auto* caption = qgraphicsitem_cast<QGraphicsSimpleTextItem*>(item)) caption->setFont(sized(0.85, false));
    }
}

QList<RunPtr> ChartGroup::runsToDraw(const RunPtr& current, const QList<RunPtr>& compare)
{
    QList<RunPtr> runs;
    if (current) runs.append(current);
    for (const RunPtr& r : compare)
        if (r && !runs.contains(r)) runs.append(r);
    return runs;
}

TimedChartView* makeChartView(QChart* chart, QWidget* parent) { return new TimedChartView(chart, parent); }

}  // namespace plab::ui
