// Underflow and overflow fractions per layer over steps (see underflow_chart.h).
#include "charts/underflow_chart.h"

#include <QComboBox>
#include <QCheckBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineSeries>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <limits>

namespace plab::ui {

// The engine's shares (rounding_stats.h); nothing to share is a gap in the line.
double underflowFraction(const RoundingStats& s)
{
    return underflowShare(s).value_or(std::numeric_limits<double>::quiet_NaN());
}

double overflowFraction(const RoundingStats& s)
{
    return overflowShare(s).value_or(std::numeric_limits<double>::quiet_NaN());
}

UnderflowChart::UnderflowChart(QWidget* parent)
    : LayerPanelsGroup(QStringLiteral("underflow"), parent),
      underflow_(makeChart(tr("Underflow (nonzero → 0)"))),
      overflow_(makeChart(tr("Overflow (finite → inf)"))),
      underflowPool_(underflow_),
      overflowPool_(overflow_)
{
    panels_[0] = makePanel(underflow_, tr("% of values"), QStringLiteral("%.3g"));
    panels_[0].pool = &underflowPool_;
    panels_[0].markers = new ChangeMarkers(underflow_, &underflowPool_);
    panels_[0].reduced = &reducedUnderflow_;
    panels_[1] = makePanel(overflow_, tr("% of values"), QStringLiteral("%.3g"));
    panels_[1].pool = &overflowPool_;
    panels_[1].markers = new ChangeMarkers(overflow_, &overflowPool_);
    panels_[1].reduced = &reducedOverflow_;

    kindBox_ = new QComboBox(this);
    for (TensorKind k : {TensorKind::weightGrad, TensorKind::activationGrad, TensorKind::activation,
                         TensorKind::quantizedActivationGrad, TensorKind::quantizedActivation, TensorKind::quantizedWeight})
        kindBox_->addItem(QString::fromUtf8(tensorKindName(k)).replace(QLatin1Char('_'), QLatin1Char(' ')),
                          static_cast<int>(k));
    kindBox_->setToolTip(tr("Which rounding sites: weight gradients, activation gradients, activations, or the "
                            "quantised matmul inputs of an FP8 or MX recipe (overflow: saturated)"));
    connect(kindBox_, &QComboBox::currentIndexChanged, this, [this] { redraw(current_, compare_); });

    auto* controls = new QHBoxLayout;
    controls->addWidget(new QLabel(tr("Tensor kind:"), this));
    controls->addWidget(kindBox_);
    controls->addWidget(allLayersBox());
    connect(allLayersBox(), &QCheckBox::toggled, this, [this] { redraw(current_, compare_); });
    controls->addWidget(blockBox());
    connect(blockBox(), &QComboBox::currentIndexChanged, this, [this] { redraw(current_, compare_); });
    controls->addStretch(1);
    auto* charts = new QHBoxLayout;
    charts->addWidget(makeChartView(underflow_, this));
    charts->addWidget(makeChartView(overflow_, this));
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addLayout(charts, 1);
    layout->addWidget(keyLabel());
    layout->addLayout(controls);
}

void UnderflowChart::setKind(TensorKind k) { kindBox_->setCurrentIndex(kindBox_->findData(static_cast<int>(k))); }

TensorKind UnderflowChart::kind() const { return static_cast<TensorKind>(kindBox_->currentData().toInt()); }

void UnderflowChart::redraw(const RunPtr& current, const QList<RunPtr>& compare)
{
    current_ = current;
    compare_ = compare;
    const QList<RunPtr> runs = runsToDraw(current, compare);
    drawRounding(panels_[0], runs, false);
    drawRounding(panels_[1], runs, true);
    updateKey(runs, kind());
}

void UnderflowChart::drawRounding(Panel& panel, const QList<RunPtr>& runs, bool overflow)
{
    const TensorKind k = kind();
    // Half-width panels: a short title (the run's name must fit); the axis says what is counted.
    // The quantised kinds of the FP8 and MX recipes saturate: their overflow is a clip to the
    // largest finite value, not an infinity.
    const bool saturates = isQuantizedKind(k);
    setChartTitle(panel.chart, overflow ? (saturates ? tr("Saturation") : tr("Overflow")) : tr("Underflow"), runs);
    // Presentation mode's large axis titles fit beside the short panels only without the
    // "of ...": the chart's title and tooltip say what is counted.
    const QString axisTitle = presentationMode()
                                  ? (overflow ? (saturates ? tr("% → max") : tr("% → inf")) : tr("% → 0"))
                                  : (overflow ? (saturates ? tr("% of finite → max") : tr("% of finite → inf"))
                                              : tr("% of nonzero → 0"));
    if (panel.values->titleText() != axisTitle) panel.values->setTitleText(axisTitle);
    panel.chart->setToolTip(overflow ? (saturates ? tr("Share of finite values beyond the format's largest, "
                                                       "clipped to it, per layer")
                                                  : tr("Share of finite values rounded to infinity, per layer"))
                                     : tr("Share of nonzero values rounded to zero, per layer"));
    const QString kindText = QString::fromUtf8(tensorKindName(k)).replace(QLatin1Char('_'), QLatin1Char(' '));
    Quantity q{k, overflow ? tr("overflow") : tr("underflow"),
               [overflow](const LayerTelemetry& l) { return 100.0 * (overflow ? overflowFraction(l.stats) : underflowFraction(l.stats)); },
               tr("Nothing is rounded at the %1 sites of these runs (fp32 and tf32 keep them in fp32):\n"
                  "pick another tensor kind below.").arg(kindText)};
    drawPanel(panel, runs, q);
}

}  // namespace plab::ui
