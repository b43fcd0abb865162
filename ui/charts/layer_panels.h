// What the per-layer chart groups share (underflow/overflow, updates): panels that draw
// one line per layer and run of a quantity taken from each histogram step's telemetry.
// Layers of one run differ by shade and width; one key under the panels names, per run,
// the run and the swatch of each layer (the series' legend labels name run and layer). A panel with nothing to draw says why
// and what to pick instead; lines of two runs that lie on top of each other get a note
// on the chart, so a curve hidden under another is never mistaken for a missing one.
#pragma once

#include "charts/chart_support.h"
#include "chart_painter.h"   // linesCoincide: the app's charts and the report's share the rule

#include <QComboBox>
#include <QGraphicsSimpleTextItem>

QT_BEGIN_NAMESPACE
class QCheckBox;
class QLabel;
QT_END_NAMESPACE

#include <functional>
#include <string>
#include <vector>

namespace plab::ui {

using report::linesCoincide;   // the app's charts and the report's: one rule for curves that hide each other

class LayerPanelsGroup : public ChartGroup {
    Q_OBJECT
public:
    using ChartGroup::ChartGroup;

    // The key under the panels, as plain text (tests).
    QString keyText() const;

    // A deep model's lines: at most this many layers a run are drawn, spread from its
    // first layer to its last, unless "All layers" is on. More are a tangle of shades of
    // one colour, the lightest near the background.
    static constexpr std::size_t kMostLayerLines = 6;
    void setAllLayers(bool all);
    bool allLayers() const;
    // A transformer's layers by block: "" draws the whole model (the default), "block2"
    // only the layers and taps named block2.*.
    void setBlock(const QString& block);
    QString block() const;

protected:
    struct Panel {
        QChart* chart = nullptr;
        QValueAxis* steps = nullptr;
        QValueAxis* values = nullptr;
        SeriesPool* pool = nullptr;
        ChangeMarkers* markers = nullptr;
        ReducedPointsCache* reduced = nullptr;
        QGraphicsSimpleTextItem* note = nullptr;   // why it is empty, or which lines coincide
    };
    // A panel on `chart` with a step axis and a value axis (title, printf label format).
    Panel makePanel(QChart* chart, const QString& valueTitle, const QString& valueFormat);

    struct Quantity {
        TensorKind kind;
        QString what;    // in series names: "<run> <layer> <what>"
        // The value of one layer at one histogram step; NaN leaves no point.
        std::function<double(const LayerTelemetry&)> value;
        // Said when no run has a point: why, and what to pick instead (may be empty).
        QString emptyReason;
        // The group has a tensor-kind choice: an empty panel lists the kinds with data.
        bool kindSelectable = true;
        // A line the note ends with where the panel has data (the lost-updates panel's fp32
        // reference).
        QString remark = {};
    };
    // Draws the quantity for every run and layer. Returns whether any point was drawn.
    bool drawPanel(Panel& panel, const QList<RunPtr>& runs, const Quantity& quantity);

    // The panel's note: "<a> and <b> coincide" lines, or the empty reason. Drawn on the
    // plot where it fits clear of the title; in presentation mode, or where it does not fit
    // (lines of large text over a short plot covered the title and each other), written under
    // the panels with the key instead, after the panel's name.
    static QString noteText(const Panel& panel) { return panel.note ? panel.note->toolTip() : QString(); }
    // The notes written under the panels (tests).
    QStringList notesBelow() const;

    // A key for panels too narrow for their own legends: one line per run, the run's name,
    // then a swatch and the name of each of its layers (rich text).
    QString layerKey(const QList<RunPtr>& runs, TensorKind kind) const;
    // The label that shows layerKey() under the panels, whose own legends are hidden: with
    // a comparison run each legend would need an entry per run and layer, elided at the
    // panels' width. Created on first use; the group lays it out.
    QLabel* keyLabel();
    // Also shows the "All layers" box while some run has more than kMostLayerLines layers.
    void updateKey(const QList<RunPtr>& runs, TensorKind kind);
    // The "All layers" box: created on first use; the group lays it out and redraws when
    // it is toggled.
    QCheckBox* allLayersBox();
    // The "Block" choice, shown while some run's layers belong to blocks (block1.qkv):
    // created on first use; the group lays it out and redraws when it changes.
    QComboBox* blockBox();
    // The layers of `kind` drawn for a run: those of the chosen block (or all), every one
    // of them or spreadLayers of them.
    std::vector<std::string> layersToDraw(const RunData& run, TensorKind kind) const;

private:
    // layersOfKind within the chosen block.
    std::vector<std::string> layersInChoice(const RunData& run, TensorKind kind) const;
    void placeNote(Panel& panel, const QString& note);
    QLabel* key_ = nullptr;
    std::vector<std::pair<QChart*, QString>> notesBelow_;   // panel -> "<name>: <note>", in panel order
    QCheckBox* allLayers_ = nullptr;
    QComboBox* block_ = nullptr;
};

// The blocks of layer names ("block1" of "block1.qkv"), each once, in the names' order.
QStringList blocksOf(const std::vector<std::string>& layers);

// At most `most` (>= 2) of `layers`, spread evenly from the first to the last, in order.
std::vector<std::string> spreadLayers(const std::vector<std::string>& layers, std::size_t most);

// The layers of `kind` a run reports (every histogram step reports the same layers, so the
// first and the last event name them all), in its model's order (sortInModelOrder).
std::vector<std::string> layersOfKind(const RunData& run, TensorKind kind);

// Tap names in the order of the model's layers with weights (parameterLayerNames): a tap
// where the layer it is or belongs to stands (block1.ln1.sumsq beside block1.ln1), a tap
// inside a block that names no layer with weights (block1.attn.scores) after the block's
// last one, "input" first, the loss and unknown names last; ties in layerNameLess's order.
void sortInModelOrder(std::vector<std::string>& names, const std::vector<std::string>& modelLayers);

// Layer names in model order where the model numbers them: digit runs compare as numbers
// (fc2 before fc10, as deep-mlp's layers come), the rest as text.
bool layerNameLess(const std::string& a, const std::string& b);


// "Tensor kinds with data: activation, activation grad" for an empty chart's note; empty
// when no run has telemetry at all.
QString kindsWithData(const QList<RunPtr>& runs);

}  // namespace plab::ui
