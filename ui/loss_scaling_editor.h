// The loss-scaling controls of the settings panel: off / static S / dynamic with its
// knobs (initial scale, growth, backoff, interval, min, max) and the PyTorch, TensorFlow
// and Apex defaults. Numbers are typed as text so that any value can be entered and an
// impossible one explained, never silently clamped.
#pragma once

#include "amp/recipe.h"

#include <QWidget>

#include <optional>

QT_BEGIN_NAMESPACE
class QComboBox;
class QLabel;
class QLineEdit;
QT_END_NAMESPACE

namespace plab::ui {

class LossScalingEditor : public QWidget {
    Q_OBJECT
public:
    explicit LossScalingEditor(QWidget* parent = nullptr);

    void setLossScaling(const LossScaling& scaling);
    // The scaling the controls describe, or nullopt with `problem` set to one sentence.
    std::optional<LossScaling> lossScaling(QString* problem) const;

signals:
    void edited();      // any change, for live validation
    void committed();   // a finished edit (a choice made, Enter or focus out on a number)

private:
    void applyDefaults(int index);
    void updateVisibility();

    QComboBox* mode_;
    QComboBox* defaults_;
    QLineEdit* scale_;
    QLineEdit* growth_;
    QLineEdit* backoff_;
    QLineEdit* interval_;
    QLineEdit* minScale_;
    QLineEdit* maxScale_;
    QList<QWidget*> dynamicOnly_;
    QLabel* scaleLabel_;
    bool filling_ = false;
};

// Parses a number typed by a person ("1e-3", "65536", "0,5" in a comma locale).
std::optional<double> parseNumberText(const QString& text);
// The shortest text that reads back as `value`.
QString numberText(double value);

}  // namespace plab::ui
