// Helpers shared by the test suites: temporary folders and small IDX data sets made
// on the fly (tests never depend on the installed data).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace plab::testing {

// A fresh folder under the system temp dir, removed when the object dies.
class TempDir {
public:
    TempDir();
    ~TempDir();
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    const std::filesystem::path& path() const { return path_; }

private:
    std::filesystem::path path_;
};

// Writes DIR/<name>/ with the four standard IDX files of a small synthetic digit task:
// each class is a distinct blob pattern plus seeded noise, learnable in a few steps.
void writeSyntheticDataset(const std::filesystem::path& folder, int trainCount, int testCount,
                           std::uint64_t seed);

}  // namespace plab::testing
