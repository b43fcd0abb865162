// The settings panel (left dock): model, dataset, precision preset and its switches,
// loss scaling, optimizer, batch size, learning rate, epochs, seed and backend. Notices
// about unusual combinations sit next to the controls; an impossible value is explained
// there and disables Start. During a run the precision switches, loss scaling, batch size
// and learning rate stay editable, and each finished edit is offered to the running
// trainer as a SettingsChange; model, dataset, seed and the rest are locked. A table gives
// any layer with weights its own precision (per-layer precision, live-editable too).
#pragma once

#include "backend/backend.h"
#include "trainer_metatypes.h"

#include <QWidget>

QT_BEGIN_NAMESPACE
class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QTableWidget;
QT_END_NAMESPACE

namespace plab::ui {

class WheelGuard;

class LossScalingEditor;

class SettingsPanel : public QWidget {
    Q_OBJECT
public:
    explicit SettingsPanel(QWidget* parent = nullptr);

    // Shows `settings`; keys without a control (widths, threads, data_dir, ...) are kept.
    void setSettings(const TrainSettings& settings);
    // Where a run started here writes (its record and final weights): said on Start.
    void setOutputFolder(const QString& runsDir);
    // The settings the controls describe (meaningful when isValid()).
    TrainSettings settings() const { return current_; }
    bool isValid() const { return problem_.isEmpty(); }
    QString problem() const { return problem_; }
    QStringList notices() const { return notices_; }
    // The switches differ from the chosen preset.
    bool isCustomRecipe() const;

    // Live mode: the run with `runSettings` trains; only live-editable fields are enabled.
    void setLive(bool live, const TrainSettings& runSettings = {});
    bool isLive() const { return live_; }
    // The running trainer refused a change (empty: it took it).
    void showChangeResult(const QString& error);

    void setCudaInfo(const BackendInfo& info);

signals:
    void startRequested();
    void validityChanged(bool valid);
    void settingsEdited();
    void liveChangeRequested(const plab::SettingsChange& change);

private:
    void buildUi();
    void applyPreset();
    // The recipe's switches into their controls (callers hold filling_).
    void showRecipeSwitches(const PrecisionRecipe& r);
    // One row per layer with weights of `model`, each showing its precision in `recipe`
    // (callers hold filling_).
    void showLayerRows(const ModelSpec& model, const PrecisionRecipe& recipe);
    std::vector<LayerPrecision> layerChoices() const;
    void readControls();     // controls -> current_, problem_, notices_; refreshes the labels
    void commitLiveEdit();   // in live mode: send what differs from the run's settings
    void refreshLocks();

    TrainSettings current_;
    TrainSettings runSettings_;   // the live run's settings incl. the changes sent to it
    QString problem_;
    QStringList notices_;
    QString droppedPaths_;   // which paths the last setSettings did not take (empty: none)
    WheelGuard* wheelGuard_;   // the wheel scrolls the panel unless a control has the focus
    QString changeError_;
    bool live_ = false;
    bool filling_ = false;
    bool cudaAvailable_ = false;

    QComboBox* model_;
    QComboBox* dataset_;
    QComboBox* preset_;
    QLabel* customMark_;
    QComboBox* compute_;
    QComboBox* quantize_;      // matmul/conv inputs: compute format, FP8 or MX
    QComboBox* fp8Formats_;    // hybrid or E4M3 throughout
    QComboBox* mxScale_;       // MX block exponent: floor or ceil
    QTableWidget* layers_;     // per-layer precision: a layer and its own precision per row
    QCheckBox* masterWeights_;
    QComboBox* optimizerState_;   // "auto" (the weights' rule), fp32, bf16, fp16
    QComboBox* updateRounding_;   // nearest, stochastic, kahan
    QCheckBox* fp32Accumulate_;
    QCheckBox* fp32SensitiveOps_;
    QComboBox* attentionScores_;   // storage, fp32: the vit's q k^T (recipe.h)
    LossScalingEditor* lossScaling_;
    QComboBox* optimizer_;
    QLineEdit* lr_;
    QComboBox* lrSchedule_;         // constant or cosine
    QLineEdit* warmupSteps_;        // linear warm-up steps (0: none)
    QCheckBox* zeroInitResidual_;   // vit: residual branches start at zero
    QLineEdit* labelSmoothing_;     // the training loss's label smoothing, [0, 1)
    QLineEdit* batch_;
    QLineEdit* gradAccumSteps_;     // micro-batches a step's batch is split into (1: none)
    QComboBox* gradAccumFormat_;    // their gradients' buffer: fp32, bf16, fp16
    QLineEdit* epochs_;
    QLineEdit* maxSteps_;
    QLineEdit* seed_;
    QLineEdit* threads_;             // the run's CPU threads
    QComboBox* arithmetic_;         // the CPU's 16-bit products: hardware or exact
    QComboBox* telemetry_;          // every-step or sampled (TelemetryMode)
    QLineEdit* initWeights_;        // a safetensors file; empty: random weights from the seed
    QPushButton* browseWeights_;
    QComboBox* backend_;
    QLabel* backendNote_;
    QLabel* liveHint_;
    QLabel* notices_label_;
    QLabel* problemLabel_;
    QPushButton* start_;
    QList<QWidget*> lockedDuringRun_;
};

}  // namespace plab::ui
