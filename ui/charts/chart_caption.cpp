// Caption placement clear of the data (see chart_caption.h).
#include "charts/chart_caption.h"

#include <QFontMetricsF>
#include <QStringList>

#include <QXYSeries>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>

namespace plab::ui {

namespace {

// Whether the segment a-b meets `r` (Liang-Barsky clipping: the parameter range of the
// segment inside each pair of edges must not be empty).
bool segmentMeetsRect(QPointF a, QPointF b, const QRectF& r)
{
    double t0 = 0, t1 = 1;
    const double dx = b.x() - a.x(), dy = b.y() - a.y();
    const double p[] = {-dx, dx, -dy, dy};
    const double q[] = {a.x() - r.left(), r.right() - a.x(), a.y() - r.top(), r.bottom() - a.y()};
    for (int i = 0; i < 4; ++i) {
        if (p[i] == 0) {
            if (q[i] < 0) return false;   // parallel to this edge and outside it
            continue;
        }
        const double t = q[i] / p[i];
        if (p[i] < 0) t0 = std::max(t0, t);
        else t1 = std::min(t1, t);
        if (t0 > t1) return false;
    }
    return true;
}

// Segments of the visible line series and markers of the visible scatter series inside `r`,
// counted up to `enough`.
int dataInside(QChart* chart, const QRectF& r, int enough = std::numeric_limits<int>::max())
{
    int hits = 0;
    for (QAbstractSeries* s : chart->series()) {
        auto* xy = qobject_cast<QXYSeries*>(s);
        if (!xy || !xy->isVisible()) continue;
        const bool markersOnly = s->type() == QAbstractSeries::SeriesTypeScatter;
        const QList<QPointF> points = xy->points();
        QPointF previous;
        bool joined = false;   // whether `previous` starts a segment to the next point
        for (const QPointF& value : points) {
            const QPointF at = chart->mapToPosition(value, s);
            if (!std::isfinite(at.x()) || !std::isfinite(at.y())) {   // a gap (NaN, or <= 0 on a log axis)
                joined = false;
                continue;
            }
            if (markersOnly || !joined) hits += r.contains(at) ? 1 : 0;
            else hits += segmentMeetsRect(previous, at, r) ? 1 : 0;
            if (hits >= enough) return hits;
            previous = at;
            joined = true;
        }
    }
    return hits;
}

}  // namespace

int placeCaptionClearOfData(QChart* chart, QGraphicsItem* caption)
{
    const QRectF area = chart->plotArea();
    if (area.width() <= 0 || area.height() <= 0) return 0;
    const QSizeF size = caption->boundingRect().size();
    const qreal left = area.left() + 6, right = area.right() - size.width() - 6;
    const qreal top = area.top() + 4, bottom = area.bottom() - size.height() - 4;
    const QPointF corners[] = {{right, bottom}, {right, top}, {left, bottom}, {left, top}};
    // A little air around the text: a line grazing its edge is as hard to read.
    auto covered = [&](QPointF corner, int enough = std::numeric_limits<int>::max()) {
        return dataInside(chart, QRectF(corner, size).adjusted(-3, -3, 3, 3), enough);
    };
    // Redrawn every frame while a run trains: a corner that is still free is kept after one
    // check that stops at the first hit, so the caption does not jump and the frame stays cheap.
    if (std::find(std::begin(corners), std::end(corners), caption->pos()) != std::end(corners) &&
        covered(caption->pos(), 1) == 0)
        return 0;
    QPointF best = corners[0];
    int fewest = std::numeric_limits<int>::max();
    for (const QPointF& corner : corners) {
        const int hits = covered(corner, fewest);   // stops once it cannot beat the best so far
        if (hits < fewest) {
            fewest = hits;
            best = corner;
        }
        if (hits == 0) break;
    }
    caption->setPos(best);
    return fewest;
}

QGraphicsSimpleTextItem* makeChartCaption(QChart* chart)
{
    auto* caption = new QGraphicsSimpleTextItem(chart);
    caption->setZValue(20);
    QObject::connect(chart, &QChart::plotAreaChanged, chart, [chart, caption] {   // the caption lives as long as the chart
        if (!caption->text().isEmpty()) placeCaptionClearOfData(chart, caption);
    });
    return caption;
}

QLabel* makeLabelUnderChart(QWidget* parent, const QString& objectName, Qt::TextFormat format)
{
    auto* label = new QLabel(parent);
    label->setObjectName(objectName);
    // Not wrapped by the label: a wrapped label in a chart group's layout was given the
    // height of its narrowest wrapping.
    label->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Fixed);
    label->setAlignment(Qt::AlignLeft | Qt::AlignTop);
    label->setTextFormat(format);
    label->hide();
    return label;
}

QString wrapToWidth(const QString& text, const QFont& font, qreal width)
{
    if (text.isEmpty()) return {};
    const QFontMetricsF metrics(font);
    QStringList wrapped;
    for (const QString& line : text.split(QLatin1Char('\n'))) {
        QString current;
        for (const QString& word : line.split(QLatin1Char(' '))) {
            const QString candidate = current.isEmpty() ? word : current + QLatin1Char(' ') + word;
            if (current.isEmpty() || metrics.horizontalAdvance(candidate) <= width) {
                current = candidate;
            } else {
                wrapped << metrics.elidedText(current, Qt::ElideRight, width);
                current = word;
            }
        }
        wrapped << metrics.elidedText(current, Qt::ElideRight, width);
    }
    return wrapped.join(QLatin1Char('\n'));
}

void setChartCaption(QChart* chart, QGraphicsSimpleTextItem* caption, const QString& text)
{
    caption->setBrush(chart->titleBrush());
    // Each line wrapped at spaces to the plot's width; a word wider than that is elided.
    const QString shown = wrapToWidth(text, caption->font(), std::max<qreal>(80, chart->plotArea().width() - 12));
    if (caption->text() != shown) caption->setText(shown);
    if (caption->toolTip() != text) caption->setToolTip(text);
    caption->setVisible(!text.isEmpty());
    if (!text.isEmpty()) placeCaptionClearOfData(chart, caption);
}

bool setChartCaptionIfClear(QChart* chart, QGraphicsSimpleTextItem* caption, const QString& text, bool onPlot)
{
    setChartCaption(chart, caption, onPlot ? text : QString());
    if (text.isEmpty()) return true;
    if (onPlot && caption->boundingRect().height() <= chart->plotArea().height() / 2 &&
        placeCaptionClearOfData(chart, caption) == 0)
        return true;
    setChartCaption(chart, caption, QString());
    caption->setToolTip(text);
    return false;
}

}  // namespace plab::ui
