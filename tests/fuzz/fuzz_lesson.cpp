// Fuzz target: a lesson file, as File > Open Lesson and `plab lesson` read it.
#include "fuzz_targets.h"

#include "lesson/lesson.h"

#include <exception>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    try {
        const plab::Lesson lesson = plab::parseLesson(std::string_view(reinterpret_cast<const char*>(data), size), "lesson");
        (void)plab::lessonToJson(lesson).dump();
    } catch (const std::exception&) {
    }
    return 0;
}
