// Over 500 lines: one control per setting of the settings table, each built with its tooltip, filled from and read into TrainSettings in one place, so no setting is shown one way and read another.
// The settings panel: controls <-> TrainSettings, validation, live changes.
#include "settings_panel.h"

#include "loss_scaling_editor.h"
#include "wheel_guard.h"
#include "error.h"
#include "nn/model_kinds.h"
#include "train/settings.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QHeaderView>
#include <QStandardItemModel>
#include <QTableWidget>
#include <QThread>
#include <QVBoxLayout>

#include <algorithm>

namespace plab::ui {

namespace {

// Whether the recipe's quantisation, or that of any layer of its own, satisfies `uses`.
template <typename Uses>
bool anyLayerQuantizes(const PrecisionRecipe& recipe, Uses uses)
{
    if (uses(recipe.quantization)) return true;
    return std::any_of(recipe.layers.begin(), recipe.layers.end(),
                       [&](const LayerPrecision& l) { return uses(recipe.forLayer(l.layer).quantization); });
}

QString sentence(const std::string& text)
{
    QString s = QString::fromStdString(text);
    if (!s.isEmpty()) s[0] = s[0].toUpper();
    if (!s.endsWith(QLatin1Char('.'))) s += QLatin1Char('.');
    return s;
}

void selectData(QComboBox* combo, const QString& value)
{
    const int i = combo->findData(value);
    if (i >= 0) combo->setCurrentIndex(i);
}

QString dataOf(const QComboBox* combo) { return combo->currentData().toString(); }

QString fromView(std::string_view s) { return QString::fromUtf8(s.data(), static_cast<qsizetype>(s.size())); }

// The settings key's row (train/settings.h): every key the panel shows has one.
const SettingKey& row(const char* key)
{
    const SettingKey* k = findSettingKey(key);
    Q_ASSERT(k);
    return *k;
}

// A key's label in the panel: its row's title.
QString titleOf(const char* key) { return QString::fromUtf8(row(key).title); }

// A key's choices as the panel's items: each row choice's title and value.
QList<QPair<QString, QString>> choicesOf(const char* key)
{
    QList<QPair<QString, QString>> items;
    for (const SettingChoice& c : row(key).choices) items.append({QString::fromUtf8(c.title), QString::fromUtf8(c.value)});
    return items;
}

}  // namespace

SettingsPanel::SettingsPanel(QWidget* parent) : QWidget(parent), wheelGuard_(new WheelGuard(this))
{
    buildUi();
    wheelGuard_->guard(this);
    setCudaInfo(probeCudaBackend());
    setSettings(TrainSettings{});
}

void SettingsPanel::buildUi()
{
    auto named = [](auto* w, const char* name) {
        w->setObjectName(QString::fromLatin1(name));
        return w;
    };
    auto combo = [&](const char* name, const QList<QPair<QString, QString>>& items) {
        auto* c = named(new QComboBox(this), name);
        for (const auto& [text, value] : items) c->addItem(text, value);
        return c;
    };
    auto edit = [&](const char* name, const QString& tip) {
        auto* e = named(new QLineEdit(this), name);
        e->setToolTip(tip);
        return e;
    };

    model_ = combo("modelCombo", choicesOf("model"));
    dataset_ = combo("datasetCombo", choicesOf("dataset"));
    QList<QPair<QString, QString>> presets;
    for (const auto& name : PrecisionRecipe::presetNames())
        presets.append({QString::fromStdString(PrecisionRecipe::displayName(name)), QString::fromStdString(name)});
    preset_ = combo("presetCombo", presets);
    // The frameworks' recipes by their own names, after a separator (each sets the same
    // switches; docs/FRAMEWORK_PRESETS.md).
    preset_->insertSeparator(preset_->count());
    for (const auto& name : PrecisionRecipe::frameworkPresetNames())
        preset_->addItem(QString::fromStdString(PrecisionRecipe::displayName(name)), QString::fromStdString(name));
    // Below 16 bits (FP8 and MX), after another separator.
    preset_->insertSeparator(preset_->count());
    for (const auto& name : PrecisionRecipe::lowPrecisionPresetNames())
        preset_->addItem(QString::fromStdString(PrecisionRecipe::displayName(name)), QString::fromStdString(name));
    customMark_ = named(new QLabel(tr("custom"), this), "customMark");
    customMark_->setToolTip(tr("The switches below differ from the preset"));
    QFont italic = customMark_->font();
    italic.setItalic(true);
    customMark_->setFont(italic);
    compute_ = combo("computeCombo", choicesOf("compute"));
    quantize_ = combo("quantizeCombo", choicesOf("quantize"));
    quantize_->setToolTip(tr("Matmul and convolution inputs: rounded to the compute format, or quantised below 16 "
                             "bits with a scale per tensor (FP8), per block of 32 (OCP MX) or per block of 16 with a "
                             "tensor scale too (NVFP4). The compute format is then that of the outputs."));
    fp8Formats_ = combo("fp8FormatsCombo", choicesOf("fp8_format"));
    fp8Formats_->setToolTip(tr("FP8 formats: E5M2 has the range gradients need, E4M3 the precision"));
    mxScale_ = combo("mxScaleCombo", choicesOf("mx_scale"));
    mxScale_->setToolTip(tr("MXFP8 / MXFP4 block scale. Rounded down (the OCP MX v1.0 reference) leaves a block's "
                            "largest value between 2^emax and 2^(emax+1), where E4M3 clips what is above 448; "
                            "rounded up (Transformer Engine's MXFP8) takes the smallest power of two that fits the "
                            "block, so nothing clips and small values lose one more binade."));
    layers_ = named(new QTableWidget(0, 2, this), "layerTable");
    layers_->setHorizontalHeaderLabels({tr("Layer"), tr("Precision")});
    layers_->verticalHeader()->hide();
    layers_->horizontalHeader()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
    layers_->horizontalHeader()->setSectionResizeMode(1, QHeaderView::Stretch);
    layers_->setSelectionMode(QAbstractItemView::NoSelection);
    layers_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    layers_->setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    layers_->setToolTip(tr("Per-layer precision (selective autocast): a layer can keep a higher precision than the "
                           "recipe (FP8 practice keeps the first and last layers in bf16) or take another one. Its "
                           "operands, outputs and weights follow its own choice; the recipe's other switches apply."));
    masterWeights_ = named(new QCheckBox(titleOf("master_weights"), this), "masterWeightsCheck");
    optimizerState_ = combo("optimizerStateCombo", choicesOf("optimizer_state"));
    optimizerState_->setToolTip(tr("The format of SGD's momentum and Adam's moments. As the weights: fp32 beside "
                                   "fp32 master weights, else the weights' 16-bit format, as PyTorch keeps them. "
                                   "Set it apart to see what the weights' format does and what the optimizer "
                                   "arithmetic does."));
    updateRounding_ = combo("updateRoundingCombo", choicesOf("update_rounding"));
    updateRounding_->setToolTip(tr("How the optimizer rounds its write to the weights. To nearest, an update below "
                                   "half the weights' spacing is lost; stochastic rounding rounds up or down with "
                                   "the probabilities that keep it on average; Kahan keeps what rounding lost in a "
                                   "compensation buffer (one more tensor in the weights' format) and adds it back. "
                                   "Meant for 16-bit weights without master weights."));
    fp32Accumulate_ = named(new QCheckBox(titleOf("fp32_accumulate"), this), "fp32AccumulateCheck");
    fp32SensitiveOps_ = named(new QCheckBox(titleOf("fp32_sensitive_ops"), this), "fp32SensitiveOpsCheck");
    attentionScores_ = combo("attentionScoresCombo", choicesOf("attention_scores"));
    attentionScores_->setToolTip(tr("vit: attention's scores q k^T rounded to the storage format before the "
                                    "1/sqrt(d) scale, as attention written op by op rounds them (where fp16 "
                                    "overflows past 65504), or kept in fp32 through the softmax and its gradient, "
                                    "as fused kernels (FlashAttention) keep them. Other models have no attention."));
    lossScaling_ = new LossScalingEditor(this);
    optimizer_ = combo("optimizerCombo", choicesOf("optimizer"));
    lr_ = edit("lrEdit", tr("Learning rate (live: applied at the next step)"));
    lrSchedule_ = combo("lrScheduleCombo", choicesOf("lr_schedule"));
    lrSchedule_->setToolTip(tr("Constant: the learning rate throughout. Cosine: lowered along a half cosine "
                               "towards 0 over the planned steps (the batch size is then fixed for the run). "
                               "Either after the warm-up."));
    warmupSteps_ = edit("warmupStepsEdit", tr("Steps of linear warm-up from lr / N to lr at the start (0: none)"));
    zeroInitResidual_ = named(new QCheckBox(titleOf("zero_init_residual"), this), "zeroInitResidualCheck");
    zeroInitResidual_->setToolTip(tr("vit: each block's attention projection and second MLP layer start with zero "
                                     "weights, so that every block begins as the identity. Other models have no "
                                     "residual branches."));
    labelSmoothing_ = edit("labelSmoothingEdit", tr("Label smoothing of the training loss, in [0, 1): each target is "
                                                    "e / classes on every class plus 1 - e on the label (0: none), as "
                                                    "PyTorch's cross_entropy. Needs the loss in fp32."));
    batch_ = edit("batchEdit", tr("Samples per step (live: applied at the next step)"));
    gradAccumSteps_ = edit("gradAccumStepsEdit",
                           tr("Gradient accumulation: the batch split into this many micro-batches, each one's "
                              "gradients added into one buffer before the update (1: none; the CPU backend). What the "
                              "additions lose is counted beside the lost updates."));
    gradAccumFormat_ = combo("gradAccumFormatCombo", choicesOf("grad_accum_format"));
    gradAccumFormat_->setToolTip(tr("The accumulation buffer's format: each micro-batch's gradients rounded to it and "
                                    "added in it, as a framework's .grad of that dtype accumulates (PyTorch's "
                                    "model.half() keeps it in fp16)."));
    epochs_ = edit("epochsEdit", tr("Passes over the training set (0: no training, the initial weights evaluated once)"));
    maxSteps_ = edit("maxStepsEdit", tr("Stop after this many steps; 0 for no limit"));
    seed_ = edit("seedEdit", tr("Seed of the weights and of the shuffling"));
    threads_ = edit("threadsEdit", tr("CPU threads the run computes on (1 to 256; more than this machine's %1 logical "
                                      "cores are cut down to them). The numbers do not depend on it.")
                                       .arg(QThread::idealThreadCount()));
    initWeights_ = edit("initWeightsEdit", tr("Start from these weights: a safetensors file with PyTorch's tensor names "
                                              "(File > Export Weights writes one; docs/WEIGHTS.md). Empty: random "
                                              "weights from the seed."));
    initWeights_->setPlaceholderText(tr("random, from the seed"));
    initWeights_->setClearButtonEnabled(true);
    browseWeights_ = named(new QPushButton(tr("Browse…"), this), "browseWeightsButton");
    browseWeights_->setToolTip(tr("Choose a safetensors weights file"));
    backend_ = combo("backendCombo", choicesOf("backend"));
    backendNote_ = named(new QLabel(this), "backendNote");
    backendNote_->setWordWrap(true);
    arithmetic_ = combo("arithmeticCombo", choicesOf("arithmetic"));
    arithmetic_->setToolTip(
        tr("How the CPU multiplies bf16/fp16 operands: on its native units through oneDNN where it has them "
           "(faster; the sums run in the hardware's order), or emulated on fp32 arithmetic (the reference). "
           "Here, bf16 — %1; fp16 — %2.")
            .arg(QString::fromStdString(cpuArithmeticFor(Arithmetic::hardware, {Format::bf16, true})),
                 QString::fromStdString(cpuArithmeticFor(Arithmetic::hardware, {Format::fp16, true}))));
    telemetry_ = combo("telemetryCombo", choicesOf("telemetry"));
    telemetry_->setToolTip(
        tr("Every step: the lab rounds and counts every 16-bit result at every step. Sampled: between the "
           "telemetry snapshots a GPU runs the 16-bit convolutions on cuDNN, which rounds their sums itself where "
           "no count sees it (as PyTorch runs them, to be faster: not yet measured); the snapshot steps are counted "
           "whole. The CPU counts every step either way."));

    auto* layout = new QVBoxLayout(this);
    // Each setting's control under its row's group and title (train/settings.h), in the
    // panel's order; a check box or an editor of its own carries its title itself.
    auto* weightsRow = new QHBoxLayout;
    weightsRow->addWidget(initWeights_, 1);
    weightsRow->addWidget(browseWeights_);
    auto* presetRow = new QHBoxLayout;
    presetRow->addWidget(preset_, 1);
    presetRow->addWidget(customMark_);
    struct Placed {
        const char* key;
        QWidget* field;
        QLayout* fields = nullptr;   // several widgets on one row
        bool labelled = true;
    };
    const Placed placed[] = {
        {"model", model_},
        {"dataset", dataset_},
        {"epochs", epochs_},
        {"max_steps", maxSteps_},
        {"seed", seed_},
        {"threads", threads_},
        {"init_weights", nullptr, weightsRow},
        {"backend", backend_},
        {"arithmetic", arithmetic_},
        {"telemetry", telemetry_},
        {"recipe", nullptr, presetRow},
        {"compute", compute_},
        {"quantize", quantize_},
        {"fp8_format", fp8Formats_},
        {"mx_scale", mxScale_},
        {"master_weights", masterWeights_, nullptr, false},
        {"optimizer_state", optimizerState_},
        {"update_rounding", updateRounding_},
        {"fp32_accumulate", fp32Accumulate_, nullptr, false},
        {"fp32_sensitive_ops", fp32SensitiveOps_, nullptr, false},
        {"attention_scores", attentionScores_},
        {"loss_scale", lossScaling_, nullptr, false},
        {"layer", layers_},
        {"optimizer", optimizer_},
        {"lr", lr_},
        {"lr_schedule", lrSchedule_},
        {"warmup_steps", warmupSteps_},
        {"label_smoothing", labelSmoothing_},
        {"zero_init_residual", zeroInitResidual_, nullptr, false},
        {"batch", batch_},
        {"grad_accum_steps", gradAccumSteps_},
        {"grad_accum_format", gradAccumFormat_},
    };
    std::vector<std::pair<SettingGroup, QFormLayout*>> forms;   // in the order first used
    auto formOf = [&](SettingGroup g) {
        for (const auto& [group, form] : forms)
            if (group == g) return form;
        auto* box = new QGroupBox(fromView(settingGroupTitle(g)), this);
        auto* form = new QFormLayout(box);
        form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
        layout->addWidget(box);
        forms.emplace_back(g, form);
        return form;
    };
    for (const Placed& p : placed) {
        const SettingKey& key = row(p.key);
        QFormLayout* form = formOf(key.group);
        if (p.field == layers_) {   // the table under its title, across the form
            form->addRow(new QLabel(titleOf(p.key), this));
            form->addRow(layers_);
        } else if (p.fields) {
            form->addRow(titleOf(p.key), p.fields);
        } else if (p.labelled) {
            form->addRow(titleOf(p.key), p.field);
        } else {
            form->addRow(p.field);
        }
        if (p.key == std::string_view("arithmetic")) form->addRow(backendNote_);   // what the backends can do here
        // What a training run cannot take at its next step stays as the run began.
        if (!key.live) {
            if (p.field) lockedDuringRun_.append(p.field);
            if (p.fields)
                for (int i = 0; i < p.fields->count(); ++i)
                    if (QWidget* w = p.fields->itemAt(i)->widget()) lockedDuringRun_.append(w);
        }
    }

    liveHint_ = named(new QLabel(tr("A run is training: changes to precision, loss scaling, batch size and "
                                    "learning rate apply at its next step."), this), "liveHint");
    liveHint_->setWordWrap(true);
    liveHint_->setVisible(false);   // shown by setLive(true) only: no run trains yet
    notices_label_ = named(new QLabel(this), "noticesLabel");
    notices_label_->setWordWrap(true);
    notices_label_->setTextFormat(Qt::PlainText);
    notices_label_->setFrameShape(QFrame::StyledPanel);
    notices_label_->setBackgroundRole(QPalette::AlternateBase);
    notices_label_->setAutoFillBackground(true);
    notices_label_->setMargin(6);
    problemLabel_ = named(new QLabel(this), "problemLabel");
    problemLabel_->setWordWrap(true);
    problemLabel_->setTextFormat(Qt::PlainText);
    // A red that reads on light and dark backgrounds alike.
    QPalette warn = problemLabel_->palette();
    warn.setColor(QPalette::WindowText, QColor(0xe0, 0x4b, 0x4b));
    problemLabel_->setPalette(warn);
    QFont bold = problemLabel_->font();
    bold.setBold(true);
    problemLabel_->setFont(bold);
    start_ = named(new QPushButton(tr("Start"), this), "startButton");
    start_->setToolTip(tr("Start a run with these settings (Ctrl+R)"));
    layout->addWidget(liveHint_);
    layout->addWidget(notices_label_);
    layout->addWidget(problemLabel_);
    layout->addWidget(start_);
    layout->addStretch(1);

    // Choices commit at once; typed numbers on Enter or when focus leaves.
    auto onChoice = [this] {
        if (filling_) return;
        readControls();
        commitLiveEdit();
    };
    for (QComboBox* c : {dataset_, compute_, quantize_, fp8Formats_, mxScale_, optimizerState_, updateRounding_, optimizer_, backend_,
                          arithmetic_, telemetry_, lrSchedule_, gradAccumFormat_, attentionScores_})
        connect(c, &QComboBox::currentIndexChanged, this, onChoice);
    connect(model_, &QComboBox::currentIndexChanged, this, [this, onChoice] {
        if (!filling_) {
            // Widths, per-layer precision and a model's own training defaults belong to the
            // model they were set for: the widths become the new model's, and what was left
            // at the old model's defaults takes the new one's (followModelDefaults).
            const std::string to = dataOf(model_).toStdString();
            current_.recipe.layers.clear();
            // A typed learning rate stays as typed where the model change keeps its value (its
            // problem, if it has one, shown as for any edit).
            const QString typedLr = lr_->text();
            const TrainSettings followed = followModelDefaults(current_, to);
            const bool lrKept = followed.optimizer.lr == current_.optimizer.lr;
            setSettings(followed);
            if (lrKept) lr_->setText(typedLr);
        }
        onChoice();
    });
    for (QCheckBox* c : {masterWeights_, fp32Accumulate_, fp32SensitiveOps_, zeroInitResidual_})
        connect(c, &QCheckBox::toggled, this, onChoice);
    connect(preset_, &QComboBox::currentIndexChanged, this, [this] {
        if (filling_) return;
        applyPreset();
        readControls();
        commitLiveEdit();
    });
    connect(lossScaling_, &LossScalingEditor::edited, this, [this] {
        if (!filling_) readControls();
    });
    connect(lossScaling_, &LossScalingEditor::committed, this, [this] {
        if (!filling_) commitLiveEdit();
    });
    connect(browseWeights_, &QPushButton::clicked, this, [this] {
        const QString f = QFileDialog::getOpenFileName(this, tr("Initial Weights"), initWeights_->text(),
                                                       tr("safetensors weights (*.safetensors);;All files (*)"));
        if (!f.isEmpty()) initWeights_->setText(f);
    });
    for (QLineEdit* e : {lr_, warmupSteps_, labelSmoothing_, batch_, gradAccumSteps_, epochs_, maxSteps_, seed_, threads_,
                         initWeights_}) {
        connect(e, &QLineEdit::textChanged, this, [this] {
            if (!filling_) readControls();
        });
        connect(e, &QLineEdit::editingFinished, this, [this, e] {
            if (!e->isModified()) return;
            e->setModified(false);
            commitLiveEdit();
        });
    }
    connect(start_, &QPushButton::clicked, this, [this] {
        if (isValid()) emit startRequested();
    });
}

void SettingsPanel::setCudaInfo(const BackendInfo& info)
{
    cudaAvailable_ = info.available;
    auto* items = qobject_cast<QStandardItemModel*>(backend_->model());
    if (QStandardItem* cuda = items ? items->item(1) : nullptr) {
        cuda->setEnabled(info.available);
        cuda->setToolTip(info.available ? QString() : QString::fromStdString(info.reason));
    }
    const QString reason = QString::fromStdString(info.reason);
    const QString forPeople = QString::fromStdString(cudaReasonForPeople(info.reason));
    backendNote_->setText(info.available                ? tr("CUDA: available")
                          : forPeople != reason         ? tr("CUDA: %1").arg(forPeople)
                          : reason.startsWith(QLatin1String("unavailable")) ? tr("CUDA %1").arg(reason)
                                                                             : tr("CUDA: not available: %1").arg(reason));
    // The raw reason as the detail (what the CUDA runtime said).
    backendNote_->setToolTip(info.available ? backendNote_->text() : tr("CUDA %1").arg(reason));
    if (!filling_) readControls();
}

void SettingsPanel::setOutputFolder(const QString& runsDir)
{
    start_->setToolTip(tr("Start a run with these settings (Ctrl+R). It writes its record and its final weights "
                          "into the runs folder %1, and no other file.")
                           .arg(QDir::toNativeSeparators(runsDir)));
}

void SettingsPanel::setSettings(const TrainSettings& given)
{
    // Paths the panel does not show are not taken: settings from a record, a config or the
    // clipboard may come from someone else, and a run started here reads and writes only
    // files the person can see (the initial weights have their own field; the data folder is
    // the app's; the record and weights go to the runs folder).
    TrainSettings s = given;
    QStringList dropped;
    for (auto [value, key] : {std::pair{&s.writeBatches, "write_batches"}, std::pair{&s.saveWeights, "save_weights"},
                              std::pair{&s.readBatches, "read_batches"}, std::pair{&s.dataDir, "data_dir"}}) {
        if (value->empty()) continue;
        QString path = QString::fromStdString(*value);
        if (path.size() > 60) path = path.left(28) + QStringLiteral("…") + path.right(28);
        dropped << QStringLiteral("%1 “%2”").arg(QLatin1String(key), path);
        value->clear();
    }
    droppedPaths_ = dropped.isEmpty() ? QString()
                                      : tr("Not taken from these settings (the panel does not show them, so a run "
                                           "never reads or writes a file you did not choose): %1.")
                                            .arg(dropped.join(QStringLiteral(", ")));
    filling_ = true;
    current_ = s;
    selectData(model_, QString::fromStdString(s.model.kind));
    selectData(dataset_, QString::fromStdString(s.dataset));
    selectData(preset_, QString::fromStdString(s.recipe.preset));
    showRecipeSwitches(s.recipe);
    showLayerRows(s.model, s.recipe);
    selectData(optimizer_, QString::fromStdString(s.optimizer.kind));
    lr_->setText(numberText(s.optimizer.lr));
    selectData(lrSchedule_, QString::fromLatin1(lrShapeName(s.lrSchedule.shape).data()));
    warmupSteps_->setText(QString::number(s.lrSchedule.warmupSteps));
    zeroInitResidual_->setChecked(s.zeroInitResidual);
    labelSmoothing_->setText(numberText(s.labelSmoothing));
    batch_->setText(QString::number(s.batch));
    gradAccumSteps_->setText(QString::number(s.gradAccumSteps));
    selectData(gradAccumFormat_, QString::fromLatin1(formatName(s.gradAccumFormat).data()));
    epochs_->setText(QString::number(s.epochs));
    maxSteps_->setText(QString::number(s.maxSteps));
    seed_->setText(QString::number(s.seed));
    threads_->setText(QString::number(s.threads));
    initWeights_->setText(QString::fromStdString(s.initWeights));
    selectData(backend_, QString::fromStdString(s.backend));
    selectData(arithmetic_, QString::fromLatin1(arithmeticName(s.arithmetic).data()));
    selectData(telemetry_, QString::fromLatin1(telemetryModeName(s.telemetry).data()));
    filling_ = false;
    readControls();
}

void SettingsPanel::showRecipeSwitches(const PrecisionRecipe& r)
{
    selectData(compute_, QString::fromLatin1(formatName(r.compute).data()));
    masterWeights_->setChecked(r.masterWeights);
    selectData(optimizerState_, r.optimizerState ? QString::fromLatin1(formatName(*r.optimizerState).data())
                                                 : QStringLiteral("auto"));
    selectData(updateRounding_, QString::fromLatin1(updateRoundingName(r.updateRounding).data()));
    fp32Accumulate_->setChecked(r.fp32Accumulate);
    fp32SensitiveOps_->setChecked(r.fp32SensitiveOps);
    selectData(attentionScores_, r.fp32AttentionScores ? QStringLiteral("fp32") : QStringLiteral("storage"));
    selectData(quantize_, QString::fromLatin1(quantModeName(r.quantization.mode).data()));
    selectData(fp8Formats_, r.quantization.hybrid ? QStringLiteral("hybrid") : QStringLiteral("e4m3"));
    selectData(mxScale_, QString::fromLatin1(mxScaleRoundingName(r.quantization.mxScale).data()));
    lossScaling_->setLossScaling(r.lossScaling);
}

void SettingsPanel::showLayerRows(const ModelSpec& model, const PrecisionRecipe& recipe)
{
    const auto names = parameterLayerNames(model);
    layers_->setRowCount(static_cast<int>(names.size()));
    for (int row = 0; row < static_cast<int>(names.size()); ++row) {
        const std::string& name = names[static_cast<std::size_t>(row)];
        auto* item = new QTableWidgetItem(QString::fromStdString(name));
        layers_->setItem(row, 0, item);
        auto* choice = qobject_cast<QComboBox*>(layers_->cellWidget(row, 1));
        if (!choice) {
            choice = new QComboBox(layers_);
            choice->addItem(tr("as the recipe"), QString());
            for (const auto& [text, value] : choicesOf("compute")) choice->addItem(text, value);
            for (const auto& [text, value] : choicesOf("quantize"))
                if (value != QLatin1String("off")) choice->addItem(text, value);
            // A block-scaled quantisation of one pass (linear layers; the other pass in the
            // compute format), as layerPrecisionNames spells it: "mxfp4:forward".
            for (const QuantPasses pass : {QuantPasses::forward, QuantPasses::backward})
                for (const auto& [text, value] : choicesOf("quantize")) {
                    const auto mode = parseQuantMode(value.toStdString());
                    if (mode && quantModeInfo(*mode).blockSize > 0)
                        choice->addItem(tr("%1, %2 pass only").arg(text, QLatin1String(quantPassesName(pass).data())),
                                        QString::fromStdString(layerPrecisionOfPass(value.toStdString(), pass)));
                }
            connect(choice, &QComboBox::currentIndexChanged, this, [this] {
                if (filling_) return;
                readControls();
                commitLiveEdit();
            });
            layers_->setCellWidget(row, 1, choice);
        }
        choice->setObjectName(QStringLiteral("layerCombo_%1").arg(QString::fromStdString(name)));
        const LayerPrecision* own = recipe.layerPrecision(name);
        selectData(choice, own ? QString::fromStdString(own->precision) : QString());
    }
    wheelGuard_->guard(layers_);   // the rows' new choices too
    layers_->resizeRowsToContents();
    int height = layers_->horizontalHeader()->height() + 2 * layers_->frameWidth();
    for (int row = 0; row < layers_->rowCount(); ++row) height += layers_->rowHeight(row);
    layers_->setFixedHeight(height);
}

std::vector<LayerPrecision> SettingsPanel::layerChoices() const
{
    std::vector<LayerPrecision> out;
    for (int row = 0; row < layers_->rowCount(); ++row) {
        const auto* choice = qobject_cast<const QComboBox*>(layers_->cellWidget(row, 1));
        if (!choice || dataOf(choice).isEmpty()) continue;
        out.push_back({layers_->item(row, 0)->text().toStdString(), dataOf(choice).toStdString()});
    }
    return out;
}

void SettingsPanel::applyPreset()
{
    const auto preset = PrecisionRecipe::fromPreset(dataOf(preset_).toStdString());
    if (!preset) return;
    filling_ = true;
    showRecipeSwitches(*preset);
    // The history, algorithm and margin have no control here (plab and config files set
    // them): a preset brings back its own.
    current_.recipe.quantization = preset->quantization;
    filling_ = false;
}

bool SettingsPanel::isCustomRecipe() const
{
    // The switches against the preset's; per-layer precision has its own table.
    return !current_.recipe.matchesPreset(PrecisionRecipe::PresetMatch::switchesOnly);
}

void SettingsPanel::readControls()
{
    TrainSettings s = current_;
    QString problem;
    // A typed whole number within its settings row's range.
    auto integer = [&](QLineEdit* e, const char* key, long long& out) {
        if (!problem.isEmpty()) return;
        bool ok = false;
        const long long v = e->text().trimmed().toLongLong(&ok);
        if (!ok)
            problem = tr("%1: “%2” is not a whole number.").arg(titleOf(key), e->text());
        else if (const std::string outside = settingWholeProblem(row(key), v); !outside.empty())
            problem = tr("%1 %2.").arg(titleOf(key), QString::fromStdString(outside));
        else
            out = v;
    };

    s.model.kind = dataOf(model_).toStdString();
    s.dataset = dataOf(dataset_).toStdString();
    s.recipe.preset = dataOf(preset_).toStdString();
    s.recipe.compute = parseFormat(dataOf(compute_).toStdString()).value_or(Format::fp32);
    s.recipe.masterWeights = masterWeights_->isChecked();
    s.recipe.optimizerState = parseFormat(dataOf(optimizerState_).toStdString());   // "auto": unset
    s.recipe.updateRounding = parseUpdateRounding(dataOf(updateRounding_).toStdString()).value_or(UpdateRounding::nearest);
    s.recipe.fp32Accumulate = fp32Accumulate_->isChecked();
    s.recipe.fp32SensitiveOps = fp32SensitiveOps_->isChecked();
    s.recipe.fp32AttentionScores = dataOf(attentionScores_) == QLatin1String("fp32");
    s.recipe.quantization.mode = parseQuantMode(dataOf(quantize_).toStdString()).value_or(QuantMode::off);
    s.recipe.quantization.hybrid = dataOf(fp8Formats_) == QLatin1String("hybrid");
    s.recipe.quantization.mxScale = parseMxScaleRounding(dataOf(mxScale_).toStdString()).value_or(MxScaleRounding::floor);
    s.recipe.layers = layerChoices();
    // The FP8 formats apply wherever FP8 or MXFP8 quantises, the MX scale wherever MXFP8 or
    // MXFP4 does: the recipe or a layer of its own.
    fp8Formats_->setEnabled(anyLayerQuantizes(s.recipe, [](const Quantization& q) { return q.fp8Elements(); }));
    mxScale_->setEnabled(anyLayerQuantizes(s.recipe, [](const Quantization& q) {
        return q.info().scale == QuantScale::blockE8M0;
    }));
    if (const auto scaling = lossScaling_->lossScaling(&problem)) s.recipe.lossScaling = *scaling;
    s.optimizer.kind = dataOf(optimizer_).toStdString();
    s.lrSchedule.shape = parseLrShape(dataOf(lrSchedule_).toStdString()).value_or(LrShape::constant);
    s.zeroInitResidual = zeroInitResidual_->isChecked();
    s.backend = dataOf(backend_).toStdString();
    s.arithmetic = parseArithmetic(dataOf(arithmetic_).toStdString()).value_or(Arithmetic::hardware);
    s.telemetry = parseTelemetryMode(dataOf(telemetry_).toStdString()).value_or(TelemetryMode::everyStep);
    if (problem.isEmpty()) {
        const auto lr = parseNumberText(lr_->text());
        if (!lr)
            problem = tr("%1: “%2” is not a number.").arg(titleOf("lr"), lr_->text());
        else
            s.optimizer.lr = *lr;
    }
    if (problem.isEmpty()) {
        const auto smoothing = parseNumberText(labelSmoothing_->text());
        if (!smoothing)
            problem = tr("%1: “%2” is not a number.").arg(titleOf("label_smoothing"), labelSmoothing_->text());
        else
            s.labelSmoothing = *smoothing;   // its range: its settings row's, below
    }
    long long batch = s.batch, epochs = s.epochs, maxSteps = s.maxSteps, seed = static_cast<long long>(s.seed);
    long long warmup = s.lrSchedule.warmupSteps;
    integer(warmupSteps_, "warmup_steps", warmup);
    s.lrSchedule.warmupSteps = warmup;
    integer(batch_, "batch", batch);
    long long accumSteps = s.gradAccumSteps;
    integer(gradAccumSteps_, "grad_accum_steps", accumSteps);
    s.gradAccumSteps = static_cast<int>(accumSteps);
    s.gradAccumFormat = parseFormat(dataOf(gradAccumFormat_).toStdString()).value_or(Format::fp32);
    integer(epochs_, "epochs", epochs);
    integer(maxSteps_, "max_steps", maxSteps);
    integer(seed_, "seed", seed);
    long long threads = s.threads;
    integer(threads_, "threads", threads);
    s.threads = static_cast<int>(threads);
    s.batch = static_cast<int>(batch);
    s.epochs = static_cast<int>(epochs);
    s.maxSteps = maxSteps;
    s.seed = static_cast<std::uint64_t>(seed);
    // Only that the file is there: what it holds is checked against the model when the
    // run starts (a refusal names the tensor, as plab train's does).
    s.initWeights = initWeights_->text().trimmed().toStdString();
    if (problem.isEmpty() && !s.initWeights.empty() && !QFileInfo(initWeights_->text().trimmed()).isFile())
        problem = tr("Initial weights: there is no file “%1”.").arg(initWeights_->text().trimmed());
    if (problem.isEmpty()) {   // each value against its row, named by the panel's label
        for (const SettingKey& k : settingKeys())
            if (const std::string outside = settingValueProblem(k, s); !outside.empty()) {
                problem = tr("%1 %2.").arg(QString::fromUtf8(k.title), QString::fromStdString(outside));
                break;
            }
    }
    if (problem.isEmpty())
        if (const std::string invalid = validateSettings(s); !invalid.empty()) problem = sentence(invalid);
    if (problem.isEmpty() && s.backend == "cuda" && !cudaAvailable_)
        problem = tr("The CUDA backend is not available here; choose the CPU.");

    current_ = s;
    const bool wasValid = problem_.isEmpty();
    problem_ = problem;
    notices_.clear();
    if (!droppedPaths_.isEmpty()) notices_ << droppedPaths_;
    if (const std::string own = modelDefaultsHeld(s); !own.empty())
        notices_ << tr("Of %1's own defaults these settings hold: %2.")
                        .arg(QString::fromStdString(s.model.kind), QString::fromStdString(own));
    for (const auto& n : settingsNotices(s)) notices_ << QString::fromStdString(n);

    customMark_->setVisible(isCustomRecipe());
    notices_label_->setText(notices_.isEmpty() ? QString() : QStringLiteral("ⓘ ") + notices_.join(QStringLiteral("\n\nⓘ ")));
    notices_label_->setVisible(!notices_.isEmpty());
    const QString shown = problem_.isEmpty() ? changeError_ : problem_;
    problemLabel_->setText(shown);
    problemLabel_->setVisible(!shown.isEmpty());
    start_->setEnabled(problem_.isEmpty());
    if (wasValid != problem_.isEmpty()) emit validityChanged(problem_.isEmpty());
    emit settingsEdited();
}

void SettingsPanel::commitLiveEdit()
{
    if (!live_ || !isValid()) return;
    SettingsChange change;
    if (!(current_.recipe == runSettings_.recipe)) change.recipe = current_.recipe;
    if (current_.batch != runSettings_.batch) change.batch = current_.batch;
    if (current_.optimizer.lr != runSettings_.optimizer.lr) change.lr = current_.optimizer.lr;
    if (change.empty()) return;
    emit liveChangeRequested(change);
}

void SettingsPanel::showChangeResult(const QString& error)
{
    changeError_ = error;
    if (error.isEmpty()) {
        runSettings_.recipe = current_.recipe;
        runSettings_.batch = current_.batch;
        runSettings_.optimizer.lr = current_.optimizer.lr;
    }
    const QString shown = problem_.isEmpty() ? changeError_ : problem_;
    problemLabel_->setText(shown);
    problemLabel_->setVisible(!shown.isEmpty());
}

void SettingsPanel::setLive(bool live, const TrainSettings& runSettings)
{
    live_ = live;
    changeError_.clear();
    if (live) runSettings_ = runSettings;
    refreshLocks();
    readControls();
}

void SettingsPanel::refreshLocks()
{
    for (QWidget* w : std::as_const(lockedDuringRun_)) {
        if (!w->property("idleToolTip").isValid()) w->setProperty("idleToolTip", w->toolTip());
        w->setEnabled(!live_);
        w->setToolTip(live_ ? tr("Fixed for the run that is training") : w->property("idleToolTip").toString());
    }
    liveHint_->setVisible(live_);
}

}  // namespace plab::ui
