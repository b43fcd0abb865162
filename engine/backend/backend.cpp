// The CUDA plugin loader: finds libplab_cuda.so next to the executable, in the package's
// ../lib/precision-lab or on the library path with dlopen(), so the engine starts on
// machines without CUDA and says why the GPU backend is unavailable instead of failing to
// load; refuses a plugin built against another interface version before calling anything
// else in it.
#include "backend/backend.h"

#include <cctype>
#include <dlfcn.h>
#include <unistd.h>

#include <array>
#include <filesystem>
#include <mutex>
#include <stdexcept>
#include <string>
#include <system_error>

#ifndef PLAB_CUDA_PLUGIN_NAME
#define PLAB_CUDA_PLUGIN_NAME "libplab_cuda.so"
#endif

namespace plab {

namespace {

std::filesystem::path executableFolder()
{
    std::error_code ec;
    auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    return ec ? std::filesystem::path() : exe.parent_path();
}

// An opened plugin. The engine's own stays open for the life of the process: backends it
// created hold code and vtables inside it.
struct PluginHandle {
    void* handle = nullptr;
    std::string name;    // the file's name, for messages
    std::string error;   // why it did not load, or why it was refused
    bool refused = false;   // it loaded but was built for another interface
};

std::string dlopenError()
{
    const char* e = dlerror();
    return e ? e : "dlopen failed";
}

// Refuses a plugin built against another version of the interface before anything else
// of it runs: its vtables and struct layouts would not be ours. Reading the version is
// the one call a stale plugin can answer safely (a plain int, no engine types).
std::string interfaceProblem(void* handle, const std::string& name)
{
    const std::string needs = "this program needs " + std::to_string(kCudaPluginAbiVersion) + ")";
    auto version = reinterpret_cast<PlabCudaAbiVersionFn>(dlsym(handle, PLAB_CUDA_ABI_VERSION_SYMBOL));
    if (!version) return "unavailable: " + name + " is from another build (no interface version, " + needs;
    if (const int v = version(); v != kCudaPluginAbiVersion)
        return "unavailable: " + name + " is from another build (interface " + std::to_string(v) + ", " + needs;
    return {};
}

// dlopen(path) and the interface check; a refused plugin is closed again (its initialisers
// ran at dlopen, unloading runs only its own finalisers).
PluginHandle openPlugin(const std::string& path)
{
    PluginHandle plugin;
    plugin.name = std::filesystem::path(path).filename().string();
    plugin.handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!plugin.handle) {
        plugin.error = dlopenError();
        return plugin;
    }
    if (std::string problem = interfaceProblem(plugin.handle, plugin.name); !problem.empty()) {
        dlclose(plugin.handle);
        plugin.handle = nullptr;
        plugin.error = std::move(problem);
        plugin.refused = true;
    }
    return plugin;
}

const PluginHandle& loadPlugin()
{
    static PluginHandle plugin;
    static std::once_flag once;
    std::call_once(once, [] {
        std::string firstError;
        const auto beside = executableFolder();
        // Next to the program (the build tree), else where the package installs it
        // (bin/../lib/precision-lab); the first file found is the one used.
        std::filesystem::path path;
        if (!beside.empty()) {
            for (const auto& candidate : {beside / PLAB_CUDA_PLUGIN_NAME,
                                          beside.parent_path() / "lib" / "precision-lab" / PLAB_CUDA_PLUGIN_NAME}) {
                if (std::filesystem::exists(candidate)) {
                    path = candidate;
                    break;
                }
            }
        }
        if (!path.empty()) {
            plugin = openPlugin(path.string());
            // A plugin that loads but was built for another interface is refused, not
            // passed over for another copy on the library path: the user should hear
            // that the one installed with the program is stale.
            if (plugin.handle || plugin.refused) return;
            firstError = plugin.error;
        }
        plugin = openPlugin(PLAB_CUDA_PLUGIN_NAME);
        if (plugin.handle || plugin.refused) return;
        if (!firstError.empty()) {
            // The file is there but does not load (missing CUDA libraries, usually).
            plugin.error = "unavailable: " PLAB_CUDA_PLUGIN_NAME " could not be loaded (" + firstError + ")";
        } else {
            plugin.error = "unavailable: " PLAB_CUDA_PLUGIN_NAME
                           " not found next to the program, in its ../lib/precision-lab or on the library path"
                           " (a build without CUDA has none)";
        }
    });
    return plugin;
}

BackendInfo probePlugin(const PluginHandle& plugin)
{
    BackendInfo info;
    info.name = "cuda";
    if (!plugin.handle) {
        info.reason = plugin.error;
        return info;
    }
    auto probe = reinterpret_cast<PlabCudaProbeFn>(dlsym(plugin.handle, PLAB_CUDA_PROBE_SYMBOL));
    if (!probe) {
        info.reason = "unavailable: " + plugin.name + " lacks the entry point " PLAB_CUDA_PROBE_SYMBOL;
        return info;
    }
    try {
        probe(&info);
    } catch (const std::exception& e) {
        info.available = false;
        info.reason = std::string("unavailable: the CUDA plugin's probe failed (") + e.what() + ")";
    }
    // The plugin leaves the reason empty when it could not even allocate it.
    if (!info.available && info.reason.empty()) info.reason = "unavailable: the CUDA plugin's probe failed (out of memory)";
    info.name = "cuda";
    return info;
}

}  // namespace

std::string backendDisplayName(const std::string& name)
{
    std::string upper = name;
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return upper;
}

std::string_view arithmeticName(Arithmetic a) { return a == Arithmetic::hardware ? "hardware" : "exact"; }

std::optional<Arithmetic> parseArithmetic(std::string_view name)
{
    if (name == "exact") return Arithmetic::exact;
    if (name == "hardware") return Arithmetic::hardware;
    return std::nullopt;
}

std::string_view arithmeticKind(std::string_view phrase)
{
    const std::string_view kind = phrase.substr(0, phrase.find(':'));
    return kind == "hardware" || kind == "exact" ? kind : std::string_view{};
}

BackendInfo probeCudaBackend() { return probePlugin(loadPlugin()); }

std::string cudaReasonForPeople(const std::string& reason)
{
    for (const char* noDevice : {"driver version is insufficient for CUDA runtime", "no CUDA-capable device",
                                 "no CUDA device"})
        if (reason.find(noDevice) != std::string::npos) return "No NVIDIA GPU found (the CUDA backend needs one)";
    return reason;
}

BackendInfo probeCudaPluginFile(const std::string& path)
{
    PluginHandle plugin = openPlugin(path);
    if (!plugin.handle && !plugin.refused) plugin.error = "unavailable: " + path + " could not be loaded (" + plugin.error + ")";
    // A plugin that passed the check stays loaded, as the engine's does: its probe may
    // have started the CUDA runtime, which is not made to be unloaded.
    return probePlugin(plugin);
}

std::unique_ptr<ComputeBackend> createCudaBackend(int deviceIndex)
{
    const BackendInfo info = probeCudaBackend();
    if (!info.available) throw std::runtime_error("The CUDA backend is " + info.reason + ".");
    auto create = reinterpret_cast<PlabCudaCreateBackendFn>(
        dlsym(loadPlugin().handle, PLAB_CUDA_CREATE_BACKEND_SYMBOL));
    if (!create)
        throw std::runtime_error("The CUDA plugin lacks the entry point " PLAB_CUDA_CREATE_BACKEND_SYMBOL ".");
    std::array<char, 512> error{};
    ComputeBackend* backend = create(deviceIndex, error.data(), error.size());
    if (!backend) {
        error.back() = '\0';
        throw std::runtime_error(std::string("The CUDA backend could not start: ") + error.data() + ".");
    }
    return std::unique_ptr<ComputeBackend>(backend);
}

}  // namespace plab
