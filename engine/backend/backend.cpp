// The CUDA plugin loader: finds libplab_cuda.so next to the executable or on the library
// path with dlopen(), so the engine starts on machines without CUDA and says why the GPU
// backend is unavailable instead of failing to load.
#include "backend/backend.h"

#include <dlfcn.h>
#include <unistd.h>

#include <array>
#include <filesystem>
#include <mutex>
#include <stdexcept>
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

// The plugin handle stays open for the life of the process: backends it created hold
// code and vtables inside it.
struct PluginHandle {
    void* handle = nullptr;
    std::string error;   // why loading failed
};

const PluginHandle& loadPlugin()
{
    static PluginHandle plugin;
    static std::once_flag once;
    std::call_once(once, [] {
        std::string firstError;
        const auto beside = executableFolder();
        if (!beside.empty()) {
            const auto path = beside / PLAB_CUDA_PLUGIN_NAME;
            if (std::filesystem::exists(path)) {
                plugin.handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
                if (plugin.handle) return;
                const char* e = dlerror();
                firstError = e ? e : "dlopen failed";
            }
        }
        plugin.handle = dlopen(PLAB_CUDA_PLUGIN_NAME, RTLD_NOW | RTLD_LOCAL);
        if (plugin.handle) return;
        if (!firstError.empty()) {
            // The file is there but does not load (missing CUDA libraries, usually).
            plugin.error = "unavailable: " PLAB_CUDA_PLUGIN_NAME " could not be loaded (" + firstError + ")";
        } else {
            plugin.error = "unavailable: " PLAB_CUDA_PLUGIN_NAME " not found (built without CUDA)";
        }
    });
    return plugin;
}

}  // namespace

BackendInfo probeCudaBackend()
{
    BackendInfo info;
    info.name = "cuda";
    const auto& plugin = loadPlugin();
    if (!plugin.handle) {
        info.reason = plugin.error;
        return info;
    }
    auto probe = reinterpret_cast<PlabCudaProbeFn>(dlsym(plugin.handle, PLAB_CUDA_PROBE_SYMBOL));
    if (!probe) {
        info.reason = "unavailable: " PLAB_CUDA_PLUGIN_NAME " lacks the entry point " PLAB_CUDA_PROBE_SYMBOL;
        return info;
    }
    try {
        probe(&info);
    } catch (const std::exception& e) {
        info.available = false;
        info.reason = std::string("unavailable: the CUDA plugin's probe failed (") + e.what() + ")";
    }
    info.name = "cuda";
    return info;
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
