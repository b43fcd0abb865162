// The format explorer panel: one number in fp32, tf32, fp16 and bf16 at once (a FormatRow
// each: bits to flip, exact value, error, spacing, class), the formats' ranges on one log2
// axis, worked examples a teacher can click with a one-line explanation each, and two
// links to the live run: a histogram bin picked in the charts shows its value range, and
// a loss-scale field shows where that scale would move the run's latest histogram of a
// layer (shares flushed / subnormal / normal / overflow in the run's compute format).
#pragma once

#include "telemetry/format_regions.h"
#include "explorer/format_anatomy.h"
#include "run_data.h"

#include <QWidget>

#include <vector>

QT_BEGIN_NAMESPACE
class QComboBox;
class QLabel;
class QLineEdit;
class QListWidget;
class QTableWidget;
QT_END_NAMESPACE

namespace plab::ui {

class FormatRangeAxis;
class FormatRow;

class FormatExplorer : public QWidget {
    Q_OBJECT
public:
    explicit FormatExplorer(QWidget* parent = nullptr);

    // The number shown (a double, rounded once to each format).
    void setValue(double value);
    double value() const { return value_; }
    // Parses a typed number (parseFp32Text's syntax: decimal, inf, nan, 0x + 8 hex digits).
    // Returns false, showing why, when the text is not a number.
    bool setText(const QString& text);
    void showWorkedExample(int index);   // into workedExamples()
    QString explanation() const;

    // A histogram bin picked in the charts: shows 2^e, the bin's range [2^e, 2^(e+1)).
    void showHistogramBin(const QString& layer, const QString& kind, int exponent);
    QString binText() const;

    // The run whose latest histogram the loss-scale field moves (may be null).
    void setRun(const RunPtr& run);
    void setLossScale(double scale);
    void selectLayer(const QString& layer, TensorKind kind);
    // The shares at the chosen scale (and at the run's own scale), as last computed.
    RegionShares sharesAtChosenScale() const { return chosen_; }
    RegionShares sharesAtRunScale() const { return current_; }
    int shiftBins() const { return shift_; }

    FormatRow* row(Format f) const;
    // The table of the formats below 16 bits (a row per kExplorerMiniFormats entry: format,
    // bits, value, error, class), for tests.
    QTableWidget* miniTable() const { return miniTable_; }

protected:
    void changeEvent(QEvent* event) override;

private:
    void fitListsToRows();
    void showAnatomy();
    void refillLayers();
    void refreshScaleTable();
    const TelemetryEvent* latestHistogram() const;

    double value_ = 1.0;
    QLineEdit* input_;
    QComboBox* sixteenBit_;   // what a 4-digit bit pattern is: fp16 or bf16
    QLabel* inputProblem_;
    QListWidget* examples_;
    QLabel* explanation_;
    std::vector<FormatRow*> rows_;   // a row per formats() entry, in its order
    FormatRangeAxis* axis_;
    QTableWidget* miniTable_;
    QLabel* bin_;
    QLineEdit* scaleInput_;
    QComboBox* layerBox_;
    QLabel* scaleNote_;
    QTableWidget* scaleTable_;
    RunPtr run_;
    RegionShares chosen_, current_;
    int shift_ = 0;
};

}  // namespace plab::ui
