// The HTML and PDF forms of a run report. See report_document.h.
#include "report_document.h"

#include "interactive_charts.h"
#include "record/record_writer.h"

#include <QAbstractTextDocumentLayout>
#include <QBuffer>
#include <QDateTime>
#include <QFile>
#include <QPageLayout>
#include <QPainter>
#include <QPdfWriter>
#include <QRegularExpression>
#include <QTextDocument>
#include <QUrl>

#include <algorithm>
#include <functional>
#include <stdexcept>

namespace plab::report {

namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }
QString esc(const std::string& s) { return qs(s).toHtmlEscaped(); }
QString esc(const QString& s) { return s.toHtmlEscaped(); }

// Attributes that both browsers (through the CSS) and QTextDocument (which reads only a
// part of CSS) understand.
const char* kTableAttrs = R"( border="1" cellspacing="0" cellpadding="3" width="100%")";
const char* kDiffAttrs = R"( class="diff" bgcolor="#fff0b3")";

const char* kCss = R"(
body { font-family: "DejaVu Sans", Helvetica, Arial, sans-serif; color: #1d1d1f; margin: 2em auto; max-width: 1100px; line-height: 1.4; }
h1 { font-size: 1.7em; margin-bottom: 0.2em; }
h2 { font-size: 1.3em; border-bottom: 2px solid #2d4f8a; padding-bottom: 0.2em; margin-top: 1.6em; }
p.meta { color: #555; margin-top: 0; }
table { border-collapse: collapse; margin: 0.6em 0; font-size: 0.9em; }
th, td { border: 1px solid #c8c8c8; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #eef2f8; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.diff td, td.diff { background: #fff0b3; font-weight: bold; }
ul.summary li { margin-bottom: 0.35em; }
div.chart { margin: 1.2em 0; page-break-inside: avoid; }
div.chart svg { width: 100%; max-width: 760px; height: auto; border: 1px solid #ddd; }
p.caption { color: #444; font-size: 0.9em; margin-top: 0.2em; }
)";

QString percentOrDash(std::optional<double> f) { return f ? esc(formatPercent(*f)) : QStringLiteral("-"); }

QString summarySection(const ReportContent& c)
{
    QString h = QStringLiteral("<h2>Summary</h2>\n<ul class=\"summary\">\n");
    for (const auto& s : c.summary) h += QStringLiteral("<li>%1</li>\n").arg(esc(s.text));
    if (c.summary.empty()) h += QStringLiteral("<li>The records hold too little data for a summary.</li>\n");
    return h + QStringLiteral("</ul>\n");
}

// The peaks of the sum, the results' column and the memory table's total: one style (and
// the memory chart's labels, report_charts.cpp, the same).
int peakTotalDecimals(const RunComparison& c)
{
    std::vector<std::int64_t> totals;
    for (const auto& r : c.runs) totals.push_back(r.peakTotal);
    return mebibyteDecimals(totals);
}

// The results' accuracy columns: a classifier's accuracy, an autoencoder's test MSE (as the
// text table's, finalResultText).
QString finalResult(const RunDigest& r) { return esc(finalResultText(r.summary().testAccuracy, r.summary().testMse)); }
QString bestResult(const RunDigest& r) { return esc(finalResultText(r.summary().bestTestAccuracy, r.summary().bestTestMse)); }

QString resultsSection(const RunComparison& c)
{
    const int peakDecimals = peakTotalDecimals(c);
    const bool anyMse = std::any_of(c.runs.begin(), c.runs.end(), [](const RunDigest& r) { return r.summary().testMse.has_value(); });
    const QString result = anyMse ? QStringLiteral("result") : QStringLiteral("accuracy");
    QString h = QStringLiteral("<h2>Results</h2>\n<table%1>\n<tr><th>run</th><th>status</th><th>steps</th><th>skipped steps</th>"
                               "<th>final %2</th><th>best %2</th><th>images/s</th><th>peak memory</th></tr>\n")
                    .arg(QLatin1String(kTableAttrs), result);
    for (const auto& r : c.runs)
        h += QStringLiteral("<tr><td>%1</td><td>%2</td><td class=\"num\" align=\"right\">%3</td><td class=\"num\" align=\"right\">%4</td>"
                            "<td class=\"num\" align=\"right\">%5</td><td class=\"num\" align=\"right\">%6</td>"
                            "<td class=\"num\" align=\"right\">%7</td><td class=\"num\" align=\"right\">%8</td></tr>\n")
                 .arg(esc(r.label), esc(r.summary().status), esc(formatCount(r.summary().steps)), esc(formatCount(r.summary().skippedSteps)),
                      finalResult(r), bestResult(r),
                      QString::number(r.summary().imagesPerSecond, 'f', 0),
                      r.peakTotal > 0 ? esc(formatMebibytes(r.peakTotal, peakDecimals)) : QStringLiteral("not measured"));
    h += QStringLiteral("</table>\n");

    // Why steps skipped: the rounding site that overflowed first, per stretch of steps.
    bool anySkipped = false;
    for (const auto& r : c.runs) anySkipped = anySkipped || !skipCauseRows(r.record.steps, 1).empty();
    if (anySkipped) {
        h += QStringLiteral("<h3>Why steps skipped</h3>\n<table%1>\n<tr><th>run</th><th>skipped steps</th>"
                            "<th>the first rounding to make inf or NaN</th></tr>\n")
                 .arg(QLatin1String(kTableAttrs));
        for (const auto& r : c.runs)
            for (const auto& row : skipCauseRows(r.record.steps))
                h += QStringLiteral("<tr><td>%1</td><td>%2</td><td>%3</td></tr>\n")
                         .arg(esc(r.label), esc(row.steps), esc(row.cause));
        h += QStringLiteral("</table>\n<p>A step skips when its gradients hold inf or NaN; the site named is the "
                            "first, in the order the step ran, whose rounding made a finite value infinite (or, "
                            "where none did, the first to meet inf or NaN).</p>\n");
    }

    // Peak memory per category.
    std::vector<std::string> categories;
    for (const auto& r : c.runs)
        for (const auto& k : r.memoryCategories)
            if (std::find(categories.begin(), categories.end(), k) == categories.end()) categories.push_back(k);
    // A category's bytes in a run (nullopt: the run has no such category, or no memory).
    const auto categoryBytes = [](const RunDigest& r, const std::string& k) -> std::optional<std::int64_t> {
        const auto it = std::find(r.memoryCategories.begin(), r.memoryCategories.end(), k);
        const auto idx = static_cast<std::size_t>(it - r.memoryCategories.begin());
        if (r.peakTotal <= 0 || it == r.memoryCategories.end() || idx >= r.peakBytes.size()) return std::nullopt;
        return r.peakBytes[idx];
    };
    // Each column in one style (mebibyteDecimals of its values); the phases' peaks in a
    // table of their own, so that no header is squeezed until a word breaks.
    h += QStringLiteral("<h3>Peak memory per category</h3>\n<table%1>\n<tr><th>run</th>").arg(QLatin1String(kTableAttrs));
    for (const auto& k : categories) h += QStringLiteral("<th>%1</th>").arg(esc(qs(k).replace('_', ' ')));
    h += QStringLiteral("<th>total (peak of the sum)</th></tr>\n");
    std::vector<int> decimals;
    for (const auto& k : categories) {
        std::vector<std::int64_t> column;
        for (const auto& r : c.runs)
            if (const auto b = categoryBytes(r, k)) column.push_back(*b);
        decimals.push_back(mebibyteDecimals(column));
    }
    for (const auto& r : c.runs) {
        h += QStringLiteral("<tr><td>%1</td>").arg(esc(r.label));
        for (std::size_t k = 0; k < categories.size(); ++k) {
            const auto b = categoryBytes(r, categories[k]);
            h += QStringLiteral("<td class=\"num\" align=\"right\">%1</td>")
                     .arg(b ? esc(formatMebibytes(*b, decimals[k])) : QStringLiteral("-"));
        }
        h += QStringLiteral("<td class=\"num\" align=\"right\">%1</td></tr>\n")
                 .arg(r.peakTotal > 0 ? esc(formatMebibytes(r.peakTotal, peakDecimals)) : QStringLiteral("not measured"));
    }
    h += QStringLiteral("</table>\n");
    bool anyPhase = false;
    std::vector<std::int64_t> training, evaluation;
    for (const auto& r : c.runs) {
        anyPhase = anyPhase || r.trainingPeakTotal > 0 || r.evaluationPeakTotal > 0;
        training.push_back(r.trainingPeakTotal);
        evaluation.push_back(r.evaluationPeakTotal);
    }
    if (anyPhase) {
        const int trainingDecimals = mebibyteDecimals(training), evaluationDecimals = mebibyteDecimals(evaluation);
        h += QStringLiteral("<h3>Peak of a training step and of an evaluation</h3>\n<table%1>\n<tr><th>run</th>"
                            "<th>training step peak</th><th>evaluation peak</th></tr>\n")
                 .arg(QLatin1String(kTableAttrs));
        for (const auto& r : c.runs) {
            const auto orDash = [&](std::int64_t bytes, int d) { return bytes > 0 ? esc(formatMebibytes(bytes, d)) : QStringLiteral("-"); };
            h += QStringLiteral("<tr><td>%1</td><td class=\"num\" align=\"right\">%2</td><td class=\"num\" align=\"right\">%3</td></tr>\n")
                     .arg(esc(r.label), orDash(r.trainingPeakTotal, trainingDecimals),
                          orDash(r.evaluationPeakTotal, evaluationDecimals));
        }
        h += QStringLiteral("</table>\n<p>A training step's peak and an evaluation's are measured apart: evaluation "
                            "runs its own batches, whose buffers are not training memory.</p>\n");
    }

    // Per-layer fractions over the run.
    h += QStringLiteral("<h3>Per layer, over the whole run</h3>\n<table%1>\n<tr><th>run</th><th>layer</th>"
                        "<th>weight-grad underflow</th><th>weight-grad overflow</th><th>activation-grad underflow</th>"
                        "<th>lost updates</th><th>weights made inf/NaN</th></tr>\n")
             .arg(QLatin1String(kTableAttrs));
    bool anyLayer = false;
    for (const auto& r : c.runs)
        for (const auto& l : r.summary().layers) {
            anyLayer = true;
            h += QStringLiteral("<tr><td>%1</td><td>%2</td><td class=\"num\" align=\"right\">%3</td><td class=\"num\" align=\"right\">%4</td>"
                                "<td class=\"num\" align=\"right\">%5</td><td class=\"num\" align=\"right\">%6</td>"
                                "<td class=\"num\" align=\"right\">%7</td></tr>\n")
                     .arg(esc(r.label), esc(l.layer), percentOrDash(l.underflow), percentOrDash(l.overflow),
                          percentOrDash(l.activationGradUnderflow), percentOrDash(l.lostUpdate),
                          esc(formatCount(l.weightsMadeNonFinite)));
        }
    if (!anyLayer) h += QStringLiteral("<tr><td colspan=\"7\">No run has a reduced-precision rounding site (fp32 throughout).</td></tr>\n");
    return h + QStringLiteral("</table>\n");
}

// A key x run table with the rows whose values differ highlighted.
QString sideBySideTable(const RunComparison& c, const std::vector<SettingRow>& rows)
{
    QString h = QStringLiteral("<table%1>\n<tr><th>setting</th>").arg(QLatin1String(kTableAttrs));
    for (const auto& r : c.runs) h += QStringLiteral("<th>%1</th>").arg(esc(r.label));
    h += QStringLiteral("</tr>\n");
    for (const auto& row : rows) {
        if (!row.differs && c.runs.size() > 1) {   // the same for every run: said once
            h += QStringLiteral("<tr><td>%1</td><td colspan=\"%2\">%3</td></tr>\n")
                     .arg(esc(row.key))
                     .arg(c.runs.size())
                     .arg(esc(row.values.empty() ? std::string("-") : row.values.front()));
            continue;
        }
        const QString attrs = row.differs ? QLatin1String(kDiffAttrs) : QString();
        h += QStringLiteral("<tr%1><td%1>%2%3</td>").arg(attrs, esc(row.key), row.differs ? QStringLiteral(" \u2260") : QString());
        for (const auto& v : row.values) h += QStringLiteral("<td%1>%2</td>").arg(attrs, esc(v));
        h += QStringLiteral("</tr>\n");
    }
    return h + QStringLiteral("</table>\n");
}

QString configurationSection(const RunComparison& c)
{
    QString h = QStringLiteral("<h2 style=\"page-break-before: always\">Configuration</h2>\n"
                               "<p>Every setting of each run, side by side; settings that differ between the runs are "
                               "highlighted and marked \u2260, settings that are the same are shown once.</p>\n");
    std::vector<SettingRow> recipeRows;
    SettingRow phrase{"recipe (as run)", {}, false};
    // A probe's record: what the PyTorch training ran as, and the format its telemetry judged
    // the tensors against (what that format would do to them), apart.
    for (const auto& r : c.runs)
        phrase.values.push_back(r.record.judgedFormat.empty()
                                    ? r.recipePhrase
                                    : "PyTorch, " + (r.record.sourceAsRun.empty() ? std::string("as recorded") : r.record.sourceAsRun) +
                                          "; the telemetry says what " + r.record.judgedFormat + " rounding would do to its tensors");
    phrase.differs = std::adjacent_find(phrase.values.begin(), phrase.values.end(), std::not_equal_to<>()) != phrase.values.end();
    recipeRows.push_back(phrase);
    for (const auto& row : c.settings) recipeRows.push_back(row);
    return h + sideBySideTable(c, recipeRows);
}

QString machineSection(const RunComparison& c)
{
    auto row = [&](const std::string& key, auto valueOf) {
        SettingRow r{key, {}, false};
        for (const auto& run : c.runs) r.values.push_back(valueOf(run));
        r.differs = std::adjacent_find(r.values.begin(), r.values.end(), std::not_equal_to<>()) != r.values.end();
        return r;
    };
    auto text = [](const std::optional<std::string>& v) { return v && !v->empty() ? *v : std::string("-"); };
    auto count = [](const std::optional<std::int64_t>& v) { return v ? std::to_string(*v) : std::string("-"); };
    std::vector<SettingRow> rows = {
        row("cpu", [&](const RunDigest& r) { return text(r.record.machine.cpu); }),
        row("logical cores", [&](const RunDigest& r) { return count(r.record.machine.logicalCores); }),
        row("threads", [&](const RunDigest& r) { return count(r.record.machine.threads); }),
        row("operating system", [&](const RunDigest& r) { return text(r.record.machine.os); }),
        row("backend", [&](const RunDigest& r) { return text(r.record.backend); }),
        row("arithmetic", [&](const RunDigest& r) { return text(r.record.arithmetic); }),
        row("backend libraries", [&](const RunDigest& r) {
            std::string out;
            for (const auto& v : r.record.versions.backend) out += (out.empty() ? "" : "; ") + v;
            return out.empty() ? std::string("-") : out;
        }),
        row("Precision Lab", [&](const RunDigest& r) { return text(r.record.versions.precisionLab); }),
        row("compiler", [&](const RunDigest& r) { return text(r.record.versions.compiler); }),
        row("nlohmann_json", [&](const RunDigest& r) { return text(r.record.versions.nlohmannJson); }),
        row("data", [&](const RunDigest& r) { return text(r.record.data.description); }),
        row("started (UTC)", [&](const RunDigest& r) { return r.record.createdAt.empty() ? std::string("-") : r.record.createdAt; }),
        row("record", [&](const RunDigest& r) { return r.origin; }),
    };
    return QStringLiteral("<h2>Machine, backend and versions</h2>\n") + sideBySideTable(c, rows);
}

// QSvgGenerator's document without its XML declaration, sized by the page's CSS.
QString inlineSvg(const ChartSpec& spec)
{
    QString svg = QString::fromUtf8(chartToSvg(spec));
    svg.remove(QRegularExpression(QStringLiteral("^\\s*<\\?xml[^>]*\\?>\\s*")));
    svg.replace(QRegularExpression(QStringLiteral("<svg([^>]*?)\\swidth=\"[^\"]*\"\\s+height=\"[^\"]*\"")),
                QStringLiteral("<svg\\1 role=\"img\""));
    return svg;
}

// An autoencoder's reconstructions: the first test images on the top row, the run's
// reconstructions of them under it, 28 x 28 pixels each, 4 pixels apart, on white.
QImage reconstructionStrip(const RunRecord& record)
{
    constexpr int kSide = 28, kGap = 4;
    const auto& images = record.reconstructions;
    const int n = static_cast<int>(images.size());
    QImage strip(n * kSide + (n - 1) * kGap, 2 * kSide + kGap, QImage::Format_Grayscale8);
    strip.fill(255);
    for (int k = 0; k < n; ++k)
        for (int row = 0; row < 2; ++row) {
            const std::vector<std::uint8_t>& pixels = row == 0 ? images[std::size_t(k)].original : images[std::size_t(k)].reconstruction;
            for (int y = 0; y < kSide; ++y)
                std::copy_n(pixels.data() + y * kSide, kSide, strip.scanLine(row * (kSide + kGap) + y) + k * (kSide + kGap));
        }
    return strip;
}

// The resource name of run i's reconstructions in the PDF's document.
QString reconstructionResource(std::size_t i) { return QStringLiteral("reconstructions:%1").arg(i); }

QString reconstructionsSection(const RunComparison& c, ChartEmbedding embedding)
{
    QString h;
    for (std::size_t i = 0; i < c.runs.size(); ++i) {
        const RunRecord& record = c.runs[i].record;
        if (record.reconstructions.empty()) continue;
        if (h.isEmpty())
            h += QStringLiteral("<h2>Reconstructions</h2>\n<p>Each autoencoder's reconstructions of the first test images "
                                "(top: the images; bottom: the run's outputs, clamped to [0, 1]) at its last evaluation.</p>\n");
        const QImage strip = reconstructionStrip(record);
        QString source = reconstructionResource(i);
        if (embedding == ChartEmbedding::inlineSvg) {
            QByteArray png;
            QBuffer buffer(&png);
            buffer.open(QIODevice::WriteOnly);
            strip.save(&buffer, "PNG");
            source = QStringLiteral("data:image/png;base64,") + QString::fromLatin1(png.toBase64());
        }
        const double mse = record.evals.empty() ? 0.0 : record.evals.back().testLoss;
        h += QStringLiteral("<div class=\"chart\">\n<p><b>%1</b>: %2 (step %3)</p>\n"
                            "<p><img src=\"%4\" width=\"%5\" height=\"%6\" style=\"image-rendering: pixelated\" alt=\"%7\" /></p>\n</div>\n")
                 .arg(esc(c.runs[i].label), esc(testResultText(ModelTask::reconstruct, 0.0, mse)))
                 .arg(record.reconstructedAtStep)
                 .arg(source)
                 .arg(strip.width() * 5 / 2)   // 630 px: within an A4 page's body, as the charts
                 .arg(strip.height() * 5 / 2)
                 .arg(esc(QStringLiteral("%1's reconstructions").arg(qs(c.runs[i].label))));
    }
    return h;
}

QString chartsSection(const ReportContent& c, ChartEmbedding embedding)
{
    QString h;
    for (std::size_t i = 0; i < c.charts.size(); ++i) {
        const auto& chart = c.charts[i];
        // In print, two charts a page: every other one starts a page.
        const QString breakStyle = i % 2 == 0 ? QStringLiteral(" style=\"page-break-before: always\"") : QString();
        if (i == 0) h += QStringLiteral("<h2%1>Charts</h2>\n").arg(breakStyle);
        h += QStringLiteral("<div class=\"chart\" id=\"chart-%1\"%2>\n").arg(chart.id, i == 0 ? QString() : breakStyle);
        if (embedding == ChartEmbedding::inlineSvg && drawnInteractively(chart.spec)) {
            // The static chart, replaced by the interactive one where the page's script runs.
            h += QStringLiteral("<div class=\"interactive\"></div>\n<div class=\"static\">%1</div>\n")
                     .arg(inlineSvg(chart.spec));
            if (!chart.spec.note.isEmpty())
                h += QStringLiteral("<p class=\"chart-help\">%1</p>\n").arg(esc(chart.spec.note).replace('\n', QStringLiteral("<br />")));
            h += QStringLiteral("<p class=\"chart-help\">Hover for every run's value at a step; drag across the plot to "
                                "zoom, double-click to zoom out; click a legend entry to hide or show a run.</p>\n");
            h += QStringLiteral("<script type=\"application/json\" class=\"plab-chart-data\">%1</script>\n")
                     .arg(chartDataJson(chart.id, chart.spec));
        } else if (embedding == ChartEmbedding::inlineSvg) h += inlineSvg(chart.spec);
        else
            h += QStringLiteral("<p align=\"center\"><img src=\"chart:%1\" width=\"%2\" height=\"%3\" alt=\"%4\" /></p>")
                     .arg(chart.id)
                     .arg(kChartSize.width() * 0.86, 0, 'f', 0)
                     .arg(kChartSize.height() * 0.86, 0, 'f', 0)
                     .arg(esc(chart.spec.title));
        h += QStringLiteral("\n<p class=\"caption\"><i>%1</i></p>\n</div>\n").arg(esc(chart.caption));
    }
    return h;
}

}  // namespace

ReportContent prepareReport(RunComparison comparison, const ReportOptions& options)
{
    ReportContent c;
    c.summary = summarizeRuns(comparison);
    c.charts = buildReportCharts(comparison, options);
    c.options = options;
    c.comparison = std::move(comparison);
    return c;
}

QString reportHtml(const ReportContent& c, ChartEmbedding embedding)
{
    const auto& runs = c.comparison.runs;
    QStringList labels;
    for (const auto& r : runs) labels << qs(r.label);
    QString h = QStringLiteral("<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\">\n<head>\n"
                               "<meta charset=\"utf-8\" />\n<title>%1</title>\n<style>%2</style>\n</head>\n<body>\n")
                    // The browser's CSS; QTextDocument (PDF) gets its own default style sheet.
                    .arg(esc(c.options.title), embedding == ChartEmbedding::inlineSvg ? QLatin1String(kCss) : QLatin1String(""));
    h += QStringLiteral("<h1>%1</h1>\n<p class=\"meta\">%2 %3: %4. Written by Precision Lab on %5.</p>\n")
             .arg(esc(c.options.title))
             .arg(runs.size())
             .arg(runs.size() == 1 ? QStringLiteral("run") : QStringLiteral("runs"))
             .arg(esc(labels.join(QStringLiteral("; "))))
             .arg(QDateTime::currentDateTimeUtc().toString(QStringLiteral("yyyy-MM-dd HH:mm 'UTC'")));
    if (!c.options.notes.isEmpty()) {
        h += QStringLiteral("<h2>Notes</h2>\n<ul class=\"summary\">\n");
        for (const QString& note : c.options.notes) h += QStringLiteral("<li>%1</li>\n").arg(esc(note));
        h += QStringLiteral("</ul>\n");
    }
    h += summarySection(c);
    h += resultsSection(c.comparison);
    h += reconstructionsSection(c.comparison, embedding);
    h += configurationSection(c.comparison);
    h += machineSection(c.comparison);
    h += chartsSection(c, embedding);
    if (embedding == ChartEmbedding::inlineSvg) h += interactiveStyle() + interactiveScripts();
    h += QStringLiteral("</body>\n</html>\n");
    return h;
}

void writeHtmlReport(const ReportContent& content, const QString& file)
{
    // Whole or not at all: a temporary file, checked, flushed to disk and renamed over the target.
    const QByteArray html = reportHtml(content, ChartEmbedding::inlineSvg).toUtf8();
    writeFileAtomically(file.toStdString(), std::string_view(html.constData(), static_cast<std::size_t>(html.size())));
}

namespace {

const QPageLayout& pdfPageLayout()
{
    static const QPageLayout layout(QPageSize(QPageSize::A4), QPageLayout::Portrait, QMarginsF(15, 15, 15, 15),
                                    QPageLayout::Millimeter);
    return layout;
}

constexpr int kPdfResolution = 300;

// A page's body in the document's units (1/96 inch), the footer's room taken off.
QSizeF pdfPageBody()
{
    const double scale = kPdfResolution / 96.0;
    const QRectF body = pdfPageLayout().paintRectPixels(kPdfResolution);
    return QSizeF(body.width() / scale, body.height() / scale - 24.0);
}

}  // namespace

void layOutPdfDocument(const ReportContent& content, QTextDocument& doc)
{
    QFont font(QStringLiteral("DejaVu Sans"));
    font.setPointSizeF(8.5);
    font.setStyleStrategy(QFont::PreferNoShaping);   // no "fi" ligatures: the PDF's text copies as typed
    doc.setDefaultFont(font);
    doc.setDefaultStyleSheet(QStringLiteral("th { background-color: #eef2f8; } h2 { color: #2d4f8a; } "
                                            "p.caption { color: #444444; }"));
    for (const auto& chart : content.charts)
        doc.addResource(QTextDocument::ImageResource, QUrl(QStringLiteral("chart:") + chart.id),
                        chartToImage(chart.spec, kChartSize, 3.0));
    for (std::size_t i = 0; i < content.comparison.runs.size(); ++i) {
        const RunRecord& record = content.comparison.runs[i].record;
        if (record.reconstructions.empty()) continue;
        const QImage strip = reconstructionStrip(record);   // pixels kept square and sharp in print
        doc.addResource(QTextDocument::ImageResource, QUrl(reconstructionResource(i)),
                        strip.scaled(strip.size() * 3, Qt::IgnoreAspectRatio, Qt::FastTransformation));
    }
    doc.setHtml(reportHtml(content, ChartEmbedding::imageResources));
    doc.setPageSize(pdfPageBody());
}

int writePdfReport(const ReportContent& content, const QString& file)
{
    // Rendered in memory, then written whole or not at all (QPdfWriter reports no write error).
    QBuffer pdf;
    pdf.open(QIODevice::WriteOnly);
    QPdfWriter writer(&pdf);
    writer.setTitle(content.options.title);
    writer.setCreator(QStringLiteral("Precision Lab"));
    writer.setResolution(kPdfResolution);
    writer.setPageLayout(pdfPageLayout());

    // The document laid out on the printable area in its own units (1/96 inch), drawn page
    // by page, scaled to the writer's resolution, with a page number below.
    QTextDocument doc;
    layOutPdfDocument(content, doc);
    const double scale = writer.resolution() / 96.0;
    const QSizeF page = doc.pageSize();
    const int pages = doc.pageCount();
    QPainter painter(&writer);
    QFont footer = doc.defaultFont();
    footer.setPixelSize(10);   // document units (1/96 inch), like everything drawn here
    for (int i = 0; i < pages; ++i) {
        if (i > 0) writer.newPage();
        painter.save();
        painter.scale(scale, scale);
        painter.save();
        painter.translate(0, -i * page.height());
        QAbstractTextDocumentLayout::PaintContext context;
        context.clip = QRectF(0, i * page.height(), page.width(), page.height());
        painter.setClipRect(context.clip);
        doc.documentLayout()->draw(&painter, context);
        painter.restore();
        painter.setFont(footer);
        painter.setPen(QColor(0x66, 0x66, 0x66));
        painter.drawText(QRectF(0, page.height() + 6, page.width(), 18), Qt::AlignRight | Qt::AlignVCenter,
                         QStringLiteral("%1 \u2014 page %2 of %3").arg(content.options.title).arg(i + 1).arg(pages));
        painter.restore();
    }
    painter.end();   // the writer finishes the PDF
    const QByteArray bytes = pdf.data();
    writeFileAtomically(file.toStdString(), std::string_view(bytes.constData(), static_cast<std::size_t>(bytes.size())));
    return pages;
}

}  // namespace plab::report
