// Loss-scaling controls.
#include "loss_scaling_editor.h"

#include "train/settings.h"

#include <QComboBox>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>

#include <cmath>

namespace plab::ui {

std::optional<double> parseNumberText(const QString& text)
{
    const QString t = text.trimmed();
    bool ok = false;
    double v = QLocale::c().toDouble(t, &ok);
    if (!ok) v = QLocale().toDouble(t, &ok);
    return ok ? std::optional<double>(v) : std::nullopt;
}

QString numberText(double value) { return QString::number(value, 'g', 12); }

namespace {

// Defaults offered in dynamic mode; index 0 keeps the knobs as they are.
const char* const kDefaultsKeys[] = {nullptr, "pytorch", "tensorflow", "apex"};

}  // namespace

LossScalingEditor::LossScalingEditor(QWidget* parent) : QWidget(parent)
{
    mode_ = new QComboBox(this);
    mode_->setObjectName(QStringLiteral("lossScaleMode"));
    mode_->addItem(tr("Off"));
    mode_->addItem(tr("Static"));
    mode_->addItem(tr("Dynamic"));
    defaults_ = new QComboBox(this);
    defaults_->setObjectName(QStringLiteral("lossScaleDefaults"));
    defaults_->addItems({tr("Custom"), tr("PyTorch GradScaler"), tr("TensorFlow"), tr("Apex")});
    defaults_->setToolTip(tr("Fill the knobs with a framework's defaults"));

    auto makeEdit = [this](const char* name, const QString& tip) {
        auto* e = new QLineEdit(this);
        e->setObjectName(QString::fromLatin1(name));
        e->setToolTip(tip);
        connect(e, &QLineEdit::textEdited, this, [this] {
            if (!filling_) defaults_->setCurrentIndex(0);
        });
        connect(e, &QLineEdit::textChanged, this, &LossScalingEditor::edited);
        connect(e, &QLineEdit::editingFinished, this, [this, e] {
            if (e->isModified()) {
                e->setModified(false);
                emit committed();
            }
        });
        return e;
    };
    scale_ = makeEdit("initScaleEdit", tr("The static loss scale S, or where dynamic scaling starts"));
    growth_ = makeEdit("growthFactorEdit", tr("Scale multiplied by this after the growth interval of clean steps (> 1)"));
    backoff_ = makeEdit("backoffFactorEdit", tr("Scale multiplied by this on a step with inf/NaN gradients (0 < b < 1)"));
    interval_ = makeEdit("growthIntervalEdit", tr("Consecutive clean steps before the scale grows"));
    minScale_ = makeEdit("minScaleEdit", tr("Floor of the scale; empty for none (TensorFlow: 1)"));
    maxScale_ = makeEdit("maxScaleEdit", tr("Cap of the scale; empty for none (Apex: 2^24)"));
    minScale_->setPlaceholderText(tr("none"));
    maxScale_->setPlaceholderText(tr("none"));

    auto* form = new QFormLayout(this);
    form->setContentsMargins(0, 0, 0, 0);
    form->addRow(tr("Loss scaling"), mode_);
    auto* defaultsLabel = new QLabel(tr("Defaults"), this);
    form->addRow(defaultsLabel, defaults_);
    scaleLabel_ = new QLabel(tr("Initial scale"), this);
    form->addRow(scaleLabel_, scale_);
    QList<QPair<QString, QLineEdit*>> knobs = {{tr("Growth factor"), growth_},  {tr("Backoff factor"), backoff_},
                                               {tr("Growth interval"), interval_}, {tr("Min scale"), minScale_},
                                               {tr("Max scale"), maxScale_}};
    dynamicOnly_ = {defaultsLabel, defaults_};
    for (const auto& [text, edit] : knobs) {
        auto* label = new QLabel(text, this);
        form->addRow(label, edit);
        dynamicOnly_ << label << edit;
    }

    connect(mode_, &QComboBox::currentIndexChanged, this, [this] {
        updateVisibility();
        if (filling_) return;
        emit edited();
        emit committed();
    });
    connect(defaults_, &QComboBox::currentIndexChanged, this, [this](int index) {
        if (filling_ || index <= 0) return;
        applyDefaults(index);
        emit edited();
        emit committed();
    });
    setLossScaling(LossScaling::off());
}

void LossScalingEditor::applyDefaults(int index)
{
    const auto preset = LossScaling::preset(kDefaultsKeys[index]);
    if (!preset) return;
    filling_ = true;
    scale_->setText(numberText(preset->initScale));
    growth_->setText(numberText(preset->growthFactor));
    backoff_->setText(numberText(preset->backoffFactor));
    interval_->setText(QString::number(preset->growthInterval));
    minScale_->setText(preset->minScale ? numberText(*preset->minScale) : QString());
    maxScale_->setText(preset->maxScale ? numberText(*preset->maxScale) : QString());
    filling_ = false;
}

void LossScalingEditor::updateVisibility()
{
    const bool dynamic = mode_->currentIndex() == 2;
    for (QWidget* w : std::as_const(dynamicOnly_)) w->setVisible(dynamic);
    scale_->setVisible(mode_->currentIndex() != 0);
    scaleLabel_->setVisible(mode_->currentIndex() != 0);
    scaleLabel_->setText(dynamic ? tr("Initial scale") : tr("Scale S"));
}

void LossScalingEditor::setLossScaling(const LossScaling& l)
{
    filling_ = true;
    mode_->setCurrentIndex(static_cast<int>(l.mode));
    scale_->setText(numberText(l.initScale));
    growth_->setText(numberText(l.growthFactor));
    backoff_->setText(numberText(l.backoffFactor));
    interval_->setText(QString::number(l.growthInterval));
    minScale_->setText(l.minScale ? numberText(*l.minScale) : QString());
    maxScale_->setText(l.maxScale ? numberText(*l.maxScale) : QString());
    int match = 0;
    for (int i = 1; i < 4; ++i)
        if (l.mode == LossScaleMode::dynamic && LossScaling::preset(kDefaultsKeys[i]) == l) match = i;
    defaults_->setCurrentIndex(match);
    filling_ = false;
    updateVisibility();
}

std::optional<LossScaling> LossScalingEditor::lossScaling(QString* problem) const
{
    auto fail = [&](const QString& text) -> std::optional<LossScaling> {
        if (problem) *problem = text;
        return std::nullopt;
    };
    LossScaling l;
    l.mode = static_cast<LossScaleMode>(mode_->currentIndex());
    // Fields the mode does not use are kept as they read (a config's dynamic knobs survive
    // scaling being off) but never refuse the settings: they are hidden.
    {
        auto keep = [](QLineEdit* edit, auto& out) {
            if (const auto v = parseNumberText(edit->text())) out = *v;
        };
        keep(scale_, l.initScale);
        keep(growth_, l.growthFactor);
        keep(backoff_, l.backoffFactor);
        bool ok = false;
        if (const qlonglong v = interval_->text().trimmed().toLongLong(&ok); ok && v >= 1 && v <= LossScaling::kMaxGrowthInterval)
            l.growthInterval = static_cast<int>(v);
        keep(minScale_, l.minScale);
        keep(maxScale_, l.maxScale);
    }
    if (l.mode == LossScaleMode::off) return l;
    auto number = [&](QLineEdit* edit, const QString& what, double& out) {
        const auto v = parseNumberText(edit->text());
        if (!v) return fail(tr("%1: “%2” is not a number.").arg(what, edit->text())), false;
        out = *v;
        return true;
    };
    if (!number(scale_, l.mode == LossScaleMode::fixed ? tr("Scale S") : tr("Initial scale"), l.initScale))
        return std::nullopt;
    if (l.mode == LossScaleMode::dynamic) {
        if (!number(growth_, tr("Growth factor"), l.growthFactor)) return std::nullopt;
        if (!number(backoff_, tr("Backoff factor"), l.backoffFactor)) return std::nullopt;
        bool ok = false;
        const qlonglong interval = interval_->text().trimmed().toLongLong(&ok);
        if (!ok) return fail(tr("Growth interval: “%1” is not a whole number of steps.").arg(interval_->text()));
        // Beyond int: said here, by the settings row's range, before the engine's own check.
        const SettingKey& key = *findSettingKey("growth_interval");
        if (const std::string outside = settingWholeProblem(key, interval); !outside.empty())
            return fail(tr("%1 %2.").arg(QString::fromUtf8(key.title), QString::fromStdString(outside)));
        l.growthInterval = static_cast<int>(interval);
        for (auto [edit, target, what] : {std::tuple{minScale_, &l.minScale, tr("Min scale")},
                                          std::tuple{maxScale_, &l.maxScale, tr("Max scale")}}) {
            if (edit->text().trimmed().isEmpty()) continue;
            double v = 0;
            if (!number(edit, what, v)) return std::nullopt;
            *target = v;
        }
    }
    if (const std::string p = l.validate(); !p.empty()) {
        QString sentence = QString::fromStdString(p);
        sentence[0] = sentence[0].toUpper();
        return fail(sentence + QLatin1Char('.'));
    }
    return l;
}

}  // namespace plab::ui
