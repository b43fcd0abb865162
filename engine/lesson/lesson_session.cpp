// A finished lesson's session file (see lesson_session.h).
#include "lesson/lesson_session.h"

#include "files/atomic_file.h"

#include <stdexcept>
#include <system_error>

namespace plab {

namespace {

const char* stateName(ExpectationState s)
{
    switch (s) {
    case ExpectationState::held: return "held";
    case ExpectationState::notHeld: return "not held";
    case ExpectationState::notMeasured: break;
    }
    return "not measured";
}

}  // namespace

nlohmann::json lessonSessionJson(const LessonSession& session, const LessonRecords& records)
{
    const Lesson& lesson = *session.lesson;
    nlohmann::json doc;
    doc["format"] = 1;
    doc["lesson"] = lesson.title;
    doc["origin"] = lesson.origin;
    doc["finished_at"] = session.finishedAt;
    nlohmann::json runs = nlohmann::json::array();
    for (std::size_t i = 0; i < lesson.runs.size(); ++i)
        runs.push_back({{"id", lesson.runs[i].id},
                        {"name", lesson.runs[i].name},
                        {"record", i < session.records.size() ? session.records[i].filename().string() : std::string()}});
    doc["runs"] = runs;
    if (lesson.predict)
        doc["prediction"] = {{"prompt", lesson.predict->prompt},
                             {"given", session.prediction},
                             {"measured", fillPlaceholders(lesson.predict->answer, lesson, records)}};
    nlohmann::json claims = nlohmann::json::array();
    for (const ExpectationResult& r : session.results)
        claims.push_back({{"claim", describeExpectation(*r.expectation)},
                          {"backs", fillPlaceholders(r.expectation->backs, lesson, records)},
                          {"state", stateName(r.state)},
                          {"measured", r.state == ExpectationState::notMeasured ? r.why : r.measured}});
    doc["claims"] = claims;
    return doc;
}

std::filesystem::path lessonSessionPath(const std::filesystem::path& firstRecord)
{
    return firstRecord.parent_path() / "lesson-sessions" / (firstRecord.stem().string() + ".lesson.json");
}

std::filesystem::path writeLessonSession(const LessonSession& session, const LessonRecords& records)
{
    if (session.records.empty() || session.records.front().empty())
        throw std::runtime_error("a lesson session needs its first run's record");
    const std::filesystem::path file = lessonSessionPath(session.records.front());
    std::error_code ec;
    std::filesystem::create_directories(file.parent_path(), ec);
    if (ec) throw std::runtime_error(file.parent_path().string() + ": cannot create the folder (" + ec.message() + ")");
    writeFileAtomically(file, lessonSessionJson(session, records).dump(2) + "\n");
    return file;
}

}  // namespace plab
