// Lost, zero and non-finite updates per layer over steps (see updates_chart.h).
#include "charts/updates_chart.h"

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QVBoxLayout>

#include <algorithm>
#include <limits>

namespace plab::ui {

double lostUpdatePercent(const LayerTelemetry& l)
{
    const auto share = l.update.lostShare();   // nothing to lose: a gap in the line
    return share ? 100.0 * *share : std::numeric_limits<double>::quiet_NaN();
}

double accumulationLostPercent(const LayerTelemetry& l)
{
    const auto share = l.update.accumulationLostShare();   // nothing added: a gap
    return share ? 100.0 * *share : std::numeric_limits<double>::quiet_NaN();
}

double zeroGradientPercent(const LayerTelemetry& l)
{
    return l.stats.count > 0 ? 100.0 * static_cast<double>(l.stats.zerosIn + l.stats.underflow) / static_cast<double>(l.stats.count)
                             : std::numeric_limits<double>::quiet_NaN();
}

UpdatesChart::UpdatesChart(QWidget* parent)
    : LayerPanelsGroup(QStringLiteral("updates"), parent),
      lost_(makeChart(tr("Updates lost to rounding"))),
      zero_(makeChart(tr("Zero gradients"))),
      nonFinite_(makeChart(tr("Weights made inf/NaN"))),
      pools_{SeriesPool(lost_), SeriesPool(zero_), SeriesPool(nonFinite_)}
{
    QChart* charts[] = {lost_, zero_, nonFinite_};
    const QString formats[] = {QStringLiteral("%.3g"), QStringLiteral("%.3g"), QStringLiteral("%d")};
    auto* row = new QHBoxLayout;
    for (int i = 0; i < 3; ++i) {
        panels_[i] = makePanel(charts[i], axisTitles(false)[i], formats[i]);
        panels_[i].pool = &pools_[i];
        panels_[i].markers = new ChangeMarkers(charts[i], &pools_[i]);
        panels_[i].reduced = &reduced_[i];
        // Three panels share the group's width: narrower than other charts' minimum, so
        // that a one-column grid (docks open) still fits them without scrolling sideways.
        auto* view = makeChartView(charts[i], this);
        view->setMinimumWidth(190);
        row->addWidget(view);
    }
    lost_->setToolTip(tr("Nonzero updates that left the stored weight unchanged: smaller than half the spacing "
                         "of the weight's format at its value"));
    zero_->setToolTip(tr("Weight-gradient elements that were zero (exactly, or flushed by rounding): "
                         "their update is zero because there was nothing to apply, not lost"));
    nonFinite_->setToolTip(tr("Finite weights that the update made inf or NaN"));
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addLayout(row, 1);
    layout->addWidget(keyLabel());
    lostWhat_ = new QComboBox(this);
    lostWhat_->setObjectName(QStringLiteral("lostWhatCombo"));
    lostWhat_->addItem(tr("Lost: the optimizer's updates"), QStringLiteral("updates"));
    lostWhat_->addItem(tr("Lost: additions to the accumulation buffer"), QStringLiteral("additions"));
    lostWhat_->setToolTip(tr("Gradient accumulation adds each micro-batch's gradients into one buffer: an addition "
                             "below half the buffer's spacing at its sum leaves it unchanged, lost as an update is"));
    lostWhat_->setFocusPolicy(Qt::StrongFocus);   // the wheel does not change it in passing
    lostWhat_->hide();   // while no shown run accumulates
    auto* choice = new QHBoxLayout;
    choice->addWidget(lostWhat_);
    choice->addWidget(allLayersBox());
    choice->addWidget(blockBox());
    choice->addStretch(1);
    layout->addLayout(choice);
    connect(allLayersBox(), &QCheckBox::toggled, this, [this] { redraw(current_, compare_); });
    connect(blockBox(), &QComboBox::currentIndexChanged, this, [this] { redraw(current_, compare_); });
    connect(lostWhat_, &QComboBox::currentIndexChanged, this, [this] { redraw(current_, compare_); });
}

void UpdatesChart::showLost(const QString& what)
{
    lostWhat_->setCurrentIndex(std::max(0, lostWhat_->findData(what)));
}

QStringList UpdatesChart::axisTitles(bool presentation)
{
    // Presentation mode's large axis titles fit beside the narrow panels only without the
    // "of ...": the chart's title and tooltip say what is counted.
    if (presentation) return {tr("% lost"), tr("% = 0"), tr("weights")};
    return {tr("% of nonzero updates lost"), tr("% of gradients = 0"), tr("weights")};
}

void UpdatesChart::presentationModeChanged()
{
    const QStringList titles = axisTitles(presentationMode());
    for (int i = 0; i < 3; ++i) panels_[i].values->setTitleText(titles[i]);
}

QString UpdatesChart::fp32Reference(const QList<RunPtr>& runs) const
{
    // fp32 rounds too: an update below half an fp32 weight's spacing (Adam's small steps) is
    // lost in FP32 itself. The same model's FP32 run, where one is shown, is the reference a
    // share is read against; else the note says so.
    if (runs.isEmpty()) return {};
    const ModelSpec& model = runs.front()->settings().model;
    for (const RunPtr& run : runs) {
        const PrecisionRecipe& r = run->settings().recipe;
        if (run->sourceAsRun().empty() && run->settings().model == model && r.compute == Format::fp32 &&
            r.storage() == Format::fp32 && r.layers.empty())   // the lab's own run (a probe's model is the user's)
            return tr("fp32 reference: %1 (what it loses, fp32 itself rounds away)").arg(runLabel(run, runs));
    }
    return tr("fp32 loses small updates too: overlay an FP32 run of this model to compare");
}

void UpdatesChart::redraw(const RunPtr& current, const QList<RunPtr>& compare)
{
    current_ = current;
    compare_ = compare;
    const QList<RunPtr> runs = runsToDraw(current, compare);
    const QString noWeights = tr("No weight is rounded in these runs (fp32 and tf32 keep fp32 weights\n"
                                 "and gradients), so no update is counted.");
    const bool accumulates = std::any_of(runs.begin(), runs.end(), [](const RunPtr& run) {
        return run->settings().gradAccumSteps > 1;
    });
    lostWhat_->setVisible(accumulates);
    const bool additions = accumulates && lostWhat_->currentData().toString() == QLatin1String("additions");
    setChartTitle(lost_, additions ? tr("Additions lost in the buffer") : tr("Lost to rounding"), runs);
    setChartTitle(zero_, tr("Zero gradient"), runs);
    setChartTitle(nonFinite_, tr("Made inf/NaN"), runs);
    if (additions)
        drawPanel(panels_[0], runs,
                  {TensorKind::weightGrad, tr("lost additions"), accumulationLostPercent,
                   tr("No shown run added a nonzero micro-batch gradient to its buffer after the first."), false});
    else
        drawPanel(panels_[0], runs,
                  {TensorKind::weightGrad, tr("lost updates"), lostUpdatePercent, noWeights, false, fp32Reference(runs)});
    panels_[0].values->setTitleText(additions ? (presentationMode() ? tr("% lost") : tr("% of nonzero additions lost"))
                                              : axisTitles(presentationMode())[0]);
    drawPanel(panels_[1], runs, {TensorKind::weightGrad, tr("zero gradients"), zeroGradientPercent, noWeights, false});
    drawPanel(panels_[2], runs,
              {TensorKind::weightGrad, tr("weights made non-finite"),
               [](const LayerTelemetry& l) { return static_cast<double>(l.update.nonFinite); }, noWeights, false});
    updateKey(runs, TensorKind::weightGrad);
}

}  // namespace plab::ui
