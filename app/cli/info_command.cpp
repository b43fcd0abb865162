// `plab info`: versions, backends (with the reason one is unavailable), data folder.
#include "commands.h"

#include "amp/recipe.h"
#include "backend/backend.h"
#include "data/dataset.h"
#include "record/record_writer.h"

#include <iostream>

namespace plab::cli {

void addInfoCommand(CLI::App& app, std::function<int()>& run)
{
    auto* cmd = app.add_subcommand("info", "Show versions, backends and the data folder");
    cmd->callback([&run] {
        run = [] {
            std::cout << "Precision Lab " << PLAB_VERSION << '\n';
            std::cout << "machine: " << machineInfo(0).dump() << '\n';
            std::cout << "versions: " << versionInfo().dump() << '\n';
            const auto cpu = createCpuBackend(0)->info();
            std::cout << "backend cpu: available";
            for (const auto& v : cpu.versions) std::cout << "; " << v;
            std::cout << '\n';
            const auto cuda = probeCudaBackend();
            const std::string forPeople = cudaReasonForPeople(cuda.reason);
            std::cout << "backend cuda: "
                      << (cuda.available ? "available"
                          : forPeople != cuda.reason ? forPeople + " (the CUDA runtime: " + cuda.reason + ")"
                                                     : cuda.reason)
                      << '\n';
            std::cout << "recipes:";
            for (const auto& n : PrecisionRecipe::presetNames()) std::cout << ' ' << n;
            std::cout << "\nframework recipes:";
            for (const auto& n : PrecisionRecipe::frameworkPresetNames()) std::cout << ' ' << n;
            std::cout << "\ndata folder: " << defaultDataDir().string() << '\n';
            return kExitOk;
        };
    });
}

}  // namespace plab::cli
