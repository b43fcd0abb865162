// Setting-change markers (see change_markers.h).
#include "charts/change_markers.h"

#include <QLegend>
#include <QLineSeries>

#include <algorithm>

namespace plab::ui {

ChangeMarkers::ChangeMarkers(QChart* chart, SeriesPool* pool) : QObject(chart), chart_(chart), pool_(pool)
{
    connect(chart_, &QChart::plotAreaChanged, this, &ChangeMarkers::placeLabels);
}

void ChangeMarkers::beginLabels() { used_ = 0; }

void ChangeMarkers::addRun(const RunData& run, QAbstractAxis* x, QAbstractAxis* y, double yLow, double yHigh)
{
    for (const SettingChangeEvent& change : run.changes()) {
        const QString description = QString::fromStdString(change.description);
        const QString key = QStringLiteral("%1 setting change at step %2: %3").arg(run.name()).arg(change.step).arg(description);
        auto* line = pool_->take<QLineSeries>(key, {x, y});
        const QList<QPointF> points{QPointF(change.step, yLow), QPointF(change.step, yHigh)};
        if (line->points() != points) line->replace(points);
        setSeriesPen(line, cosmeticPen(run.color(), 1.5, Qt::DashLine));
        setLegendVisible(chart_, line, false);

        if (used_ >= static_cast<int>(labels_.size())) {
            auto* item = new QGraphicsSimpleTextItem(chart_);
            item->setZValue(20);
            item->setFont(chart_->legend()->font());   // the group's font size (presentation mode too)
            labels_.push_back({item, {}, nullptr});
        }
        Label& label = labels_[static_cast<std::size_t>(used_++)];
        label.item->setText(QStringLiteral("step %1: %2").arg(change.step).arg(description));
        label.item->setBrush(run.color());
        label.item->setToolTip(key);
        label.anchor = QPointF(change.step, yHigh);
        label.series = line;
    }
}

void ChangeMarkers::placeLabels()
{
    const QRectF area = chart_->plotArea();
    for (std::size_t i = 0; i < labels_.size(); ++i) {
        Label& label = labels_[i];
        const bool shown = static_cast<int>(i) < used_ && label.series && area.width() > 0;
        label.item->setVisible(shown);
        if (!shown) continue;
        const QPointF at = chart_->mapToPosition(label.anchor, label.series);
        const qreal row = static_cast<qreal>(i % 4) * (label.item->boundingRect().height() + 1);
        qreal left = at.x() + 3;
        if (left + label.item->boundingRect().width() > area.right())
            left = std::max(area.left(), at.x() - 3 - label.item->boundingRect().width());
        label.item->setPos(left, area.top() + 2 + topInset_ + row);
        label.item->setVisible(at.x() >= area.left() - 1 && at.x() <= area.right() + 1);
    }
}

QStringList ChangeMarkers::labelTexts() const
{
    QStringList texts;
    for (int i = 0; i < used_; ++i) texts << labels_[static_cast<std::size_t>(i)].item->text();
    return texts;
}

}  // namespace plab::ui
