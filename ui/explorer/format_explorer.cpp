// The format explorer panel (see format_explorer.h).
#include "explorer/format_explorer.h"

#include "explorer/format_range_axis.h"
#include "explorer/format_row.h"
#include "numerics/number_text.h"

#include <QComboBox>
#include <QEvent>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QTableWidget>
#include <QVBoxLayout>

#include <cmath>
#include <cstdlib>
#include <iterator>

namespace plab::ui {

namespace {

QString percent(double fraction) { return QString::number(100.0 * fraction, 'f', 1) + QStringLiteral(" %"); }

}  // namespace

FormatExplorer::FormatExplorer(QWidget* parent) : QWidget(parent)
{
    setObjectName(QStringLiteral("formatExplorer"));
    auto* layout = new QVBoxLayout(this);

    auto* inputRow = new QHBoxLayout;
    inputRow->addWidget(new QLabel(tr("Number:"), this));
    input_ = new QLineEdit(this);
    input_->setObjectName(QStringLiteral("explorerInput"));
    input_->setPlaceholderText(tr("1.0001, -3.5e-8, 2^-25, 1.5 x 2^-3, 0x3c00"));
    input_->setToolTip(tr("A decimal (65520, -3.5e-8, inf), a power of two (2^-25, 1.5 x 2^-3) or a bit pattern: "
                          "0x and 8 hex digits for fp32, 5 for tf32, 4 for the 16-bit format chosen beside"));
    inputRow->addWidget(input_, 1);
    sixteenBit_ = new QComboBox(this);
    sixteenBit_->setObjectName(QStringLiteral("explorerPatternFormat"));
    sixteenBit_->addItem(tr("0x…(4) is fp16"), static_cast<int>(Format::fp16));
    sixteenBit_->addItem(tr("0x…(4) is bf16"), static_cast<int>(Format::bf16));
    sixteenBit_->setToolTip(tr("Which 16-bit format a pattern of 4 hex digits (0x3c00) is read in"));
    inputRow->addWidget(sixteenBit_);
    connect(sixteenBit_, &QComboBox::currentIndexChanged, this, [this] {
        if (input_->text().trimmed().startsWith(QLatin1String("0x"), Qt::CaseInsensitive)) setText(input_->text());
    });
    layout->addLayout(inputRow);
    inputProblem_ = new QLabel(this);
    inputProblem_->setWordWrap(true);
    inputProblem_->hide();
    layout->addWidget(inputProblem_);
    connect(input_, &QLineEdit::returnPressed, this, [this] { setText(input_->text()); });
    connect(input_, &QLineEdit::editingFinished, this, [this] { setText(input_->text()); });

    for (const FormatInfo& f : formats()) {
        rows_.push_back(new FormatRow(f.format, this));
        layout->addWidget(rows_.back());
        connect(rows_.back(), &FormatRow::valuePicked, this, [this](double v) {
            explanation_->clear();
            setValue(v);
        });
    }
    // Below 16 bits: the fp32 value quantised as the FP8, MX and NVFP4 recipes do (saturating),
    // a row per format, read-only.
    miniTable_ = new QTableWidget(static_cast<int>(miniFormats().size()), 4, this);
    miniTable_->setObjectName(QStringLiteral("miniFormatTable"));
    miniTable_->setHorizontalHeaderLabels({tr("bits"), tr("value"), tr("error"), tr("class")});
    QStringList miniNames;
    for (const MiniFormatInfo& f : miniFormats())
        miniNames << QString::fromLatin1(f.name.data(), static_cast<qsizetype>(f.name.size()));
    miniTable_->setVerticalHeaderLabels(miniNames);
    miniTable_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    miniTable_->horizontalHeader()->setStretchLastSection(true);
    miniTable_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    miniTable_->setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    miniTable_->setToolTip(tr("Below 16 bits: the fp32 value rounded to each format as the FP8, MX and NVFP4 recipes "
                              "quantise it (to nearest even, saturating; before any scale). Bits: sign.exponent.mantissa"));
    layout->addWidget(miniTable_);

    auto* axisCaption = new QLabel(FormatRangeAxis::legendText(), this);
    axisCaption->setObjectName(QStringLiteral("rangeAxisCaption"));
    axisCaption->setWordWrap(true);
    layout->addWidget(axisCaption);
    axis_ = new FormatRangeAxis(this);
    layout->addWidget(axis_);

    auto* examplesBox = new QGroupBox(tr("Worked examples"), this);
    auto* examplesLayout = new QVBoxLayout(examplesBox);
    examples_ = new QListWidget(examplesBox);
    examples_->setObjectName(QStringLiteral("workedExamples"));
    for (const WorkedExample& e : workedExamples()) examples_->addItem(e.title);
    examples_->setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);   // all rows shown (fitListsToRows)
    explanation_ = new QLabel(examplesBox);
    explanation_->setObjectName(QStringLiteral("exampleExplanation"));
    explanation_->setWordWrap(true);
    examplesLayout->addWidget(examples_);
    examplesLayout->addWidget(explanation_);
    layout->addWidget(examplesBox);
    connect(examples_, &QListWidget::currentRowChanged, this, [this](int row) {
        if (row >= 0) showWorkedExample(row);
    });

    auto* runBox = new QGroupBox(tr("Linked to the run"), this);
    auto* runLayout = new QFormLayout(runBox);
    bin_ = new QLabel(tr("Click a bin of the gradient histogram to see its value range."), runBox);
    bin_->setWordWrap(true);
    runLayout->addRow(bin_);
    layerBox_ = new QComboBox(runBox);
    layerBox_->setObjectName(QStringLiteral("explorerLayer"));
    runLayout->addRow(tr("Layer:"), layerBox_);
    scaleInput_ = new QLineEdit(runBox);
    scaleInput_->setObjectName(QStringLiteral("explorerLossScale"));
    scaleInput_->setPlaceholderText(tr("e.g. 8, 1024, 65536"));
    runLayout->addRow(tr("Loss scale S:"), scaleInput_);
    scaleNote_ = new QLabel(runBox);
    scaleNote_->setWordWrap(true);
    runLayout->addRow(scaleNote_);
    // A row per region, a column per scale: two columns of percentages fit a narrow dock.
    scaleTable_ = new QTableWidget(4, 2, runBox);
    scaleTable_->setObjectName(QStringLiteral("explorerShares"));
    scaleTable_->setVerticalHeaderLabels({tr("flushed to 0"), tr("subnormal"), tr("normal"), tr("overflow")});
    scaleTable_->setHorizontalHeaderLabels({tr("run's scale"), tr("scale S")});
    scaleTable_->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
    scaleTable_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    scaleTable_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    scaleTable_->setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    runLayout->addRow(scaleTable_);
    fitListsToRows();
    layout->addWidget(runBox);
    layout->addStretch(1);
    connect(scaleInput_, &QLineEdit::editingFinished, this, &FormatExplorer::refreshScaleTable);
    connect(layerBox_, &QComboBox::currentIndexChanged, this, &FormatExplorer::refreshScaleTable);

    setValue(1.0);
    refreshScaleTable();
}

void FormatExplorer::fitListsToRows()
{
    // The examples and the shares table as tall as their rows, so that none is cut off or
    // scrolled, at any font (presentation mode's is larger).
    int miniHeight = miniTable_->horizontalHeader()->sizeHint().height() + 2 * miniTable_->frameWidth();
    for (int i = 0; i < miniTable_->rowCount(); ++i) miniHeight += miniTable_->rowHeight(i);
    miniTable_->setFixedHeight(miniHeight);
    int rows = 0;
    for (int i = 0; i < examples_->count(); ++i) rows += examples_->sizeHintForRow(i);
    examples_->setFixedHeight(rows + 2 * examples_->frameWidth());
    scaleTable_->setFixedHeight(scaleTable_->horizontalHeader()->sizeHint().height() +
                                scaleTable_->verticalHeader()->length() + 2 * scaleTable_->frameWidth());
}

void FormatExplorer::changeEvent(QEvent* event)
{
    QWidget::changeEvent(event);
    if (event->type() == QEvent::FontChange) fitListsToRows();
}

FormatRow* FormatExplorer::row(Format f) const
{
    for (FormatRow* r : rows_)
        if (r->format() == f) return r;
    return nullptr;
}

void FormatExplorer::setValue(double value)
{
    value_ = value;
    inputProblem_->hide();
    const QString text = std::isfinite(value) ? exactDecimal(value) : QString::fromStdString(shortestDecimal(Format::fp32, float(value)));
    if (input_->text() != text && !input_->hasFocus()) input_->setText(text.size() > 40 ? QString::number(value, 'g', 17) : text);
    showAnatomy();
}

bool FormatExplorer::setText(const QString& text)
{
    const ParsedNumber parsed = parseExplorerNumber(text, static_cast<Format>(sixteenBit_->currentData().toInt()));
    if (!parsed.value) {
        inputProblem_->setText(parsed.error);
        inputProblem_->show();
        return false;
    }
    value_ = *parsed.value;
    if (input_->text() != text) input_->setText(text);   // when called from outside the field
    inputProblem_->hide();
    showAnatomy();
    for (FormatRow* r : rows_) r->setFocusFormat(parsed.pattern && r->format() == *parsed.pattern);
    return true;
}

void FormatExplorer::showWorkedExample(int index)
{
    const QVector<WorkedExample> examples = workedExamples();
    if (index < 0 || index >= examples.size()) return;
    const WorkedExample& e = examples[index];
    input_->clearFocus();
    setValue(e.input);
    explanation_->setText(QStringLiteral("<b>%1</b>: %2").arg(e.title, e.explanation));
    for (FormatRow* r : rows_) r->setFocusFormat(r->format() == e.focus);
    if (examples_->currentRow() != index) examples_->setCurrentRow(index);
}

QString FormatExplorer::explanation() const { return explanation_->text(); }

void FormatExplorer::showAnatomy()
{
    for (FormatRow* r : rows_) r->setAnatomy(describe(r->format(), value_));
    const float asFp32 = static_cast<float>(value_);   // what the engine holds and quantises
    for (int i = 0; i < miniTable_->rowCount(); ++i) {
        const MiniAnatomy m = describeMini(miniFormats()[static_cast<std::size_t>(i)].format, asFp32);
        const QString value = std::isnan(m.value) ? QStringLiteral("—")
                                                  : QString::fromStdString(shortestDecimal(Format::fp32, m.value));
        const QString error = std::isnan(m.error) ? QStringLiteral("—") : QString::number(m.error, 'g', 4);
        const QString kind = m.nonSaturating.isEmpty() ? m.kind : tr("%1 (not saturating: %2)").arg(m.kind, m.nonSaturating);
        const QString cells[] = {m.pattern, value, error, kind};
        for (int c = 0; c < 4; ++c) {
            auto* item = miniTable_->item(i, c);
            if (!item) miniTable_->setItem(i, c, item = new QTableWidgetItem);
            item->setText(cells[c]);
        }
    }
    axis_->setMarker(value_);
}

void FormatExplorer::showHistogramBin(const QString& layer, const QString& kind, int exponent)
{
    bin_->setText(tr("%1 %2, bin 2^%3: |x| in [%4, %5) before rounding; the number below is its lower end.")
                      .arg(layer, kind).arg(exponent).arg(exactDecimal(std::ldexp(1.0, exponent)).left(24),
                                                          exactDecimal(std::ldexp(1.0, exponent + 1)).left(24)));
    axis_->setInterval(exponent);
    explanation_->clear();
    setValue(std::ldexp(1.0, exponent));
    const int i = layerBox_->findText(QStringLiteral("%1 · %2").arg(layer, kind));
    if (i >= 0) layerBox_->setCurrentIndex(i);
}

QString FormatExplorer::binText() const { return bin_->text(); }

void FormatExplorer::setRun(const RunPtr& run)
{
    run_ = run;
    refillLayers();
    refreshScaleTable();
}

void FormatExplorer::setLossScale(double scale)
{
    scaleInput_->setText(QString::number(scale, 'g', 10));
    refreshScaleTable();
}

void FormatExplorer::selectLayer(const QString& layer, TensorKind kind)
{
    const int i = layerBox_->findText(
        QStringLiteral("%1 · %2").arg(layer, QString::fromLatin1(tensorKindName(kind).data())));
    if (i >= 0) layerBox_->setCurrentIndex(i);
    refreshScaleTable();
}

const TelemetryEvent* FormatExplorer::latestHistogram() const
{
    if (!run_) return nullptr;
    const auto& telemetry = run_->telemetry();
    for (auto it = telemetry.rbegin(); it != telemetry.rend(); ++it)
        if (it->hasHistograms && !it->layers.empty()) return &*it;
    return nullptr;
}

void FormatExplorer::refillLayers()
{
    const QString previous = layerBox_->currentText();
    const QSignalBlocker block(layerBox_);
    layerBox_->clear();
    if (const TelemetryEvent* t = latestHistogram())
        for (const LayerTelemetry& l : t->layers)
            layerBox_->addItem(QStringLiteral("%1 · %2").arg(QString::fromStdString(l.layer),
                                                             QString::fromLatin1(tensorKindName(l.kind).data())));
    int i = layerBox_->findText(previous);
    if (i < 0) i = layerBox_->findText(QStringLiteral("weight_grad"), Qt::MatchContains);
    layerBox_->setCurrentIndex(std::max(0, i));
}

void FormatExplorer::refreshScaleTable()
{
    chosen_ = current_ = {};
    shift_ = 0;
    const TelemetryEvent* t = latestHistogram();
    const int layerIndex = layerBox_->currentIndex();
    if (!t || layerIndex < 0 || layerIndex >= int(t->layers.size())) {
        scaleNote_->setText(tr("Select a run with gradient histograms to see where a loss scale moves them."));
        scaleTable_->clearContents();
        return;
    }
    const Format compute = run_->currentSettings().recipe.compute;
    bool ok = false;
    const double chosenScale = scaleInput_->text().toDouble(&ok);
    const double scale = ok && chosenScale > 0 ? chosenScale : t->lossScale;
    shift_ = scaleShiftBins(t->lossScale, scale);
    const GradientHistogram& h = t->layers[std::size_t(layerIndex)].histogram;
    current_ = regionShares(h, compute, 0);
    chosen_ = regionShares(h, compute, shift_);
    scaleNote_->setText(tr("Step %1, recorded at scale %2, in %3. S = %4 shifts every bin by %5 (log2 of S / %2).")
                            .arg(t->step).arg(t->lossScale, 0, 'g', 8)
                            .arg(QString::fromLatin1(formatName(compute).data()))
                            .arg(scale, 0, 'g', 8).arg(shift_));
    const std::array<const RegionShares*, 2> columns{&current_, &chosen_};
    for (int c = 0; c < 2; ++c) {
        const double regions[] = {columns[c]->flushed, columns[c]->subnormal, columns[c]->normal, columns[c]->overflow};
        for (int r = 0; r < 4; ++r) scaleTable_->setItem(r, c, new QTableWidgetItem(percent(regions[r])));
    }
}

}  // namespace plab::ui
