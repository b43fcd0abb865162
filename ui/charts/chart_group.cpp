// Chart groups and their timed views (see chart_group.h).
#include "charts/chart_group.h"

#include "charts/chart_axes.h"
#include "charts/chart_series.h"
#include "charts/chart_text.h"

#include <QAbstractSeries>
#include <QElapsedTimer>
#include <QFontMetricsF>
#include <QGraphicsSimpleTextItem>
#include <QLegend>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>
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
    setMouseTracking(true);   // the hover tool tip
}

void TimedChartView::paintEvent(QPaintEvent* event)
{
    QElapsedTimer t;
    t.start();
    QChartView::paintEvent(event);
    lastPaintNs_ = t.nsecsElapsed();
}

bool TimedChartView::zoomTo(const QRect& rect)
{
    const QRectF area = chart()->plotArea();
    const QRectF wanted = QRectF(mapToScene(rect.topLeft()), mapToScene(rect.bottomRight())).normalized() & area;
    if (wanted.width() < 8 || wanted.height() < 8) return false;
    chart()->zoomIn(wanted);
    // The groups' range setters leave these axes alone until the zoom is reset.
    for (QAbstractAxis* axis : chart()->axes()) axis->setProperty(kUserZoomProperty, true);
    zoomed_ = true;
    if (!zoomNote_) {
        zoomNote_ = new QGraphicsSimpleTextItem(QObject::tr("zoomed: right-click for the whole range"), chart());
        zoomNote_->setZValue(25);
    }
    zoomNote_->setBrush(chart()->titleBrush());
    // Inside the plot's top right corner: above it, the note ran into the chart's title.
    zoomNote_->setPos(area.right() - zoomNote_->boundingRect().width() - 4, area.top() + 2);
    zoomNote_->show();
    return true;
}

void TimedChartView::resetZoom()
{
    if (!zoomed_) return;
    for (QAbstractAxis* axis : chart()->axes()) axis->setProperty(kUserZoomProperty, QVariant());
    chart()->zoomReset();
    zoomed_ = false;
    if (zoomNote_) zoomNote_->hide();
}

ChartGroup* TimedChartView::group() const
{
    for (QWidget* w = parentWidget(); w; w = w->parentWidget())
        if (auto* g = qobject_cast<ChartGroup*>(w)) return g;
    return nullptr;
}

QString TimedChartView::valueTextAt(const QPoint& viewPos) const
{
    const Nearest near = nearestPoint(viewPos);
    if (!near.series) return {};
    const ChartGroup* g = group();
    const QString detail = g ? g->pointDetail(near.series, near.value) : QString();
    return detail.isEmpty() ? near.text : near.text + QLatin1Char('\n') + detail;
}

void TimedChartView::clickAt(const QPoint& viewPos)
{
    if (ChartGroup* g = group()) {
        const Nearest near = nearestPoint(viewPos);
        g->pointClicked(near.series, near.value);
    }
}

TimedChartView::Nearest TimedChartView::nearestPoint(const QPoint& viewPos) const
{
    const QPointF at = mapToScene(viewPos);
    if (!chart()->plotArea().contains(at)) return {};
    constexpr double kReach = 12.0;
    double best = kReach * kReach;
    Nearest nearest;
    auto number = [](const QAbstractAxis* axis, double v) {
        const auto* value = qobject_cast<const QValueAxis*>(axis);
        // A log2 axis ("2^%d") holds exponents: say the power.
        if (value && value->labelFormat().startsWith(QLatin1String("2^"))) return QStringLiteral("2^%1").arg(v, 0, 'g', 4);
        return QString::number(v, 'g', 5);
    };
    for (QAbstractSeries* s : chart()->series()) {
        auto* xy = qobject_cast<QXYSeries*>(s);
        if (!xy || !xy->isVisible() || xy->count() == 0) continue;
        const QList<QPointF> points = xy->points();
        auto consider = [&](qsizetype i) {
            const QPointF p = chart()->mapToPosition(points[i], s);
            const double d = (p.x() - at.x()) * (p.x() - at.x()) + (p.y() - at.y()) * (p.y() - at.y());
            // At the same distance the series drawn later, over the other, is the one seen (a
            // skipped step's marker or band over the scale line it sits on).
            if (!(d <= best)) return;
            best = d;
            const QList<QAbstractAxis*> xs = s->attachedAxes();
            const QAbstractAxis* xAxis = nullptr;
            const QAbstractAxis* yAxis = nullptr;
            for (const QAbstractAxis* a : xs) (a->orientation() == Qt::Horizontal ? xAxis : yAxis) = a;
            nearest.series = s;
            nearest.value = points[i];
            nearest.text = QStringLiteral("%1\n%2 %3 · %4 %5")
                               .arg(xy->name(), xAxis ? xAxis->titleText() : QStringLiteral("x"),
                                    number(xAxis, points[i].x()), yAxis ? yAxis->titleText() : QStringLiteral("y"),
                                    number(yAxis, points[i].y()));
        };
        if (s->type() == QAbstractSeries::SeriesTypeLine) {
            // x-sorted (steps, reduced per column, a histogram's outline): the neighbours of
            // the mouse's x are the candidates.
            const double x = chart()->mapToValue(at, s).x();
            const auto it = std::lower_bound(points.begin(), points.end(), x, [](const QPointF& p, double v) { return p.x() < v; });
            const qsizetype i = it - points.begin();
            for (qsizetype k = std::max<qsizetype>(0, i - 3); k < std::min(points.size(), i + 3); ++k) consider(k);
        } else if (points.size() <= 20000) {
            for (qsizetype k = 0; k < points.size(); ++k) consider(k);
        }
    }
    return nearest;
}

void TimedChartView::mousePressEvent(QMouseEvent* event)
{
    if (event->button() == Qt::LeftButton) {
        bandOrigin_ = event->position().toPoint();
        if (!band_) band_ = new QRubberBand(QRubberBand::Rectangle, viewport());
        band_->setGeometry(QRect(bandOrigin_, QSize()));
        band_->show();
    }
    QChartView::mousePressEvent(event);
}

void TimedChartView::mouseMoveEvent(QMouseEvent* event)
{
    if (band_ && band_->isVisible() && (event->buttons() & Qt::LeftButton)) {
        band_->setGeometry(QRect(bandOrigin_, event->position().toPoint()).normalized());
    } else if (event->buttons() == Qt::NoButton) {
        const QString text = valueTextAt(event->position().toPoint());
        if (text.isEmpty()) QToolTip::hideText();
        else QToolTip::showText(event->globalPosition().toPoint(), text, this);
    }
    QChartView::mouseMoveEvent(event);
}

void TimedChartView::mouseReleaseEvent(QMouseEvent* event)
{
    if (event->button() == Qt::LeftButton && band_ && band_->isVisible()) {
        band_->hide();
        if (!zoomTo(QRect(bandOrigin_, event->position().toPoint()).normalized())) clickAt(event->position().toPoint());
    } else if (event->button() == Qt::RightButton) {
        resetZoom();
    }
    QChartView::mouseReleaseEvent(event);
}

void TimedChartView::mouseDoubleClickEvent(QMouseEvent* event)
{
    resetZoom();
    QChartView::mouseDoubleClickEvent(event);
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
    // A run's layers differ in hue as well as lightness (shades of one hue were hard to tell
    // apart), the hue within 20 degrees of the run's so the run stays recognisable beside
    // the others (their colours are 30 degrees and more apart); then the same again.
    // Chosen so that any two of a run's first six layers are at least 38 apart in RGB for
    // each of the first six colours the run store hands out.
    static constexpr int kHue[] = {-20, -15, 20, -15, 15};
    static constexpr int kLightness[] = {45, -30, 15, -60, 60};   // of HSL's 0..255
    const std::size_t k = (li - 1) % std::size(kHue);
    int h = 0, s = 0, l = 0, a = 0;
    runColor.getHsl(&h, &s, &l, &a);
    if (h < 0) h = 0;   // grey: lightness alone
    const int hue = s > 0 ? (h + kHue[k] + 360) % 360 : h;
    return QColor::fromHsl(hue, s, std::clamp(l + kLightness[k], 40, 200), a);
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
    fitChartHeights();
    presentationModeChanged();
}

int ChartGroup::chartMinimumHeight(bool presentation, int fontPixels)
{
    const int normal = TimedChartView::kMinimumSize.height();
    if (!presentation) return normal;
    if (fontPixels <= 0) return kPresentationChartHeight;
    // Titles, legends and tick labels scale with the fonts, the chart's margins do not: a
    // part that does not scale (120 px), so the plot keeps its share at 1280x720's 16 px.
    constexpr double kFixed = 120;
    return std::max(normal, static_cast<int>(std::lround(kFixed + (kPresentationChartHeight - kFixed) * fontPixels / 24.0)));
}

void ChartGroup::fitChartHeights()
{
    const int h = chartMinimumHeight(presentation_, presentationPixels_);
    for (TimedChartView* view : findChildren<TimedChartView*>()) view->setMinimumHeight(h);
}

void ChartGroup::setPresentationFontPixels(int pixels)
{
    if (presentationPixels_ == pixels) return;
    presentationPixels_ = pixels;
    if (!presentation_) return;
    setFont(presentationFont(1.0));
    applyFonts();
    fitChartHeights();
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
