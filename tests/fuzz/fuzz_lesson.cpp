// Fuzz target: a lesson file, as File > Open Lesson and `plab lesson` read it.
#include "fuzz_targets.h"

#include "lesson/lesson.h"

#include <cstdlib>
#include <exception>
#include <string_view>

#include <nlohmann/json.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    try {
        plab::Lesson lesson = plab::parseLesson(std::string_view(reinterpret_cast<const char*>(data), size), "lesson");
        (void)plab::lessonToJson(lesson).dump();
        // Issue 37's invariant: a lesson that loads names no output file and no data
        // folder, and its inputs are names beside it.
        for (const plab::LessonRun& run : lesson.runs) {
            if (!run.settings.saveWeights.empty() || !run.settings.writeBatches.empty() || !run.settings.dataDir.empty())
                std::abort();
            for (const std::string* input : {&run.settings.initWeights, &run.settings.readBatches})
                if (!input->empty() && !plab::lessonInputProblem(*input).empty()) std::abort();
        }
        plab::resolveLessonInputs(lesson, "/nonexistent-plab-fuzz-folder");
    } catch (const std::exception&) {
    }
    return 0;
}
