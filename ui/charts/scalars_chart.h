// Chart group "scalars": the values a PyTorch script logged of its own with the probe's
// probe.log(name, value) (docs/PYTORCH.md), one name at a time, a line per shown run that
// logged it. The group shows itself only while a shown run has such values; the lab's own
// runs log none, so it is not one of the groups a lesson names (lessonChartNames).
#pragma once

#include "charts/chart_support.h"

QT_BEGIN_NAMESPACE
class QComboBox;
class QLabel;
QT_END_NAMESPACE

namespace plab::ui {

class ScalarsChart : public ChartGroup {
    Q_OBJECT
public:
    explicit ScalarsChart(QWidget* parent = nullptr);
    void redraw(const RunPtr& current, const QList<RunPtr>& compare) override;
    QList<QChart*> charts() const override { return {chart_}; }

    // The names the shown runs logged, each once, in the order first met (the chooser's).
    QStringList names() const;
    QString shownName() const;
    void showName(const QString& name);

private:
    QChart* chart_;
    QValueAxis* steps_;
    QValueAxis* values_;
    SeriesPool pool_;
    ReducedPointsCache reduced_;
    QComboBox* chooser_;
    QLabel* note_;
    RunPtr current_;
    QList<RunPtr> compare_;
};

}  // namespace plab::ui
