// Size- and depth-limited JSON reading (see json_input.h).
#include "json/json_input.h"

#include "files/input_file.h"

#include "error.h"

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace plab {

using nlohmann::json;

namespace {

struct TooDeep {};
struct StreamedTwice {};

void appendEscaped(std::string& out, std::string_view s, std::size_t room)
{
    for (unsigned char c : s) {
        if (out.size() >= room) return;
        if (c == '"' || c == '\\') {
            out += '\\';
            out += static_cast<char>(c);
        } else if (c < 0x20 || c == 0x7f) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            out += buf;
        } else {
            out += static_cast<char>(c);
        }
    }
}

// Writes at most `room` characters of `v` into `out`, descending at most `levels` levels.
void excerpt(const json& v, std::string& out, std::size_t room, int levels)
{
    if (out.size() >= room) return;
    if (v.is_object() || v.is_array()) {
        const bool object = v.is_object();
        out += object ? '{' : '[';
        if (levels <= 0) {
            if (!v.empty()) out += "…";
        } else {
            bool first = true;
            for (auto it = v.begin(); it != v.end() && out.size() < room; ++it) {
                if (!first) out += ", ";
                first = false;
                if (object) {
                    out += '"';
                    appendEscaped(out, it.key(), room);
                    out += "\": ";
                }
                excerpt(*it, out, room, levels - 1);
            }
        }
        out += object ? '}' : ']';
    } else if (v.is_string()) {
        out += '"';
        appendEscaped(out, v.get_ref<const std::string&>(), room);
        out += '"';
    } else {
        out += v.dump();   // a number, bool or null: short
    }
}

// The document built from the parser's events (nlohmann's SAX interface), with a depth
// counter, and optionally one array of the top-level object handed out an element at a
// time. (nlohmann's callback parser, which could count depth too, searches the enclosing
// object for discarded values each time an object ends, so a document of n objects took
// time in n squared: a 1.6 MB record of 400k empty objects took over a minute.) The
// document is the one nlohmann's own builder makes: a repeated key keeps its last value.
class Builder {
public:
    Builder(json& root, int maxDepth, std::string_view streamKey = {}, const JsonElementSink* sink = nullptr)
        : root_(root), maxDepth_(maxDepth), streamKey_(streamKey), sink_(sink)
    {
    }

    bool null() { return value(nullptr); }
    bool boolean(bool v) { return value(v); }
    bool number_integer(json::number_integer_t v) { return value(v); }
    bool number_unsigned(json::number_unsigned_t v) { return value(v); }
    bool number_float(json::number_float_t v, const json::string_t&) { return value(v); }
    bool string(json::string_t& v) { return value(std::move(v)); }
    bool binary(json::binary_t& v) { return value(json::binary(std::move(v))); }
    bool key(json::string_t& k)
    {
        json& object = *stack_.back();
        if (stack_.size() == 1) topKey_ = k;
        slot_ = &object[std::move(k)];
        return true;
    }
    bool start_object(std::size_t) { return open(json::object()); }
    bool start_array(std::size_t)
    {
        const bool streamed = sink_ && stack_.size() == 1 && stack_.back()->is_object() && topKey_ == streamKey_;
        if (streamed && streamedOnce_) throw StreamedTwice{};   // the sink has the first one's elements
        open(json::array());
        if (streamed) {
            stream_ = stack_.back();
            streamedOnce_ = true;
        }
        return true;
    }
    bool end_object() { return close(); }
    bool end_array()
    {
        if (stack_.back() == stream_) stream_ = nullptr;
        return close();
    }
    template <class Exception>
    bool parse_error(std::size_t, const std::string&, const Exception& e)
    {
        throw e;
    }

private:
    // Where the next value goes: the root, the end of the open array, or the key just read.
    json& place(json&& v)
    {
        if (stack_.empty()) return root_ = std::move(v);
        json& top = *stack_.back();
        if (top.is_array()) {
            top.push_back(std::move(v));
            return top.back();
        }
        return *slot_ = std::move(v);
    }
    bool value(json&& v)
    {
        place(std::move(v));
        handOut();
        return true;
    }
    bool open(json&& container)
    {
        if (static_cast<int>(stack_.size()) >= maxDepth_) throw TooDeep{};
        stack_.push_back(&place(std::move(container)));
        return true;
    }
    bool close()
    {
        stack_.pop_back();
        handOut();
        return true;
    }
    // An element of the streamed array that is complete goes to the sink, not the document.
    void handOut()
    {
        if (!stream_ || stack_.empty() || stack_.back() != stream_ || stream_->empty()) return;
        (*sink_)(std::move(stream_->back()));
        stream_->get_ref<json::array_t&>().pop_back();
    }

    json& root_;
    std::vector<json*> stack_;   // the open containers, the innermost last
    json* slot_ = nullptr;       // the value of the key just read
    int maxDepth_;
    std::string topKey_;         // the last key of the top-level object
    std::string_view streamKey_;
    const JsonElementSink* sink_;
    json* stream_ = nullptr;     // the streamed array while it is open
    bool streamedOnce_ = false;
};

json parseWith(std::string_view text, const std::string& origin, JsonLimits limits, std::string_view streamKey,
               const JsonElementSink* sink)
{
    if (text.size() > limits.maxBytes)
        throw InputError(origin + ": the file is too large (" + std::to_string(text.size() >> 20) +
                         " MiB; at most " + std::to_string(limits.maxBytes >> 20) + " MiB are read)");
    try {
        json result;
        Builder builder(result, limits.maxDepth, streamKey, sink);
        json::sax_parse(text.begin(), text.end(), &builder);
        return result;
    } catch (const TooDeep&) {
        throw InputError(origin + ": JSON nested more than " + std::to_string(limits.maxDepth) + " levels deep");
    } catch (const StreamedTwice&) {
        // nlohmann's document keeps a repeated key's last value; the streamed elements of the
        // first are gone to the sink already, so a repeat of that key is refused.
        throw InputError(origin + ": the key \"" + std::string(streamKey) + "\" appears twice");
    } catch (const json::exception& e) {
        // A syntax error, or a number too large for a double (1e400). The library's
        // message names the byte; keep its sentence, not its prefix.
        std::string what = e.what();
        if (const auto pos = what.find("] "); pos != std::string::npos) what = what.substr(pos + 2);
        if (what.size() > 160) what = what.substr(0, 160) + "…";
        throw InputError(origin + ": not valid JSON (" + what + ")");
    }
}

}  // namespace

json parseJsonInput(std::string_view text, const std::string& origin, JsonLimits limits)
{
    return parseWith(text, origin, limits, {}, nullptr);
}

json parseJsonInputStreaming(std::string_view text, const std::string& origin, std::string_view key,
                             const JsonElementSink& element, JsonLimits limits)
{
    return parseWith(text, origin, limits, key, &element);
}

json readJsonFile(const std::filesystem::path& file, const std::string& origin, JsonLimits limits)
{
    return parseJsonInput(readRegularFile(file, origin, limits.maxBytes), origin, limits);
}

std::string jsonExcerpt(const json& value, std::size_t maxChars)
{
    std::string out;
    excerpt(value, out, maxChars, 3);
    if (out.size() > maxChars) {
        // Cut at a UTF-8 boundary.
        std::size_t cut = maxChars;
        while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;
        out = out.substr(0, cut) + "…";
    }
    return out;
}

std::int64_t jsonWhole(const json& v, std::int64_t lo, std::int64_t hi, std::string_view what)
{
    auto fail = [&] {
        throw InputError(std::string(what) + " must be a whole number from " + std::to_string(lo) + " to " +
                         std::to_string(hi) + ", got " + jsonExcerpt(v));
    };
    if (v.is_number_unsigned()) {
        const auto u = v.get<std::uint64_t>();
        if (hi < 0 || u > static_cast<std::uint64_t>(hi)) fail();
        const auto i = static_cast<std::int64_t>(u);
        if (i < lo) fail();
        return i;
    }
    if (v.is_number_integer()) {
        const auto i = v.get<std::int64_t>();
        if (i < lo || i > hi) fail();
        return i;
    }
    if (v.is_number_float()) {
        const double d = v.get<double>();
        // Compared as doubles first: only a value known to fit is converted.
        constexpr double kTwo63 = 9223372036854775808.0;
        if (!(d >= -kTwo63 && d < kTwo63) || d != std::floor(d)) fail();
        const auto i = static_cast<std::int64_t>(d);
        if (i < lo || i > hi) fail();
        return i;
    }
    fail();
    return 0;
}

std::int64_t jsonWholeOr(const json& obj, std::string_view key, std::int64_t lo, std::int64_t hi)
{
    const auto it = obj.find(key);
    if (it == obj.end()) return 0;
    try {
        return jsonWhole(*it, lo, hi, {});
    } catch (const InputError& e) {
        throw InputError("\"" + std::string(key) + "\"" + e.what());
    }
}

std::string jsonTextOr(const json& obj, std::string_view key, std::string fallback)
{
    const auto it = obj.find(key);
    return it != obj.end() && it->is_string() ? it->get<std::string>() : fallback;
}

double jsonReal(const json& v, std::string_view what)
{
    if (v.is_null()) return std::numeric_limits<double>::quiet_NaN();
    if (!v.is_number()) throw InputError(std::string(what) + " must be a number, got " + jsonExcerpt(v));
    return v.get<double>();
}

float jsonFloat(const json& v, std::string_view what)
{
    const double d = jsonReal(v, what);
    if (std::isnan(d)) return std::numeric_limits<float>::quiet_NaN();
    // From the largest float plus half its spacing on, round to nearest even gives inf.
    constexpr double kToInf = 340282356779733661637539395458142568448.0;   // 2^128 - 2^103
    if (d >= kToInf) return std::numeric_limits<float>::infinity();
    if (d <= -kToInf) return -std::numeric_limits<float>::infinity();
    return static_cast<float>(d);
}

}  // namespace plab
