// Run reports as documents: a self-contained HTML file (embedded CSS, charts as inline
// SVG) and a PDF (the same content laid out by QTextDocument on A4 pages, charts as
// high-resolution images, each section and each pair of charts starting a new page).
// Both hold: the summary sentences, results (accuracy, skipped steps, throughput, peak
// memory per category), the configuration side by side with differences highlighted,
// machine / backend / versions, and the charts. Needs a QGuiApplication (fonts).
#pragma once

#include "report/report_summary.h"
#include "report_charts.h"

#include <QString>

class QTextDocument;

#include <vector>

namespace plab::report {

struct ReportContent {
    RunComparison comparison;
    std::vector<SummarySentence> summary;
    std::vector<ReportChart> charts;
    ReportOptions options;
};

// Summary sentences and charts for the compared runs.
ReportContent prepareReport(RunComparison comparison, const ReportOptions& options = {});

enum class ChartEmbedding {
    inlineSvg,        // <svg> elements in the page (the HTML file)
    imageResources,   // <img src="chart:<id>"> resolved by the PDF's QTextDocument
};

// The report as XHTML (well-formed XML, so it parses as such).
QString reportHtml(const ReportContent& content, ChartEmbedding embedding);

// Write the files; throw std::runtime_error naming the file when it cannot be written.
void writeHtmlReport(const ReportContent& content, const QString& file);
// Returns the number of pages written.
int writePdfReport(const ReportContent& content, const QString& file);
// The document the PDF's pages are drawn from, laid out on an A4 page's printable area
// (tests read its lines: no word is broken across two).
void layOutPdfDocument(const ReportContent& content, QTextDocument& doc);

}  // namespace plab::report
