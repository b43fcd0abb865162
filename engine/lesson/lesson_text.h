// Placeholders in a lesson's text: {RUN.METRIC|STYLE} is a metric of one run,
// {METRIC|STYLE} a format fact, and {A.M - B.M|STYLE} or {A.M / B.M|STYLE} the difference
// or ratio of two; STYLE (optional) is one of formatMetricValue's styles. Filled from the
// run records just measured, so the number students read is the one their machine made.
#pragma once

#include "lesson/lesson.h"

#include "record/run_record.h"


#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace plab {

struct Placeholder {
    MetricRef left;
    char op = 0;                       // 0, '-' or '/'
    std::optional<MetricRef> right;
    std::string style;
};

// Parses the inside of one placeholder (without braces); throws InputError's phrase as
// std::invalid_argument when malformed.
Placeholder parsePlaceholder(std::string_view inside);

// Every placeholder of `text`, in order; throws std::invalid_argument naming the first
// malformed one (an unclosed brace included).
std::vector<Placeholder> placeholdersOf(std::string_view text);

// Records indexed like lesson.runs; a null entry for a run that has not finished.
using LessonRecords = std::vector<const RunRecord*>;

// The value of a metric reference (a format fact needs no record).
std::optional<double> metricValue(const MetricRef& ref, const Lesson& lesson, const LessonRecords& records,
                                  std::string* why = nullptr);
std::optional<double> placeholderValue(const Placeholder& p, const Lesson& lesson, const LessonRecords& records);
std::string placeholderText(const Placeholder& p, const Lesson& lesson, const LessonRecords& records);

// `text` with every placeholder replaced by its measured value ("?" where not measured).
std::string fillPlaceholders(std::string_view text, const Lesson& lesson, const LessonRecords& records);

}  // namespace plab
