// The values a training logged of its own (see scalars_chart.h).
#include "charts/scalars_chart.h"

#include "charts/series_reduction.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineSeries>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace plab::ui {

ScalarsChart::ScalarsChart(QWidget* parent)
    : ChartGroup(QStringLiteral("scalars"), parent),
      chart_(makeChart(tr("Logged values"))),
      steps_(makeValueAxis(tr("step"), QStringLiteral("%d"))),
      values_(makeValueAxis(tr("value"), QStringLiteral("%.4g"))),
      pool_(chart_)
{
    chart_->addAxis(steps_, Qt::AlignBottom);
    chart_->addAxis(values_, Qt::AlignLeft);
    chooser_ = new QComboBox(this);
    chooser_->setObjectName(QStringLiteral("scalarChooser"));
    chooser_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    chooser_->setFocusPolicy(Qt::StrongFocus);   // the wheel does not change it in passing
    note_ = new QLabel(this);
    note_->setObjectName(QStringLiteral("scalarsNote"));
    note_->setWordWrap(true);
    auto* top = new QHBoxLayout;
    top->addWidget(new QLabel(tr("Logged value:"), this));
    top->addWidget(chooser_);
    top->addStretch(1);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addLayout(top);
    layout->addWidget(makeChartView(chart_, this), 1);
    layout->addWidget(note_);
    connect(chooser_, &QComboBox::currentTextChanged, this, [this] { redraw(current_, compare_); });
    hide();   // until a shown run has logged a value
}

QStringList ScalarsChart::names() const
{
    QStringList names;
    for (const RunPtr& run : runsToDraw(current_, compare_))
        for (const ScalarEvent& s : run->scalars()) {
            const QString name = QString::fromStdString(s.name);
            if (!names.contains(name)) names << name;
        }
    return names;
}

QString ScalarsChart::shownName() const { return chooser_->currentText(); }

void ScalarsChart::showName(const QString& name) { chooser_->setCurrentText(name); }

void ScalarsChart::redraw(const RunPtr& current, const QList<RunPtr>& compare)
{
    current_ = current;
    compare_ = compare;
    const QStringList names = this->names();
    setVisible(!names.isEmpty());
    // The chooser keeps the name it shows while a shown run has it.
    QStringList listed;
    for (int i = 0; i < chooser_->count(); ++i) listed << chooser_->itemText(i);
    if (listed != names) {
        const QString keep = chooser_->currentText();
        const QSignalBlocker block(chooser_);
        chooser_->clear();
        chooser_->addItems(names);
        chooser_->setCurrentIndex(std::max<qsizetype>(0, names.indexOf(keep)));
    }
    const QString name = chooser_->currentText();
    const std::string wanted = name.toStdString();

    const QList<RunPtr> runs = runsToDraw(current, compare);
    setChartTitle(chart_, name.isEmpty() ? tr("Logged values") : name, runs);
    values_->setTitleText(name.isEmpty() ? tr("value") : name);
    const int columns = pixelColumns(chart_);
    pool_.begin();
    double lastStep = 1, low = 0, high = 0;
    bool any = false;
    int gaps = 0;
    QStringList without;
    for (const RunPtr& run : runs) {
        std::vector<QPointF> points;
        bool logged = false;
        for (const ScalarEvent& s : run->scalars()) {
            if (s.name != wanted) continue;
            logged = true;
            if (!std::isfinite(s.value)) {
                ++gaps;
                continue;
            }
            points.emplace_back(static_cast<double>(s.step), s.value);
        }
        if (!logged && !name.isEmpty()) without << run->name();
        if (points.empty()) continue;
        const QString key = run->id() + QStringLiteral("/scalar/") + name;
        auto* line = pool_.take<QLineSeries>(key, {steps_, values_});
        setSeriesName(line, tr("%1 %2").arg(run->name(), name));
        setSeriesPen(line, runPen(run->color(), 2.0));
        setLegendLabel(chart_, line, run == runs.front() ? name : runLabel(run, runs));
        showComparisonInLegend(chart_, line, run == runs.front());
        const QList<QPointF> drawn = reduced_.update(line, key, *run, columns, [&] {
            std::stable_sort(points.begin(), points.end(), [](const QPointF& a, const QPointF& b) { return a.x() < b.x(); });
            return reduceMinMaxPerColumn(std::span<const QPointF>(points), columns);
        });
        for (const QPointF& p : drawn) {
            low = any ? std::min(low, p.y()) : p.y();
            high = any ? std::max(high, p.y()) : p.y();
            lastStep = std::max(lastStep, p.x());
            any = true;
        }
    }
    pool_.end();
    if (!any) low = 0, high = 1;
    if (high == low) {   // a constant: a band around it
        const double pad = low == 0 ? 1.0 : std::abs(low) * 0.1;
        low -= pad;
        high += pad;
    }
    const double pad = (high - low) * 0.05;
    setStableRange(steps_, 0, lastStep, 0.6);
    setAxisRange(values_, low - pad, high + pad);
    fitTicksToLabels(values_);

    QStringList notes;
    if (gaps > 0)
        notes << (gaps == 1 ? tr("1 value logged as NaN or infinity, not drawn")
                            : tr("%1 values logged as NaN or infinity, not drawn").arg(gaps));
    if (!without.isEmpty()) notes << tr("not logged by %1").arg(without.join(QStringLiteral(", ")));
    note_->setText(notes.join(QStringLiteral(" · ")));
    note_->setVisible(!notes.isEmpty());
}

}  // namespace plab::ui
