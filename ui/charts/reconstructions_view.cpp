// An autoencoder's reconstructions (see reconstructions_view.h).
#include "charts/reconstructions_view.h"

#include <QPainter>

#include <algorithm>

namespace plab::ui {

namespace {
constexpr int kSide = 28;       // MNIST's 28 x 28 pixels
constexpr int kGap = 6;         // between two images, in screen pixels
constexpr int kMargin = 6;
}

ReconstructionsView::ReconstructionsView(QWidget* parent) : ChartGroup(QStringLiteral("reconstructions"), parent)
{
    setToolTip(tr("The first test images (top) and each shown run's reconstruction of them at its last evaluation"));
    hide();   // until a shown run has reconstructions
}

void ReconstructionsView::redraw(const RunPtr& current, const QList<RunPtr>& compare)
{
    rows_.clear();
    const QList<RunPtr> runs = runsToDraw(current, compare);
    for (const RunPtr& run : runs) {
        const RunRecord& record = run->record();
        if (record.reconstructions.empty()) continue;
        if (rows_.empty()) {
            Row originals{tr("test images"), palette().color(QPalette::WindowText), {}};
            for (const ReconstructedImage& image : record.reconstructions) originals.images.push_back(image.original);
            rows_.push_back(std::move(originals));
        }
        const double mse = record.evals.empty() ? 0.0 : record.evals.back().testLoss;
        Row row{tr("%1: %2 (step %3)")
                    .arg(runLabel(run, runs),
                         QString::fromStdString(testResultText(ModelTask::reconstruct, 0.0, mse)))
                    .arg(record.reconstructedAtStep),
                run->color(), {}};
        for (const ReconstructedImage& image : record.reconstructions) row.images.push_back(image.reconstruction);
        rows_.push_back(std::move(row));
    }
    setVisible(!rows_.empty());
    const int rowHeight = fontMetrics().height() + 4 + kSide * pixelSize() + kGap;
    setMinimumHeight(std::max(200, 2 * kMargin + static_cast<int>(rows_.size()) * rowHeight));
    update();
}

QStringList ReconstructionsView::rowTitles() const
{
    QStringList titles;
    for (const Row& row : rows_) titles << row.title;
    return titles;
}

int ReconstructionsView::pixelSize() const
{
    constexpr int images = kReconstructedImages;
    const int fit = (width() - 2 * kMargin - (images - 1) * kGap) / (images * kSide);
    return std::clamp(fit, 2, presentationMode() ? 8 : 6);
}

void ReconstructionsView::paintEvent(QPaintEvent*)
{
    QPainter painter(this);
    const int px = pixelSize();
    int y = kMargin;
    for (const Row& row : rows_) {
        painter.setPen(row.color);
        painter.drawText(QRect(kMargin, y, width() - 2 * kMargin, fontMetrics().height()), Qt::AlignLeft | Qt::AlignVCenter,
                         row.title);
        y += fontMetrics().height() + 4;
        int x = kMargin;
        for (const auto& pixels : row.images) {
            QImage image(kSide, kSide, QImage::Format_Grayscale8);
            for (int r = 0; r < kSide; ++r)
                std::copy_n(pixels.data() + r * kSide, kSide, image.scanLine(r));
            painter.drawImage(QRect(x, y, kSide * px, kSide * px), image);
            x += kSide * px + kGap;
        }
        y += kSide * px + kGap;
    }
}

}  // namespace plab::ui
