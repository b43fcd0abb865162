// Reading JSON from outside (configs, lessons, run records): every document is parsed with
// a size limit and a nesting-depth limit, so a hostile or broken file gives one sentence
// instead of a stack overflow later (dump() and our own walks recurse per level), and
// messages quote at most a short, escaped excerpt of the offending value.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>

namespace plab {

struct JsonLimits {
    std::size_t maxBytes = std::size_t{256} << 20;   // 256 MiB: far above any record we write
    int maxDepth = 64;                                // our documents nest at most about 6 deep
};

// Parses `text`; throws InputError "<origin>: <problem>" for invalid JSON, a document over
// the size limit or one nested deeper than the depth limit.
nlohmann::json parseJsonInput(std::string_view text, const std::string& origin, JsonLimits limits = {});

// The same, but each element of the top-level object's array `key` is handed to `element`
// as soon as it is complete, and not kept: in the document returned that array is empty. A
// long array (a record's steps) then never stands as a whole document in memory. An
// exception from `element` ends the parse and reaches the caller as it was thrown.
using JsonElementSink = std::function<void(nlohmann::json&&)>;
nlohmann::json parseJsonInputStreaming(std::string_view text, const std::string& origin, std::string_view key,
                                       const JsonElementSink& element, JsonLimits limits = {});

// Reads and parses a file the same way; a missing or unreadable file, a folder, or a file
// over the size limit is an InputError. `origin` names the file ("config /x/c.json"):
// the messages do not repeat the path.
nlohmann::json readJsonFile(const std::filesystem::path& file, const std::string& origin, JsonLimits limits = {});

// A short form of a value for messages: at most `maxChars` characters of its JSON text,
// control characters escaped, "…" where cut. Never serialises more than it shows of
// strings and never recurses past a few levels.
std::string jsonExcerpt(const nlohmann::json& value, std::size_t maxChars = 60);

// Numbers read from a file, range-checked before any conversion (a double such as 1e300
// converted to an integer or a float is undefined behaviour). Each throws InputError
// "<what> must be ..., got <excerpt>" for a value of the wrong type or out of range; the
// message is built only then, so reading a long record builds no strings. Callers that
// know where in the file they are add that when they catch it.
// A whole number from lo to hi: a JSON integer, or a float without a fraction.
std::int64_t jsonWhole(const nlohmann::json& v, std::int64_t lo, std::int64_t hi, std::string_view what);
// The same for obj[key], 0 when the key is absent; `what` is the quoted key.
std::int64_t jsonWholeOr(const nlohmann::json& obj, std::string_view key, std::int64_t lo, std::int64_t hi);
// obj[key] where it is a string; `fallback` where the key is absent or holds something else.
std::string jsonTextOr(const nlohmann::json& obj, std::string_view key, std::string fallback = {});
// Any JSON number as a double; null (how records write NaN and inf) is NaN.
double jsonReal(const nlohmann::json& v, std::string_view what);
// A JSON number as a float; beyond float's range it is +-inf, as the rounding would make it.
float jsonFloat(const nlohmann::json& v, std::string_view what);

}  // namespace plab
