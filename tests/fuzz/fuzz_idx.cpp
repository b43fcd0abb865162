// Fuzz target: an IDX data file (raw or gzip), as the data loader reads it. The loader
// reads files, so the bytes go to a file of this process first.
#include "fuzz_targets.h"

#include "data/idx.h"

#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    static const std::filesystem::path file =
        std::filesystem::temp_directory_path() / ("plab-fuzz-idx-" + std::to_string(::getpid()));
    {
        std::ofstream out(file, std::ios::binary | std::ios::trunc);
        out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    }
    try {
        (void)plab::readIdx(file);
    } catch (const std::exception&) {
    }
    return 0;
}
