// The interactive charts' data and scripts (see interactive_charts.h).
#include "interactive_charts.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <cmath>
#include <stdexcept>

namespace plab::report {

namespace {

QJsonValue number(double v) { return std::isfinite(v) ? QJsonValue(v) : QJsonValue(QJsonValue::Null); }

QString scaleName(AxisScale s)
{
    switch (s) {
    case AxisScale::log2: return QStringLiteral("log2");
    case AxisScale::log10: return QStringLiteral("log10");
    case AxisScale::linear: break;
    }
    return QStringLiteral("linear");
}

// A colour as CSS reads it, with its alpha: "rgba(214,39,40,0.176)"; opaque ones "#d62728"
// (the script appends an alpha in hex to those for a histogram's fill).
QString cssColor(const QColor& c)
{
    if (c.alpha() == 255) return c.name(QColor::HexRgb);
    return QStringLiteral("rgba(%1,%2,%3,%4)").arg(c.red()).arg(c.green()).arg(c.blue()).arg(c.alphaF(), 0, 'f', 3);
}

QJsonObject seriesJson(const ChartSeries& s)
{
    QJsonArray x, y;
    for (const QPointF& p : s.points) {
        x.append(number(p.x()));
        y.append(number(p.y()));
    }
    QJsonObject o{{"name", s.name}, {"color", cssColor(s.color)}, {"x", x}, {"y", y}, {"steps", s.histogramSteps}};
    if (!s.markers.isEmpty()) {
        QJsonArray mx, my;
        for (const QPointF& p : s.markers) {
            mx.append(number(p.x()));
            my.append(number(p.y()));
        }
        o.insert("markers", QJsonObject{{"name", s.markerName}, {"x", mx}, {"y", my}});
    }
    return o;
}

QString resourceText(const QString& path)
{
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) throw std::runtime_error("the report's script " + path.toStdString() + " is missing from the build");
    return QString::fromUtf8(f.readAll());
}

// A script in a CDATA section: XML parsers skip its '<' and '&', browsers read the CDATA
// markers as comments.
QString scriptElement(const QString& code)
{
    if (code.contains(QStringLiteral("]]>"))) throw std::runtime_error("a report script holds \"]]>\" and cannot be embedded");
    return QStringLiteral("<script>//<![CDATA[\n%1\n//]]></script>\n").arg(code);
}

}  // namespace

bool drawnInteractively(const ChartSpec& spec) { return spec.kind == ChartSpec::Kind::lines && !spec.series.empty(); }

QString chartDataJson(const QString& id, const ChartSpec& spec)
{
    QJsonArray series, bands;
    for (const auto& s : spec.series) series.append(seriesJson(s));
    for (const auto& b : spec.bands)
        bands.append(QJsonObject{{"from", number(b.from)}, {"to", number(b.to)}, {"color", cssColor(b.color)}, {"label", b.label}});
    QJsonObject o{{"id", id},
                  {"title", spec.title},
                  {"xLabel", spec.xLabel},
                  {"yLabel", spec.yLabel},
                  {"xScale", scaleName(spec.xScale)},
                  {"yScale", scaleName(spec.yScale)},
                  {"series", series},
                  {"bands", bands}};
    if (spec.xMin) o.insert("xMin", *spec.xMin);
    if (spec.xMax) o.insert("xMax", *spec.xMax);
    if (spec.yMin) o.insert("yMin", *spec.yMin);
    if (spec.yMax) o.insert("yMax", *spec.yMax);
    QString json = QString::fromUtf8(QJsonDocument(o).toJson(QJsonDocument::Compact));
    // Only inside JSON strings can these be; escaped, they still read as themselves.
    json.replace(QLatin1Char('&'), QStringLiteral("\\u0026"));
    json.replace(QLatin1Char('<'), QStringLiteral("\\u003c"));
    json.replace(QLatin1Char('>'), QStringLiteral("\\u003e"));
    return json;
}

QString interactiveStyle()
{
    return QStringLiteral("<style>%1\n"
                          "div.chart .interactive { max-width: 960px; }\n"
                          "div.chart.is-interactive .u-legend { font-size: 0.85em; text-align: left; margin: 0; }\n"
                          // The page's table style is not the legend's.
                          "div.chart .u-legend th, div.chart .u-legend td { border: none; background: none; padding: 1px 4px; }\n"
                          "p.chart-help { color: #666; font-size: 0.85em; }\n"
                          "div.chart:not(.is-interactive) p.chart-help { display: none; }\n"
                          "</style>\n")
        .arg(resourceText(QStringLiteral(":/report/uPlot.min.css")));
}

QString interactiveScripts()
{
    QString licence = resourceText(QStringLiteral(":/report/uPlot-LICENSE"));
    licence.replace(QStringLiteral("*/"), QStringLiteral("* /"));
    return scriptElement(QStringLiteral("/* uPlot 1.6.32, https://github.com/leeoniya/uPlot\n%1\n*/\n%2")
                             .arg(licence, resourceText(QStringLiteral(":/report/uPlot.iife.min.js")))) +
           scriptElement(resourceText(QStringLiteral(":/report/interactive_report.js")));
}

}  // namespace plab::report
