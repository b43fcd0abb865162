// IDX files (the MNIST format), raw or gzip: reading with every header field validated
// against the file size and each other, and writing.
#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

namespace plab {

struct IdxArray {
    std::vector<std::int64_t> dims;   // e.g. {60000, 28, 28} or {60000}
    std::vector<std::uint8_t> data;   // unsigned bytes (type code 0x08)
};

// The most data one IDX file may declare: 1 GiB, twenty times MNIST's training images.
// A header asking for more is refused before anything is inflated or allocated.
inline constexpr std::int64_t kMaxIdxDataBytes = std::int64_t{1} << 30;

// Reads an IDX file of unsigned bytes; a ".gz" name (or gzip magic) is decompressed.
// Only a regular file is opened (a FIFO or a device is refused, not read). Throws
// InputError naming the file and the problem.
IdxArray readIdx(const std::filesystem::path& file);

// Writes raw IDX (gzip when the name ends in ".gz"). Throws std::runtime_error on I/O failure.
void writeIdx(const std::filesystem::path& file, const IdxArray& a);

}  // namespace plab
