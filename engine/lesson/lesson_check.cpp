// Judging a lesson's expectations (see lesson_check.h).
#include "lesson/lesson_check.h"

#include "lesson/lesson_metrics.h"

#include <cmath>
#include <set>
#include <sstream>

namespace plab {

namespace {

std::string shown(const MetricRef& ref, std::optional<double> v)
{
    if (!v) return "?";
    const MetricInfo* info = findMetric(ref.metric);
    return formatMetricValue(*v, "", info ? info->unit : MetricUnit::plain);
}

std::string numberText(double v)
{
    std::ostringstream out;
    out << v;
    return out.str();
}

}  // namespace

std::string describeExpectation(const Expectation& e)
{
    if (e.op == ExpectOp::diverged || e.op == ExpectOp::completed)
        return e.left.run + " " + std::string(expectOpName(e.op));
    std::string left = (e.left.run.empty() ? "" : e.left.run + ".") + e.left.metric;
    if (e.op == ExpectOp::within)
        return left + " within " + numberText(*e.value) + " of " + e.than->run + (e.than->metric == e.left.metric ? "" : "." + e.than->metric);
    std::string right;
    if (e.than) {
        right = (e.than->run.empty() ? "" : e.than->run + ".") + e.than->metric;
        if (e.factor != 1.0) right = numberText(e.factor) + " x " + right;
        if (e.offset != 0.0) right += (e.offset > 0 ? " + " : " - ") + numberText(std::fabs(e.offset));
    } else {
        right = numberText(*e.value);
    }
    return left + " " + std::string(expectOpName(e.op)) + " " + right;
}

std::vector<ExpectationResult> checkExpectations(const Lesson& lesson, const LessonRecords& records)
{
    std::vector<ExpectationResult> results;
    for (const Expectation& e : lesson.expectations) {
        ExpectationResult r;
        r.expectation = &e;
        if (e.op == ExpectOp::diverged || e.op == ExpectOp::completed) {
            const int i = lesson.runIndex(e.left.run);
            const RunRecord* rec = i >= 0 && static_cast<std::size_t>(i) < records.size() ? records[static_cast<std::size_t>(i)] : nullptr;
            const std::string status = rec ? rec->summary.status : std::string();
            if (!rec || status.empty() || status == "running" || status == "starting") {
                r.why = "the run \"" + e.left.run + "\" has not finished";
            } else {
                r.measured = status;
                const bool held = e.op == ExpectOp::diverged ? status == "diverged" : status == "completed";
                r.state = held ? ExpectationState::held : ExpectationState::notHeld;
            }
            results.push_back(r);
            continue;
        }
        std::string why;
        r.left = metricValue(e.left, lesson, records, &why);
        if (e.than) r.right = metricValue(*e.than, lesson, records, r.left ? &why : nullptr);
        if (!r.left || (e.than && !r.right)) {
            r.why = why;
            results.push_back(r);
            continue;
        }
        const double a = *r.left;
        const double b = e.than ? e.factor * *r.right + e.offset : *e.value;
        bool held = false;
        switch (e.op) {   // NaN compares false: a claim about a NaN value does not hold
        case ExpectOp::less: held = a < b; break;
        case ExpectOp::lessEqual: held = a <= b; break;
        case ExpectOp::greater: held = a > b; break;
        case ExpectOp::greaterEqual: held = a >= b; break;
        case ExpectOp::equal: held = a == b; break;
        case ExpectOp::within: held = std::fabs(a - *r.right) <= *e.value; break;
        default: break;
        }
        r.state = held ? ExpectationState::held : ExpectationState::notHeld;
        r.measured = shown(e.left, r.left);
        if (e.than) r.measured += " vs " + shown(*e.than, r.right);
        results.push_back(r);
    }
    return results;
}

std::vector<std::string> unbackedSentences(const Lesson& lesson)
{
    std::set<std::string> backed;
    for (const auto& e : lesson.expectations) backed.insert(sentenceKey(e.backs));
    for (const auto& b : lesson.background) backed.insert(sentenceKey(b.sentence));
    std::vector<std::string> out;
    for (const auto& s : explanationSentences(lesson.explanation))
        if (!backed.count(sentenceKey(s))) out.push_back(s);
    return out;
}

}  // namespace plab
