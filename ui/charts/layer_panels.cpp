// Per-layer panels shared by the underflow and updates groups (see layer_panels.h).
#include "charts/layer_panels.h"

#include "charts/chart_caption.h"
#include "charts/series_reduction.h"
#include "nn/model.h"

#include <QCheckBox>
#include <QSignalBlocker>
#include <QLabel>
#include <QLegend>
#include <QLineSeries>
#include <QTextDocument>

#include <algorithm>
#include <cmath>

namespace plab::ui {

std::vector<std::string> layersOfKind(const RunData& run, TensorKind kind)
{
    std::vector<std::string> layers;
    const auto& telemetry = run.telemetry();
    if (telemetry.empty()) return layers;
    for (const TelemetryEvent* t : {&telemetry.front(), &telemetry.back()})
        for (const LayerTelemetry& l : t->layers)
            if (l.kind == kind && std::find(layers.begin(), layers.end(), l.layer) == layers.end())
                layers.push_back(l.layer);
    sortInModelOrder(layers, parameterLayerNames(run.settings().model));
    return layers;
}

void sortInModelOrder(std::vector<std::string>& names, const std::vector<std::string>& modelLayers)
{
    // A name's place: that of the model layer it is or belongs to ("block1.ln1.sumsq" to
    // block1.ln1); one inside a block that names no layer (block1.attn.scores) after the
    // block's last layer; the input first, the loss and any other last.
    const auto rank = [&](const std::string& name) -> std::ptrdiff_t {
        if (name == "input") return -1;
        std::ptrdiff_t owner = -1, inBlock = -1;
        std::size_t ownerLength = 0;
        const std::string block = name.substr(0, name.find('.')) + ".";
        for (std::size_t i = 0; i < modelLayers.size(); ++i) {
            const std::string& layer = modelLayers[i];
            if ((name == layer || name.starts_with(layer + ".")) && layer.size() >= ownerLength) {
                owner = static_cast<std::ptrdiff_t>(i);
                ownerLength = layer.size();
            }
            if (name.find('.') != std::string::npos && layer.starts_with(block)) inBlock = static_cast<std::ptrdiff_t>(i);
        }
        if (owner >= 0) return 2 * owner;
        if (inBlock >= 0) return 2 * inBlock + 1;
        return 2 * static_cast<std::ptrdiff_t>(modelLayers.size());
    };
    std::stable_sort(names.begin(), names.end(), [&](const std::string& a, const std::string& b) {
        const auto ra = rank(a), rb = rank(b);
        return ra != rb ? ra < rb : layerNameLess(a, b);
    });
}

std::vector<std::string> spreadLayers(const std::vector<std::string>& layers, std::size_t most)
{
    if (layers.size() <= most || most < 2) return layers;
    std::vector<std::string> out;
    for (std::size_t i = 0; i < most; ++i) out.push_back(layers[i * (layers.size() - 1) / (most - 1)]);
    return out;
}

bool layerNameLess(const std::string& a, const std::string& b)
{
    // Digit runs compare as numbers: fc2 before fc10.
    std::size_t i = 0, j = 0;
    const auto isDigit = [](char c) { return c >= '0' && c <= '9'; };
    while (i < a.size() && j < b.size()) {
        if (isDigit(a[i]) && isDigit(b[j])) {
            std::size_t i1 = i, j1 = j;
            while (i1 < a.size() && isDigit(a[i1])) ++i1;
            while (j1 < b.size() && isDigit(b[j1])) ++j1;
            const std::string_view da = std::string_view(a).substr(i, i1 - i), db = std::string_view(b).substr(j, j1 - j);
            const auto ta = da.find_first_not_of('0'), tb = db.find_first_not_of('0');
            const std::string_view na = ta == std::string_view::npos ? std::string_view{} : da.substr(ta);
            const std::string_view nb = tb == std::string_view::npos ? std::string_view{} : db.substr(tb);
            if (na.size() != nb.size()) return na.size() < nb.size();
            if (na != nb) return na < nb;
            i = i1;
            j = j1;
        } else {
            if (a[i] != b[j]) return a[i] < b[j];
            ++i;
            ++j;
        }
    }
    return a.size() - i < b.size() - j;
}

QString kindsWithData(const QList<RunPtr>& runs)
{
    QStringList kinds;
    for (TensorKind k : {TensorKind::weightGrad, TensorKind::activationGrad, TensorKind::activation,
                         TensorKind::quantizedActivationGrad, TensorKind::quantizedActivation, TensorKind::quantizedWeight})
        for (const RunPtr& run : runs)
            if (!layersOfKind(*run, k).empty()) {
                kinds << QString::fromUtf8(tensorKindName(k)).replace(QLatin1Char('_'), QLatin1Char(' '));
                break;
            }
    return kinds.join(QStringLiteral(", "));
}

QString LayerPanelsGroup::layerKey(const QList<RunPtr>& runs, TensorKind kind) const
{
    QStringList lines;
    for (const RunPtr& run : runs) {
        const std::vector<std::string> layers = layersToDraw(*run, kind);
        if (layers.empty()) continue;
        // The run first, then its layers' shades: one row per run reads as a group.
        QString line = QStringLiteral("<b>%1</b>:").arg(runLabel(run, runs).toHtmlEscaped());
        for (std::size_t li = 0; li < layers.size(); ++li)
            line += QStringLiteral(" <span style='color:%1'>■</span>&nbsp;%2")
                        .arg(layerColor(run->color(), li).name(), QString::fromStdString(layers[li]).toHtmlEscaped());
        const std::size_t all = layersInChoice(*run, kind).size();
        if (layers.size() < all) {
            if (block().isEmpty())
                line += tr(" (%1 of its %2 layers; All layers draws each)").arg(layers.size()).arg(all);
            else
                line += tr(" (%1 of %2's %3 layers; All layers draws each)").arg(layers.size()).arg(block()).arg(all);
        }
        lines << line;
    }
    return lines.join(QStringLiteral("<br>"));
}

QLabel* LayerPanelsGroup::keyLabel()
{
    if (!key_) {
        key_ = new QLabel(this);
        key_->setObjectName(groupName() + QStringLiteral("Key"));
        key_->setWordWrap(true);
        key_->setTextFormat(Qt::RichText);
    }
    return key_;
}

void LayerPanelsGroup::updateKey(const QList<RunPtr>& runs, TensorKind kind)
{
    QString key = layerKey(runs, kind);
    // The notes that do not fit their plots, after the key (drawPanel runs before this).
    for (const QString& note : notesBelow()) key += (key.isEmpty() ? QString() : QStringLiteral("<br>")) + note.toHtmlEscaped();
    QLabel* label = keyLabel();
    if (label->text() != key) label->setText(key);
    label->setVisible(!key.isEmpty());
    bool deep = false;
    for (const RunPtr& run : runs) deep = deep || layersInChoice(*run, kind).size() > kMostLayerLines;
    allLayersBox()->setVisible(deep);
    // The blocks of every run shown, the choice kept while it is still one of them.
    QStringList blocks;
    for (const RunPtr& run : runs)
        for (const QString& b : blocksOf(layersOfKind(*run, kind)))
            if (!blocks.contains(b)) blocks << b;
    QComboBox* box = blockBox();
    QStringList have;
    for (int i = 1; i < box->count(); ++i) have << box->itemData(i).toString();
    if (have != blocks) {
        const QString keep = block();
        const QSignalBlocker quiet(box);
        while (box->count() > 1) box->removeItem(1);
        for (const QString& b : blocks) box->addItem(b, b);
        box->setCurrentIndex(std::max(0, box->findData(keep)));
    }
    box->setVisible(!blocks.isEmpty());
}

QStringList blocksOf(const std::vector<std::string>& layers)
{
    QStringList blocks;
    for (const std::string& layer : layers) {
        const auto dot = layer.find('.');
        if (dot == std::string::npos) continue;
        const QString b = QString::fromStdString(layer.substr(0, dot));
        if (!blocks.contains(b)) blocks << b;
    }
    return blocks;
}

QComboBox* LayerPanelsGroup::blockBox()
{
    if (!block_) {
        block_ = new QComboBox(this);
        block_->setObjectName(groupName() + QStringLiteral("Block"));
        block_->addItem(tr("Every block"), QString());
        block_->setToolTip(tr("A transformer's layers by block: one block's layers and taps, or the whole model"));
        block_->setVisible(false);
    }
    return block_;
}

void LayerPanelsGroup::setBlock(const QString& block)
{
    QComboBox* box = blockBox();
    box->setCurrentIndex(std::max(0, box->findData(block)));
}

QString LayerPanelsGroup::block() const { return block_ ? block_->currentData().toString() : QString(); }

std::vector<std::string> LayerPanelsGroup::layersInChoice(const RunData& run, TensorKind kind) const
{
    std::vector<std::string> layers = layersOfKind(run, kind);
    const QString chosen = block();
    if (chosen.isEmpty()) return layers;
    const std::string prefix = chosen.toStdString() + ".";
    std::erase_if(layers, [&](const std::string& l) { return !l.starts_with(prefix); });
    return layers;
}

QCheckBox* LayerPanelsGroup::allLayersBox()
{
    if (!allLayers_) {
        allLayers_ = new QCheckBox(tr("All layers"), this);
        allLayers_->setObjectName(groupName() + QStringLiteral("AllLayers"));
        allLayers_->setToolTip(tr("Draw every layer of a deep model; off, %1 layers spread from the first to the last")
                                   .arg(kMostLayerLines));
        allLayers_->setVisible(false);
    }
    return allLayers_;
}

void LayerPanelsGroup::setAllLayers(bool all) { allLayersBox()->setChecked(all); }

bool LayerPanelsGroup::allLayers() const { return allLayers_ && allLayers_->isChecked(); }

std::vector<std::string> LayerPanelsGroup::layersToDraw(const RunData& run, TensorKind kind) const
{
    const std::vector<std::string> layers = layersInChoice(run, kind);
    return allLayers() ? layers : spreadLayers(layers, kMostLayerLines);
}

QString LayerPanelsGroup::keyText() const
{
    if (!key_) return {};
    QTextDocument doc;
    doc.setHtml(key_->text());
    return doc.toPlainText();
}

LayerPanelsGroup::Panel LayerPanelsGroup::makePanel(QChart* chart, const QString& valueTitle, const QString& valueFormat)
{
    Panel p;
    p.chart = chart;
    p.steps = makeValueAxis(tr("step"), QStringLiteral("%d"));
    p.values = makeValueAxis(valueTitle, valueFormat);
    chart->addAxis(p.steps, Qt::AlignBottom);
    chart->addAxis(p.values, Qt::AlignLeft);
    chart->legend()->setVisible(false);   // keyLabel() names the lines
    p.note = makeChartCaption(chart);
    return p;
}

bool LayerPanelsGroup::drawPanel(Panel& panel, const QList<RunPtr>& runs, const Quantity& quantity)
{
    // Layers differ by shade and width, not by dash pattern: dashed polylines of thousands
    // of points take hundreds of milliseconds to paint.
    static const qreal kLayerWidths[] = {2.4, 1.6, 1.0};
    const int columns = pixelColumns(panel.chart);
    panel.pool->begin();
    panel.markers->beginLabels();
    double lastStep = 1, top = 0;
    bool any = false, anyTelemetry = false;
    struct Drawn {
        RunPtr run;
        std::string layer;
        QList<QPointF> points;   // a shared copy: the cache's entries move when it grows
    };
    std::vector<Drawn> drawn;
    for (const RunPtr& run : runs) {
        const auto& telemetry = run->telemetry();
        if (telemetry.empty()) continue;
        anyTelemetry = true;
        if (!run->steps().empty()) lastStep = std::max(lastStep, static_cast<double>(run->steps().back().step));
        const std::vector<std::string> layers = layersToDraw(*run, quantity.kind);
        const bool watched = run == runs.front();
        for (std::size_t li = 0; li < layers.size(); ++li) {
            const QString layer = QString::fromStdString(layers[li]);
            const QString key = run->id() + QLatin1Char('/') + layer + QLatin1Char('/') +
                                QString::number(static_cast<int>(quantity.kind));
            auto* line = panel.pool->take<QLineSeries>(key, {panel.steps, panel.values});
            setSeriesName(line, tr("%1 %2 %3").arg(run->name(), layer, quantity.what));
            setSeriesPen(line, runPen(layerColor(run->color(), li), kLayerWidths[li % std::size(kLayerWidths)]));
            // The watched run (named in the title) lists its layers; a comparison run's
            // entries name the run and the layer.
            setLegendLabel(panel.chart, line, watched ? layer : tr("%1 · %2").arg(runLabel(run, runs), layer));
            setLegendVisible(panel.chart, line, true);
            const QList<QPointF> points = panel.reduced->update(line, key, *run, columns, [&] {
                std::vector<double> x, y;
                x.reserve(telemetry.size());
                y.reserve(telemetry.size());
                for (const TelemetryEvent& t : telemetry) {
                    if (!t.hasHistograms) continue;   // the end-of-run totals are not a step's values
                    for (const LayerTelemetry& l : t.layers)
                        if (l.kind == quantity.kind && l.layer == layers[li]) {
                            x.push_back(static_cast<double>(t.step));
                            y.push_back(quantity.value(l));
                        }
                }
                return reduceMinMaxPerColumn(
                    x.size(), [&](std::size_t i) { return x[i]; }, [&](std::size_t i) { return y[i]; }, columns);
            });
            for (const QPointF& p : points)
                if (!std::isnan(p.y())) {
                    top = std::max(top, p.y());
                    any = true;
                }
            const bool fewPoints = points.size() < 60;
            if (line->pointsVisible() != fewPoints) line->setPointsVisible(fewPoints);
            drawn.push_back({run, layers[li], points});
        }
    }
    const double high = top > 0 ? top * 1.1 : 1.0;
    setStableRange(panel.steps, 0, lastStep, 0.6);
    setStableRange(panel.values, 0, high, 0.4);
    for (const RunPtr& run : runs) panel.markers->addRun(*run, panel.steps, panel.values, 0, panel.values->max());
    panel.pool->end();
    panel.markers->placeLabels();

    QString note;
    if (runs.isEmpty()) {
        note = tr("No run to show: start a run, or pick runs in the run list.");
    } else if (!anyTelemetry) {
        note = tr("No histogram step yet: the first comes with the run's first telemetry snapshot.");
    } else if (!any) {
        note = quantity.emptyReason;
        const QString kinds = quantity.kindSelectable ? kindsWithData(runs) : QString();
        if (!kinds.isEmpty()) note += (note.isEmpty() ? QString() : QStringLiteral("\n")) + tr("Tensor kinds with data: %1.").arg(kinds);
    } else if (top == 0) {
        note = tr("Zero at every step, in every run shown.");
    } else {
        // Lines within half a percent of the axis lie on top of each other on screen.
        const double tolerance = 0.005 * panel.values->max();
        QStringList lines;
        for (qsizetype j = 1; j < runs.size(); ++j)
            for (qsizetype i = 0; i < j; ++i) {   // one note per run whose lines an earlier run's hide or cover
                QStringList same;
                for (const Drawn& d : drawn) {
                    if (d.run != runs[j]) continue;
                    for (const Drawn& w : drawn)
                        if (w.run == runs[i] && w.layer == d.layer && linesCoincide(w.points, d.points, tolerance))
                            same << QString::fromStdString(d.layer);
                }
                if (same.isEmpty()) continue;
                lines << tr("%1 and %2 coincide: %3").arg(runLabel(runs[i], runs), runLabel(runs[j], runs), same.join(QStringLiteral(", ")));
                break;
            }
        note = lines.join(QLatin1Char('\n'));
    }
    if (any && !quantity.remark.isEmpty()) note += (note.isEmpty() ? QString() : QStringLiteral("\n")) + quantity.remark;
    placeNote(panel, note);
    return any;
}

void LayerPanelsGroup::placeNote(Panel& panel, const QString& note)
{
    // On the plot where it fits clear of the curves; else (and projected) under the panels,
    // the caption empty with its tool tip still the note (noteText() says it).
    const bool below = !setChartCaptionIfClear(panel.chart, panel.note, note, !presentationMode());
    auto it = std::find_if(notesBelow_.begin(), notesBelow_.end(), [&](const auto& n) { return n.first == panel.chart; });
    if (it == notesBelow_.end()) it = notesBelow_.insert(notesBelow_.end(), {panel.chart, QString()});
    it->second = below ? tr("%1: %2").arg(panel.chart->title().section(QLatin1Char('\n'), 0, 0), QString(note).replace(QLatin1Char('\n'), QLatin1Char(' ')))
                       : QString();
}

QStringList LayerPanelsGroup::notesBelow() const
{
    QStringList notes;
    for (const auto& [chart, note] : notesBelow_)
        if (!note.isEmpty()) notes << note;
    return notes;
}

}  // namespace plab::ui
