// `plab info`: the machine, versions, backends (with the reason one is unavailable), every
// recipe family and the data folder, as lines for people; `--json` as one JSON object.
#include "commands.h"

#include "amp/recipe.h"
#include "backend/backend.h"
#include "data/dataset.h"
#include "record/record_writer.h"

#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace plab::cli {

namespace {

std::string joined(const std::vector<std::string>& names, const char* separator = " ")
{
    std::string out;
    for (const auto& n : names) out += (out.empty() ? "" : separator) + n;
    return out;
}

int printInfo(bool asJson)
{
    RecordedMachine thisOne = thisMachine(0);
    thisOne.threads.reset();   // a run's setting, not the machine's
    const nlohmann::json machine = machineToJson(thisOne);
    const nlohmann::json versions = versionsToJson(thisBuild());
    const auto cpu = createCpuBackend(0)->info();
    const auto cuda = probeCudaBackend();
    const std::string forPeople = cudaReasonForPeople(cuda.reason);
    const std::string cudaText = cuda.available             ? "available"
                                 : forPeople != cuda.reason ? forPeople + "; the CUDA runtime says: " + cuda.reason
                                                            : cuda.reason;
    if (asJson) {
        const nlohmann::json out = {
            {"precision_lab", PLAB_VERSION},
            {"machine", machine},
            {"versions", versions},
            {"backends",
             {{"cpu", {{"available", true}, {"details", cpu.versions}}},
              {"cuda", cuda.available ? nlohmann::json{{"available", true}}
                                      : nlohmann::json{{"available", false}, {"reason", cudaText}}}}},
            {"recipes",
             {{"ours", PrecisionRecipe::presetNames()},
              {"frameworks", PrecisionRecipe::frameworkPresetNames()},
              {"below_16_bits", PrecisionRecipe::lowPrecisionPresetNames()}}},
            {"data_folder", defaultDataDir().string()}};
        std::cout << out.dump(2) << '\n';
        return kExitOk;
    }
    std::cout << "Precision Lab " << PLAB_VERSION << '\n';
    std::cout << "machine: " << machine.value("cpu", "unknown CPU") << ", " << machine.value("logical_cores", 0)
              << " logical cores, " << machine.value("os", "") << " (host " << machine.value("hostname", "") << ")\n";
    std::vector<std::string> parts;
    for (const auto& [name, version] : versions.items())
        if (name != "precision_lab") parts.push_back(name + " " + (version.is_string() ? version.get<std::string>() : version.dump()));
    std::cout << "built with: " << joined(parts, ", ") << '\n';
    std::cout << "backend cpu: available\n";
    for (const auto& v : cpu.versions) std::cout << "  " << v << '\n';
    std::cout << "backend cuda: " << cudaText << '\n';
    std::cout << "recipes: " << joined(PrecisionRecipe::presetNames()) << '\n';
    std::cout << "framework recipes: " << joined(PrecisionRecipe::frameworkPresetNames()) << '\n';
    std::cout << "recipes below 16 bits: " << joined(PrecisionRecipe::lowPrecisionPresetNames()) << '\n';
    std::cout << "data folder: " << defaultDataDir().string() << '\n';
    return kExitOk;
}

}  // namespace

void addInfoCommand(CLI::App& app, std::function<int()>& run)
{
    auto* cmd = app.add_subcommand("info", "Show the machine, versions, backends, every recipe and the data folder");
    auto asJson = std::make_shared<bool>(false);
    cmd->add_flag("--json", *asJson, "Print it as one JSON object");
    cmd->callback([&run, asJson] { run = [asJson] { return printInfo(*asJson); }; });
}

}  // namespace plab::cli
