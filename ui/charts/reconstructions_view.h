// Chart group "reconstructions": an autoencoder's reconstructions of the first test images
// (the record's, from its last evaluation), the originals on the top row and a row per shown
// run under them, each row named with its run's test MSE and PSNR. The group shows itself
// only while a shown run has reconstructions; classifiers have none, so it is not one of
// the groups a lesson names (lessonChartNames).
#pragma once

#include "charts/chart_group.h"

QT_BEGIN_NAMESPACE
class QLabel;
QT_END_NAMESPACE

namespace plab::ui {

class ReconstructionsView : public ChartGroup {
    Q_OBJECT
public:
    explicit ReconstructionsView(QWidget* parent = nullptr);
    void redraw(const RunPtr& current, const QList<RunPtr>& compare) override;
    QList<QChart*> charts() const override { return {}; }

    // The rows drawn: "original", then each run's "<name>: test MSE ..., PSNR ... dB (step N)".
    QStringList rowTitles() const;

protected:
    void paintEvent(QPaintEvent* event) override;

private:
    struct Row {
        QString title;
        QColor color;
        std::vector<std::vector<std::uint8_t>> images;
    };
    int pixelSize() const;   // of one image pixel: the images fill the width, 2 to 6 px
    std::vector<Row> rows_;
};

}  // namespace plab::ui
