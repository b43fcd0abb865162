// Checking a lesson's expectations against its finished runs, and checking that every
// sentence of its explanation is backed (by an expectation, or named as background with
// its source). `plab lesson`, the lesson suite in CTest and the app's lesson panel all use
// these, so a claim is judged the same way everywhere.
#pragma once

#include "lesson/lesson.h"
#include "lesson/lesson_text.h"

#include <optional>
#include <string>
#include <vector>

namespace plab {

enum class ExpectationState { held, notHeld, notMeasured };

struct ExpectationResult {
    const Expectation* expectation = nullptr;
    ExpectationState state = ExpectationState::notMeasured;
    std::optional<double> left, right;     // measured values (right: the `than` side)
    std::string measured;                  // "27.3% vs 1.9%" as students read it
    std::string why;                       // when not measured
};

std::vector<ExpectationResult> checkExpectations(const Lesson& lesson, const LessonRecords& records);

// The claim in words: "no-scaling: activation_grad_underflow:loss > 10 x dynamic".
std::string describeExpectation(const Expectation& e);

// Sentences of the explanation that no expectation's `backs` and no background entry
// names (compared without their closing punctuation).
std::vector<std::string> unbackedSentences(const Lesson& lesson);

}  // namespace plab
