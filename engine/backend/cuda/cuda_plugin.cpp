// The plugin's face: the device probe (versions, devices, what each device cannot run)
// and the extern "C" entry points the engine finds with dlsym (engine/backend/backend.cpp):
// the interface version, the probe and the backend (device memory is read through the
// backend, ComputeBackend::deviceMemory()).
// Nothing here may throw or abort across the C boundary: failures become reasons.
#include "backend/cuda/cuda_backend.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#if PLAB_CUDA_HAVE_CUDNN
#include <cudnn.h>
#endif

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <exception>
#include <string>

namespace plab::cuda {

namespace {

// 13000 -> "13.0" (the encoding of cudaRuntimeGetVersion / cudaDriverGetVersion).
std::string cudaVersionText(int v) { return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10); }

std::string cublasVersionText()
{
    int major = 0, minor = 0, patch = 0;
    if (cublasGetProperty(MAJOR_VERSION, &major) != CUBLAS_STATUS_SUCCESS ||
        cublasGetProperty(MINOR_VERSION, &minor) != CUBLAS_STATUS_SUCCESS ||
        cublasGetProperty(PATCH_LEVEL, &patch) != CUBLAS_STATUS_SUCCESS)
        return "cuBLAS: version unknown";
    return "cuBLAS " + std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

std::string cudnnVersionText()
{
#if PLAB_CUDA_HAVE_CUDNN
    // cuDNN 9 encodes major * 10000 + minor * 100 + patch.
    const std::size_t v = cudnnGetVersion();
    const std::string version =
        "cuDNN " + std::to_string(v / 10000) + "." + std::to_string((v % 10000) / 100) + "." + std::to_string(v % 100);
    switch (cudnnPasses()) {
    case CudnnPasses::all: return version + ": convolutions";
    case CudnnPasses::forward: return version + ": forward convolutions (backward through im2col + cuBLAS)";
    case CudnnPasses::none: break;
    }
    return version + ": built in, unused (convolutions through im2col + cuBLAS, measured faster; "
                     "PLAB_CUDNN_PASSES=all uses cuDNN)";
#else
    return "cuDNN: not built in (convolutions through im2col + cuBLAS)";
#endif
}

// Why a device lacks bf16 and tf32, or "" when it has them.
std::string missingFormats(const DeviceCapability& cap)
{
    if (cap.bf16() && cap.tf32()) return "";
    return "bf16 and tf32 need compute capability >= 8.0; this device has " + std::to_string(cap.major) + "." +
           std::to_string(cap.minor);
}

}  // namespace

void probeDevices(BackendInfo& info)
{
    info.name = "cuda";
    info.available = false;
    info.reason.clear();
    info.versions.clear();
    info.capabilities = {};

    int runtime = 0, driver = 0;
    if (cudaRuntimeGetVersion(&runtime) == cudaSuccess) info.versions.push_back("CUDA runtime " + cudaVersionText(runtime));
    if (cudaDriverGetVersion(&driver) == cudaSuccess)
        info.versions.push_back(driver == 0 ? std::string("CUDA driver: none") : "CUDA driver " + cudaVersionText(driver));
    info.versions.push_back(cublasVersionText());
    info.versions.push_back(cudnnVersionText());

    int count = 0;
    if (const cudaError_t status = cudaGetDeviceCount(&count); status != cudaSuccess) {
        (void)cudaGetLastError();
        info.reason = std::string("unavailable: ") + cudaGetErrorString(status) + " (cudaGetDeviceCount)";
        return;
    }
    if (count == 0) {
        info.reason = "unavailable: no CUDA device (cudaGetDeviceCount found none)";
        return;
    }
    // Attributes and properties, not a context: the probe stays cheap and allocates
    // nothing on the device (device memory is read by the backend, see queryDeviceMemory).
    for (int d = 0; d < count; ++d) {
        cudaDeviceProp prop{};
        DeviceCapability cap;
        if (cudaGetDeviceProperties(&prop, d) != cudaSuccess) {
            (void)cudaGetLastError();
            info.versions.push_back("device " + std::to_string(d) + ": properties unreadable");
            continue;
        }
        cap.major = prop.major;
        cap.minor = prop.minor;
        std::string line = "device " + std::to_string(d) + ": " + prop.name + ", compute " + std::to_string(cap.major) +
                           "." + std::to_string(cap.minor) + ", " + std::to_string(prop.totalGlobalMem >> 20) + " MiB";
        const std::string missing = missingFormats(cap);
        if (!missing.empty()) line += "; no bf16 or tf32 (" + missing + ")";
        info.versions.push_back(line);
        if (d == 0) {
            // The backend runs on device 0: its capabilities are the run's.
            info.reason = std::string(prop.name) + " (compute " + std::to_string(cap.major) + "." +
                          std::to_string(cap.minor) + ")";
            if (!missing.empty()) info.reason += "; no bf16 or tf32";
            info.capabilities.compute = {Format::fp32, Format::fp16};
            if (cap.tf32()) info.capabilities.compute.push_back(Format::tf32);
            if (cap.bf16()) info.capabilities.compute.push_back(Format::bf16);
            info.capabilities.sumsInCompute = {Format::fp16};   // CUBLAS_COMPUTE_16F; nothing sums in bf16/tf32
            info.capabilities.limitation = missing;
            // FP8 per tensor everywhere (cuBLASLt's FP8 GEMMs from compute 8.9, the
            // dequantised values in fp32 before); MX / NVFP4 blocks not at all.
            info.capabilities.quantizes = true;
            info.capabilities.quantizesBlocks = false;
            info.capabilities.blocksLimitation =
                "the CUDA backend has no block-scaled GEMM; MX and NVFP4 GEMMs need a GPU of compute capability 10.0";
            info.capabilities.memoryBytes = prop.totalGlobalMem;
        }
    }
    info.versions.push_back("fp32 accumulation off: fp16 only (no bf16/tf32 accumulation on the GPU)");
    info.versions.push_back("FP8 recipes: GEMMs on FP8 codes via cuBLASLt from compute 8.9 (dequantised values in fp32 "
                            "before); MX and NVFP4 refused (compute 10.0, not written)");
    info.available = true;
}

}  // namespace plab::cuda

namespace {

// Copies text into the caller's buffer; allocates nothing, so it may run in any handler.
void writeError(char* error, std::size_t errorSize, const char* text) noexcept
{
    if (!error || errorSize == 0) return;
    const std::size_t n = std::min(errorSize - 1, std::strlen(text));
    std::memcpy(error, text, n);
    error[n] = '\0';
}

// A failed probe as a reason. When even that sentence cannot be allocated the reason is
// left empty (clear() allocates nothing) and the engine's loader names the failure.
void failProbe(plab::BackendInfo& info, const char* why) noexcept
{
    info.available = false;
    try {
        info.reason = std::string("unavailable: the CUDA probe failed (") + why + ")";
    } catch (...) {
        info.reason.clear();
    }
}

}  // namespace

// The plugin is built with hidden visibility; only the entry points are exported. None of
// them lets an exception cross the C boundary: every one ends in catch (...).

// The interface this plugin was built against (backend.h); the loader reads it first and
// calls nothing else when it is not its own.
extern "C" __attribute__((visibility("default"))) int plab_cuda_abi_version() { return plab::kCudaPluginAbiVersion; }

extern "C" __attribute__((visibility("default"))) plab::ComputeBackend*
plab_cuda_create_backend(int deviceIndex, char* error, std::size_t errorSize)
{
    try {
        plab::BackendInfo probe;
        plab::cuda::probeDevices(probe);
        if (!probe.available) {
            writeError(error, errorSize, probe.reason.c_str());
            return nullptr;
        }
        return new plab::cuda::CudaBackend(deviceIndex);
    } catch (const std::exception& e) {
        writeError(error, errorSize, e.what());
    } catch (...) {
        writeError(error, errorSize, "unknown error while creating the CUDA backend");
    }
    return nullptr;
}

extern "C" __attribute__((visibility("default"))) void plab_cuda_probe(plab::BackendInfo* info)
{
    if (!info) return;
    try {
        plab::cuda::probeDevices(*info);
    } catch (const std::exception& e) {   // std::bad_alloc from the strings, at worst
        failProbe(*info, e.what());
    } catch (...) {
        failProbe(*info, "unknown error");
    }
}
