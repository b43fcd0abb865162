// Datasets of 28x28 grey images with labels 0-9, loaded from IDX files, and seeded
// shuffling into batches.
#pragma once

#include "tensor/tensor.h"

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace plab {

struct Dataset {
    std::int64_t count = 0;
    int rows = 28, cols = 28;
    std::vector<std::uint8_t> pixels;   // count * rows * cols, row-major per image
    std::vector<std::uint8_t> labels;   // count values 0..9
};

struct DataSplit {
    std::string name;          // "mnist", "mnist-10k", "fashion-mnist"
    std::filesystem::path folder;
    std::string description;   // one line for logs and records, e.g. "mnist-10k (8000 train / 2000 test) from DIR"
    Dataset train;
    Dataset test;
};

// The per-user data folder the set-up fills: $XDG_DATA_HOME/precision-lab/data, or
// ~/.local/share/precision-lab/data; when that folder does not exist but an installed
// package's data does (installedDataDir()), that one.
std::filesystem::path defaultDataDir();

// ../share/precision-lab/data beside the running executable (what the .deb installs).
std::filesystem::path installedDataDir();

// Loads `name` ("mnist" or "fashion-mnist") from dataDir. "mnist" uses dataDir/mnist/
// when that folder exists and dataDir/mnist-10k/ otherwise; `notice` says which.
// Throws InputError naming the file and the problem.
DataSplit loadDataset(const std::string& name, const std::filesystem::path& dataDir,
                      std::string* notice = nullptr);

// Seeded order of sample indices for each epoch (same seed and epoch, same order).
std::vector<std::uint32_t> epochOrder(std::int64_t count, std::uint64_t seed, int epoch);

// Copies the samples idx[0..n) into images (n, 1, rows, cols) scaled to [0, 1] and labels.
void gatherBatch(const Dataset& ds, const std::uint32_t* idx, std::int64_t n, Tensor& images,
                 std::vector<std::uint8_t>& labels);

}  // namespace plab
