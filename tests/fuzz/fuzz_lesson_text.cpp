// Fuzz target: a lesson's text with its placeholders, as the lesson panel, `plab lesson` and
// the report fill them in (fillPlaceholders), over a fixed lesson and two fixed records; and
// the value styles alone on any double the input spells. Every answer is text of a bounded
// length, and a value's style keeps its unit at any magnitude (a value past 1e15 had filled
// a 64-byte buffer and lost " MiB").
#include "fuzz_targets.h"

#include "lesson/lesson.h"
#include "lesson/lesson_metrics.h"
#include "lesson/lesson_text.h"
#include "record/run_record.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string_view>

#include <nlohmann/json.hpp>

namespace {

using nlohmann::json;

json recordOf(double accuracy, double underflow)
{
    return {{"format_version", 1},
            {"settings", {{"recipe", "amp-fp16"}}},
            {"steps", json::array({{{"step", 1}, {"loss", 2.3}, {"loss_scale", 65536.0}},
                                   {{"step", 2}, {"loss", 1.9}, {"loss_scale", 32768.0}, {"skipped", true}}})},
            {"telemetry", json::array({{{"step", 1}, {"layers", json::array({
                {{"layer", "loss"}, {"kind", "activation_grad"},
                 {"stats", {{"count", 100}, {"zeros_in", 20}, {"underflow", 8}, {"overflow", 1}}}},
                {{"layer", "fc1"}, {"kind", "weight_grad"}, {"stats", {{"count", 50}, {"zeros_in", 5}, {"underflow", 3}}},
                 {"lost_updates", 10}, {"nonzero_updates", 40}}})}}})},
            {"memory", {{"peak", {{"activations", 300}, {"total", 1000}}}}},
            {"summary", {{"status", "completed"}, {"test_accuracy", accuracy}, {"steps", 2}, {"skipped_steps", 1},
                         {"activation_grad_underflow_fraction", {{"loss", underflow}}}}}};
}

struct Fixture {
    plab::Lesson lesson = plab::parseLesson(R"({"format": 2, "title": "T", "question": "Q?",
        "runs": [{"id": "a", "name": "A", "settings": {"recipe": "amp-fp16"}},
                 {"id": "b", "name": "B", "settings": {"recipe": "fp32"}}],
        "charts": ["loss"], "explanation": "E.", "background": [{"sentence": "E.", "source": "s"}]})",
                                            "lesson");
    plab::RunRecord a = plab::readRunRecord(recordOf(0.9535, 0.14), "a");
    plab::RunRecord b = plab::readRunRecord(recordOf(0.97, 0.004), "b");
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    static const Fixture fixture;
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    try {
        const std::string filled = plab::fillPlaceholders(text, fixture.lesson, {&fixture.a, &fixture.b});
        // Each placeholder ({...}, at least 3 bytes) becomes at most a short value.
        if (filled.size() > size * 40 + 64) std::abort();
    } catch (const std::exception&) {
    }
    // The styles on the double spelled by the first 8 bytes.
    if (size >= 8) {
        double v = 0.0;
        std::memcpy(&v, data, sizeof v);
        if (std::isfinite(v)) {
            for (const char* style : {"pct", "pct0", "pct2", "pts", "int", "num", "pow2", "mib", "x"}) {
                const std::string shown = plab::formatMetricValue(v, style, plab::MetricUnit::plain);
                const std::string_view s(style);
                const std::string_view out(shown);
                const bool unitKept = (s.rfind("pct", 0) == 0 && out.ends_with("%")) ||
                                      (s == "pts" && out.ends_with(" points")) || (s == "mib" && out.ends_with(" MiB")) ||
                                      (s == "x" && out.starts_with("x")) || s == "int" || s == "num" || s == "pow2";
                if (!unitKept || shown.size() > 40) std::abort();
            }
        }
    }
    return 0;
}
