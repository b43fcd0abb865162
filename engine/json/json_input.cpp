// Size- and depth-limited JSON reading (see json_input.h).
#include "json/json_input.h"

#include "error.h"

#include <fstream>
#include <sstream>

namespace plab {

using nlohmann::json;

namespace {

struct TooDeep {};

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

}  // namespace

json parseJsonInput(std::string_view text, const std::string& origin, JsonLimits limits)
{
    if (text.size() > limits.maxBytes)
        throw InputError(origin + ": the file is too large (" + std::to_string(text.size() >> 20) +
                         " MiB; at most " + std::to_string(limits.maxBytes >> 20) + " MiB are read)");
    const int maxDepth = limits.maxDepth;
    const json::parser_callback_t depthGuard = [maxDepth](int depth, json::parse_event_t, json&) {
        if (depth > maxDepth) throw TooDeep{};
        return true;
    };
    try {
        return json::parse(text.begin(), text.end(), depthGuard);
    } catch (const TooDeep&) {
        throw InputError(origin + ": JSON nested more than " + std::to_string(maxDepth) + " levels deep");
    } catch (const json::parse_error& e) {
        // The library's message names the byte; keep its sentence, not its prefix.
        std::string what = e.what();
        if (const auto pos = what.find("] "); pos != std::string::npos) what = what.substr(pos + 2);
        if (what.size() > 160) what = what.substr(0, 160) + "…";
        throw InputError(origin + ": not valid JSON (" + what + ")");
    }
}

json readJsonFile(const std::filesystem::path& file, const std::string& origin, JsonLimits limits)
{
    std::error_code ec;
    const auto status = std::filesystem::status(file, ec);
    if (ec || !std::filesystem::exists(status)) throw InputError(origin + ": no such file");
    if (std::filesystem::is_directory(status)) throw InputError(origin + ": it is a folder, not a file");
    const auto size = std::filesystem::is_regular_file(status) ? std::filesystem::file_size(file, ec) : 0;
    if (!ec && size > limits.maxBytes)
        throw InputError(origin + ": the file is too large (" + std::to_string(size >> 20) + " MiB; at most " +
                         std::to_string(limits.maxBytes >> 20) + " MiB are read)");
    std::ifstream in(file, std::ios::binary);
    if (!in) throw InputError(origin + ": cannot open the file");
    std::string text;
    char buf[1 << 16];
    while (in.read(buf, sizeof buf) || in.gcount() > 0) {
        text.append(buf, static_cast<std::size_t>(in.gcount()));
        if (text.size() > limits.maxBytes)
            throw InputError(origin + ": the file is too large (at most " + std::to_string(limits.maxBytes >> 20) +
                             " MiB are read)");
    }
    if (in.bad()) throw InputError(origin + ": cannot read the file");
    return parseJsonInput(text, origin, limits);
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

}  // namespace plab
