// Placeholders in lesson text (see lesson_text.h).
#include "lesson/lesson_text.h"

#include "lesson/lesson_metrics.h"

#include "error.h"

#include <cmath>
#include <stdexcept>

namespace plab {

namespace {

std::string trim(std::string_view s)
{
    std::size_t a = 0, b = s.size();
    while (a < b && s[a] == ' ') ++a;
    while (b > a && s[b - 1] == ' ') --b;
    return std::string(s.substr(a, b - a));
}

// "run.metric" or "metric" (a format fact: the part before a '.' is not a run id then).
MetricRef refOf(std::string_view text)
{
    const std::string t = trim(text);
    if (t.empty()) throw std::invalid_argument("an empty placeholder");
    const auto dot = t.find('.');
    if (dot == std::string::npos) return {{}, t};
    return {t.substr(0, dot), t.substr(dot + 1)};
}

}  // namespace

Placeholder parsePlaceholder(std::string_view inside)
{
    Placeholder p;
    std::string_view body = inside;
    if (const auto bar = inside.find('|'); bar != std::string_view::npos) {
        p.style = trim(inside.substr(bar + 1));
        body = inside.substr(0, bar);
        if (!isKnownValueStyle(p.style))
            throw std::invalid_argument("placeholder " + quotedExcerpt("{" + std::string(inside) + "}") + ": unknown style " + quotedExcerpt(p.style) +
                                        " (pct, pct0, pct2, pts, int, num, pow2, mib, x)");
    }
    for (const char op : {'-', '/'}) {
        const std::string sep = std::string(" ") + op + " ";
        if (const auto at = body.find(sep); at != std::string_view::npos) {
            p.op = op;
            p.left = refOf(body.substr(0, at));
            p.right = refOf(body.substr(at + sep.size()));
            return p;
        }
    }
    p.left = refOf(body);
    return p;
}

std::vector<Placeholder> placeholdersOf(std::string_view text)
{
    std::vector<Placeholder> out;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] == '}') throw std::invalid_argument("a \"}\" without its \"{\"");
        if (text[i] != '{') continue;
        const auto close = text.find('}', i + 1);
        const auto nested = text.find('{', i + 1);
        if (close == std::string_view::npos || (nested != std::string_view::npos && nested < close))
            throw std::invalid_argument("a \"{\" without its \"}\"");
        try {
            out.push_back(parsePlaceholder(text.substr(i + 1, close - i - 1)));
        } catch (const std::invalid_argument& e) {
            const std::string what = e.what();
            if (what.rfind("placeholder", 0) == 0) throw;
            throw std::invalid_argument("placeholder " + quotedExcerpt("{" + std::string(text.substr(i + 1, close - i - 1)) + "}") +
                                        ": " + what);
        }
        i = close;
    }
    return out;
}

std::optional<double> metricValue(const MetricRef& ref, const Lesson& lesson, const LessonRecords& records,
                                  std::string* why)
{
    const RunRecord* record = nullptr;
    if (!ref.run.empty()) {
        const int i = lesson.runIndex(ref.run);
        if (i < 0 || static_cast<std::size_t>(i) >= records.size() || !records[static_cast<std::size_t>(i)]) {
            if (why) *why = "the run \"" + ref.run + "\" has not finished";
            return std::nullopt;
        }
        record = records[static_cast<std::size_t>(i)];
    }
    return evaluateMetric(ref.metric, record, why);
}

std::optional<double> placeholderValue(const Placeholder& p, const Lesson& lesson, const LessonRecords& records)
{
    const auto a = metricValue(p.left, lesson, records);
    if (!p.right) return a;
    const auto b = metricValue(*p.right, lesson, records);
    if (!a || !b) return std::nullopt;
    return p.op == '-' ? *a - *b : *a / *b;
}

std::string placeholderText(const Placeholder& p, const Lesson& lesson, const LessonRecords& records)
{
    const auto v = placeholderValue(p, lesson, records);
    if (!v) return "?";
    const MetricInfo* info = findMetric(p.left.metric);
    MetricUnit unit = info ? info->unit : MetricUnit::plain;
    std::string style = p.style;
    // Appended to the empty style, not assigned: g++ 12 warns falsely on the assignment
    // (-Wrestrict, PR 105329).
    if (p.op == '/' && style.empty()) style.append("x");
    if (p.op == '-' && style.empty() && unit == MetricUnit::fraction) style.append("pts");
    return formatMetricValue(*v, style, unit);
}

std::string fillPlaceholders(std::string_view text, const Lesson& lesson, const LessonRecords& records)
{
    std::string out;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const auto close = text[i] == '{' ? text.find('}', i + 1) : std::string_view::npos;
        if (close == std::string_view::npos) {
            out += text[i];
            continue;
        }
        try {
            out += placeholderText(parsePlaceholder(text.substr(i + 1, close - i - 1)), lesson, records);
        } catch (const std::invalid_argument&) {
            out += "?";   // checked on loading; a hand-made Lesson may still hold one
        }
        i = close;
    }
    return out;
}

}  // namespace plab
