// The status bar's view of the watched run: a progress bar over the planned steps,
// elapsed and remaining time, and images per second.
#pragma once

#include "run_data.h"

#include <QWidget>

QT_BEGIN_NAMESPACE
class QLabel;
class QProgressBar;
QT_END_NAMESPACE

namespace plab::ui {

class RunProgressWidget : public QWidget {
    Q_OBJECT
public:
    explicit RunProgressWidget(QWidget* parent = nullptr);
    void showRun(const RunData* run);   // null: cleared

    QString timeText() const;
    QString throughputText() const;
    int progressPercent() const;
    QString progressText() const;   // the bar's words: "step 40 / 300", "step 40 · running"


private:
    QProgressBar* bar_;
    QLabel* time_;
    QLabel* throughput_;
};

}  // namespace plab::ui
