// A stand-in for libplab_cuda.so that tst_plugin_loader loads by path: built as
// `stale` (it reports an interface version this program does not have), `unversioned` (it
// exports no plab_cuda_abi_version, as plugins from before the check) or `current` (the
// right version). Its probe and create entry points count their calls, so the test can
// tell that the loader refused a plugin without calling anything in it.
#include "backend/backend.h"

#include <cstring>

namespace {

int calls = 0;

}  // namespace

#define PLAB_FAKE_EXPORT extern "C" __attribute__((visibility("default")))

#if !defined(PLAB_FAKE_UNVERSIONED)
PLAB_FAKE_EXPORT int plab_cuda_abi_version()
{
#if defined(PLAB_FAKE_STALE)
    return plab::kCudaPluginAbiVersion + 1;
#else
    return plab::kCudaPluginAbiVersion;
#endif
}
#endif

PLAB_FAKE_EXPORT void plab_cuda_probe(plab::BackendInfo* info)
{
    ++calls;
    info->available = false;
    info->reason = "unavailable: the fake plugin's probe ran";
}

PLAB_FAKE_EXPORT plab::ComputeBackend* plab_cuda_create_backend(int, char* error, std::size_t errorSize)
{
    ++calls;
    if (error && errorSize) std::strncpy(error, "the fake plugin creates nothing", errorSize - 1);
    return nullptr;
}

// For the test only: how many times the probe and create entry points ran.
PLAB_FAKE_EXPORT int plab_fake_plugin_calls() { return calls; }
