// A finished lesson's session file: what the class predicted beside what was measured, and
// each claim's verdict, written beside the lesson's run records in "lesson-sessions/" (the
// run list reads only records). docs/LESSONS.md describes it.
#pragma once

#include "lesson/lesson.h"
#include "lesson/lesson_check.h"
#include "lesson/lesson_text.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace plab {

struct LessonSession {
    const Lesson* lesson = nullptr;
    std::vector<std::filesystem::path> records;     // one per lesson run, in its order ("" where none)
    std::string prediction;                          // what was typed into the prediction box
    std::vector<ExpectationResult> results;          // checkExpectations of the records
    std::string finishedAt;                          // ISO 8601, UTC
};

// The session as its file's JSON: {format 1, lesson, origin, finished_at, runs [{id, name,
// record (the file name)}], prediction {prompt, given, measured} where the lesson asks for
// one, claims [{claim, backs, state (held, not held, not measured), measured}]}.
nlohmann::json lessonSessionJson(const LessonSession& session, const LessonRecords& records);

// Where the session of a lesson whose first run's record is `firstRecord` is written:
// <its folder>/lesson-sessions/<its stem>.lesson.json.
std::filesystem::path lessonSessionPath(const std::filesystem::path& firstRecord);

// Writes the session file (the folder made where missing, the file replaced atomically);
// returns its path. Throws std::runtime_error naming the file when it cannot be written.
std::filesystem::path writeLessonSession(const LessonSession& session, const LessonRecords& records);

}  // namespace plab
