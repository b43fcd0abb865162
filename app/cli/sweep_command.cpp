// `plab sweep --recipes fp32,amp-fp16 --loss-scale off,dynamic --batch 32,64 --seed 1,2
// --lr 0.001,0.01 --out-dir DIR`: trains every combination of the grid one run after another (all other training flags
// as for `plab train`), writes each run record into DIR, prints a comparison table and
// writes a comparison report (DIR/report.html unless --report-html/--report-pdf say
// where). Every combination is checked before the first run starts. With --slurm JOBDIR it
// writes the grid as a Slurm job array and a report job instead of running it (--submit
// submits both with sbatch).
#include "commands.h"
#include "progress_printer.h"
#include "train_options.h"

#include "data/dataset.h"
#include "error.h"
#include "files/output_paths.h"
#include "report/csv_export.h"
#include "report/run_comparison.h"
#include "record/record_writer.h"
#if PLAB_WITH_REPORTS
#include "report_outputs.h"
#endif

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

namespace plab::cli {

namespace {

// A value as part of a file name, its sign and exponent kept: "1e+3" -> "1e3", "1e-3" ->
// "1e-3", "-0.5" -> "-0.5", "static:1024" -> "static-1024". (fileStem would make "1e+3" and
// "1e-3" one name.)
std::string valueStem(const std::string& value)
{
    std::string stem;
    for (const unsigned char c : value) {
        if (std::isalnum(c) || c == '.' || c == '-') stem += static_cast<char>(std::tolower(c));
        else if (c != '+') stem += '-';
    }
    return stem.empty() ? "value" : stem;
}

using nlohmann::json;

struct SweepOptions {
    TrainFlagValues flags;
    std::string recipes, lossScales, batches, seeds, lrs;   // comma-separated grid values
    std::string outDir;
    std::string reportHtml, reportPdf;
    bool quiet = false;
    std::string slurmDir, partition, timeLimit;   // --slurm: write a job array instead of running
    bool submit = false;
};

std::vector<std::string> splitList(const std::string& text, const char* flag)
{
    std::vector<std::string> items;
    std::stringstream in(text);
    std::string item;
    while (std::getline(in, item, ','))
        if (!item.empty()) items.push_back(item);
    if (items.empty()) throw InputError(std::string(flag) + ": expected a comma-separated list, got " + quotedExcerpt(text));
    return items;
}

struct GridPoint {
    std::string file;          // record file name inside the output folder
    TrainSettings settings;
};

std::vector<GridPoint> planGrid(const CLI::App& cmd, const SweepOptions& opts)
{
    std::string origin;
    const json base = settingsPatch(cmd, opts.flags, origin);
    const auto recipes = opts.recipes.empty() ? std::vector<std::string>{base.value("recipe", std::string("fp32"))}
                                              : splitList(opts.recipes, "--recipes");
    // An empty entry means "as the recipe or config says".
    const auto scales = opts.lossScales.empty() ? std::vector<std::string>{""} : splitList(opts.lossScales, "--loss-scale");
    // The numeric axes: one value each unless listed ("" keeps the flag's or config's value).
    const auto axis = [](const std::string& text, const char* flag) {
        return text.empty() ? std::vector<std::string>{""} : splitList(text, flag);
    };
    const auto batches = axis(opts.batches, "--batch");
    const auto seeds = axis(opts.seeds, "--seed");
    const auto lrs = axis(opts.lrs, "--lr");
    static const FlagSpec batchSpec{"--batch", "batch", SettingType::integer, "", findSettingKey("batch")};
    static const FlagSpec seedSpec{"--seed", "seed", SettingType::integer, "", findSettingKey("seed")};
    static const FlagSpec lrSpec{"--lr", "lr", SettingType::number, "", findSettingKey("lr")};

    std::vector<GridPoint> grid;
    for (const auto& recipe : recipes)
        for (const auto& scale : scales)
            for (const auto& batch : batches)
                for (const auto& lr : lrs)
                    for (const auto& seed : seeds) {
                        json patch = base;
                        patch["recipe"] = recipe;
                        std::string file = recipe;
                        if (!scale.empty()) {
                            patch["loss_scale"] = scale;
                            file += "_ls-" + valueStem(scale);
                        }
                        if (!batch.empty()) {
                            patch["batch"] = flagValue(batchSpec, batch);
                            file += "_b" + batch;
                        }
                        if (!lr.empty()) {
                            patch["lr"] = flagValue(lrSpec, lr);
                            file += "_lr" + valueStem(lr);
                        }
                        if (!seed.empty()) {
                            patch["seed"] = flagValue(seedSpec, seed);
                            file += "_s" + seed;
                        }
                        const std::string where = origin + " (sweep run " + file + ")";
                        grid.push_back({file + ".json", settingsFromJson(patch, where)});
                    }
    // Points that are the same run (fp32,fp32; static:1024,static:1024.) are trained once;
    // points that differ but got one file name are told apart, so no record overwrites another.
    std::vector<GridPoint> distinct;
    for (GridPoint& point : grid) {
        const auto same = std::find_if(distinct.begin(), distinct.end(), [&](const GridPoint& p) { return p.settings == point.settings; });
        if (same != distinct.end()) {
            std::cerr << "plab: notice: sweep point " << point.file << " is the same run as " << same->file << "; trained once\n";
            continue;
        }
        const std::string stem = point.file.substr(0, point.file.size() - 5);
        for (int n = 2; std::any_of(distinct.begin(), distinct.end(), [&](const GridPoint& p) { return p.file == point.file; }); ++n)
            point.file = stem + "-" + std::to_string(n) + ".json";
        distinct.push_back(std::move(point));
    }
    // Files a point writes besides its record are its own: --save-weights w.safetensors
    // gives w_<point>.safetensors, and --write-batches likewise.
    for (GridPoint& point : distinct) {
        const std::string stem = point.file.substr(0, point.file.size() - 5);
        for (std::string* file : {&point.settings.saveWeights, &point.settings.writeBatches}) {
            if (file->empty()) continue;
            const std::filesystem::path p(*file);
            *file = (p.parent_path() / (p.stem().string() + "_" + stem + p.extension().string())).string();
        }
    }
    return distinct;
}

// ---- Slurm ---------------------------------------------------------------------------

// `text` as one shell word: single-quoted, with each ' written as '\''.
std::string shellWord(const std::string& text)
{
    std::string out = "'";
    for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

std::string absolute(const std::string& path) { return std::filesystem::absolute(path).lexically_normal().string(); }

std::string pointsArray(const std::vector<GridPoint>& grid)
{
    std::string out = "points=(";
    for (const auto& point : grid) out += "\n  " + shellWord(point.file);
    return out + "\n)\n";
}

// The job array: one `plab train --config` per grid point. Each task records plab's exit
// status and exits 0 itself, so that a failed point leaves its log and status. The report
// job runs after every task has ended however it ended (afterany: a task killed at its
// time limit, cancelled or lost with its node leaves no status) and names the points
// without a record.
std::string arrayScript(const std::vector<GridPoint>& grid, const SweepOptions& opts, const std::string& plab)
{
    const std::string job = absolute(opts.slurmDir), out = absolute(opts.outDir);
    std::string s = "#!/bin/bash\n"
                    "#SBATCH --job-name=plab-sweep\n"
                    "#SBATCH --array=0-" + std::to_string(grid.size() - 1) + "\n"
                    "#SBATCH --cpus-per-task=" + std::to_string(grid.front().settings.threads) + "\n"
                    "#SBATCH --output=" + job + "/logs/point-%a.log\n";
    if (!opts.partition.empty()) s += "#SBATCH --partition=" + opts.partition + "\n";
    if (!opts.timeLimit.empty()) s += "#SBATCH --time=" + opts.timeLimit + "\n";
    s += "# Written by plab sweep --slurm: grid point i trains with settings/i.json and writes its\n"
         "# record into the runs folder; its exit status goes to status/i (0 completed, 3 diverged).\n"
         "set -u\n" + pointsArray(grid) +
         "i=\"${SLURM_ARRAY_TASK_ID:?this script runs as a Slurm job array task (sbatch)}\"\n"
         "job=" + shellWord(job) + "\n"
         "runs=" + shellWord(out) + "\n"
         "echo \"plab sweep point $i: ${points[$i]} on $(hostname)\"\n" +
         shellWord(plab) + " train --config \"$job/settings/$i.json\" --out \"$runs/${points[$i]}\" --quiet\n"
         "status=$?\n"
         "echo \"$status\" > \"$job/status/$i\"\n"
         "echo \"plab exited $status\"\n"
         "exit 0\n";
    return s;
}

// The report job: `plab report` over the records of the points that ended with a record
// (completed or diverged), and the missing points named, also in RUNS/missing.txt.
std::string reportScript(const std::vector<GridPoint>& grid, const SweepOptions& opts, const std::string& plab)
{
    const std::string job = absolute(opts.slurmDir), out = absolute(opts.outDir);
    std::string outputs;
    if (!opts.reportHtml.empty()) outputs += " --html " + shellWord(absolute(opts.reportHtml));
    if (!opts.reportPdf.empty()) outputs += " --pdf " + shellWord(absolute(opts.reportPdf));
    if (outputs.empty()) outputs = " --html \"$runs/report.html\"";
    std::string s = "#!/bin/bash\n"
                    "#SBATCH --job-name=plab-sweep-report\n"
                    "#SBATCH --cpus-per-task=1\n"
                    "#SBATCH --output=" + job + "/logs/report.log\n";
    if (!opts.partition.empty()) s += "#SBATCH --partition=" + opts.partition + "\n";
    if (!opts.timeLimit.empty()) s += "#SBATCH --time=" + opts.timeLimit + "\n";
    s += "# Written by plab sweep --slurm: runs after every task of the job array has ended, however it\n"
         "# ended (--dependency=afterany), and names the points that left no record.\n"
         "set -u\n" + pointsArray(grid) +
         "job=" + shellWord(job) + "\n"
         "runs=" + shellWord(out) + "\n"
         "records=()\n"
         ": > \"$runs/missing.txt\"\n"
         "for i in \"${!points[@]}\"; do\n"
         "  status=$(cat \"$job/status/$i\" 2>/dev/null || echo 'none (the task did not run or was killed)')\n"
         "  if { [ \"$status\" = 0 ] || [ \"$status\" = 3 ]; } && [ -f \"$runs/${points[$i]}\" ]; then\n"
         "    records+=(\"$runs/${points[$i]}\")\n"
         "  else\n"
         "    echo \"missing grid point $i (${points[$i]}): plab exit status $status; log $job/logs/point-$i.log\" |\n"
         "      tee -a \"$runs/missing.txt\"\n"
         "  fi\n"
         "done\n"
         "if [ \"${#records[@]}\" -eq 0 ]; then echo 'no grid point left a record: no report'; exit 1; fi\n"
         "echo \"${#records[@]} of ${#points[@]} grid points have records\"\n"
         "notes=()\n"
         "while IFS= read -r line; do notes+=(--note \"$line\"); done < \"$runs/missing.txt\"\n"
         "exec " + shellWord(plab) + " report \"${records[@]}\" --title 'Precision Lab sweep'" + outputs +
         " \"${notes[@]}\"\n";
    return s;
}

// Runs `sbatch --parsable ARGS`; the job id it prints.
std::string sbatch(const std::vector<std::string>& args)
{
    std::string command = "sbatch --parsable";
    for (const auto& a : args) command += " " + shellWord(a);
    FILE* pipe = ::popen(command.c_str(), "r");
    if (!pipe) throw std::runtime_error("cannot run sbatch");
    std::string output;
    std::array<char, 256> buffer{};
    while (std::fgets(buffer.data(), static_cast<int>(buffer.size()), pipe)) output += buffer.data();
    const int status = ::pclose(pipe);
    while (!output.empty() && (output.back() == '\n' || output.back() == '\r')) output.pop_back();
    if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0 || output.empty())
        throw std::runtime_error("sbatch failed (" + command + "): " + (output.empty() ? "no job id" : output));
    return output.substr(0, output.find(';'));   // "id;cluster" on federated clusters
}

// Every value the scripts hold, checked before anything is written: no control character
// anywhere (a newline in an #SBATCH line or a shell word would start a command of its
// own), and the #SBATCH values from a strict set, since sbatch reads those lines with its
// own rules (a space ends the value, % is a pattern): a partition list, a time limit, and
// the job folder the logs go to. Shell words are quoted besides (shellWord).
void checkSlurmValues(const SweepOptions& opts, const std::string& plab)
{
    const auto refuse = [](const std::string& flag, const std::string& value, const std::string& why) {
        throw InputError("sweep " + flag + ": " + quotedExcerpt(value) + " " + why);
    };
    const auto only = [](const std::string& value, std::string_view allowed) {
        return !value.empty() && std::all_of(value.begin(), value.end(), [&](char c) {
            return std::isalnum(static_cast<unsigned char>(c)) || allowed.find(c) != std::string_view::npos;
        });
    };
    const std::pair<const char*, std::string> words[] = {{"--slurm", opts.slurmDir},     {"--out-dir", opts.outDir},
                                                         {"--report-html", opts.reportHtml}, {"--report-pdf", opts.reportPdf},
                                                         {"(plab's own path)", plab}};
    for (const auto& [flag, value] : words)
        if (hasControlCharacter(value)) refuse(flag, value, "holds a control character (a newline, a tab or an escape)");
    if (!opts.partition.empty() && !only(opts.partition, "_.,-"))
        refuse("--partition", opts.partition, "is not a partition name (letters, digits, _ . - and commas between names)");
    if (!opts.timeLimit.empty()) {
        std::string upper = opts.timeLimit;
        for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        if (upper != "UNLIMITED" && upper != "INFINITE" && !(only(opts.timeLimit, ":-") && std::isdigit(static_cast<unsigned char>(opts.timeLimit[0]))))
            refuse("--time", opts.timeLimit, "is not a Slurm time limit (minutes, HH:MM:SS, D-HH:MM:SS or UNLIMITED)");
    }
    const std::string job = absolute(opts.slurmDir);
    if (!only(job, "_./+,=@~-"))
        refuse("--slurm", job, "cannot go into an #SBATCH --output line: the job folder's path may hold letters, digits "
                               "and _ . / + , = @ ~ - only (sbatch ends the value at a space and reads % as a pattern)");
}

int writeSlurmSweep(const std::vector<GridPoint>& grid, const SweepOptions& opts)
{
    namespace fs = std::filesystem;
    std::error_code exeError;
    checkSlurmValues(opts, fs::read_symlink("/proc/self/exe", exeError).string());
    const fs::path job(opts.slurmDir);
    std::error_code ec;
    for (const fs::path& folder : {job / "settings", job / "logs", job / "status", fs::path(opts.outDir)}) {
        fs::create_directories(folder, ec);
        if (ec) throw InputError(folder.string() + ": cannot create the folder (" + ec.message() + ")");
    }
    fs::remove_all(job / "status", ec);   // statuses of an earlier submission would pass for this one's
    fs::create_directories(job / "status", ec);
    const std::string plab = fs::read_symlink("/proc/self/exe", ec).string();
    // Every path a point reads or writes is made absolute here, once: a task runs on
    // another node, maybe in another folder, with another home. The data folder is the one
    // this machine would use (the per-user default when none is given), so that every node
    // reads the same data wherever the folder is shared, not each its own default.
    const auto pinned = [](TrainSettings s) {
        if (s.dataDir.empty()) s.dataDir = defaultDataDir().string();
        for (std::string* path : {&s.dataDir, &s.initWeights, &s.saveWeights, &s.readBatches, &s.writeBatches})
            if (!path->empty()) *path = absolute(*path);
        return s;
    };
    for (std::size_t i = 0; i < grid.size(); ++i)
        writeJsonAtomically(job / "settings" / (std::to_string(i) + ".json"), settingsToJson(pinned(grid[i].settings)));
    std::cerr << "plab: every grid point reads its data from " << pinned(grid.front().settings).dataDir
              << " (a folder the nodes must share)\n";
    writeFileAtomically(job / "sweep.sbatch", arrayScript(grid, opts, plab));
    writeFileAtomically(job / "report.sbatch", reportScript(grid, opts, plab));
    std::cerr << "plab: wrote a Slurm job array of " << grid.size() << " grid points (" << (job / "sweep.sbatch").string()
              << ") and its report job (" << (job / "report.sbatch").string() << "); records go to " << opts.outDir
              << '\n';
    if (!opts.submit) {
        std::cout << "sbatch --parsable " << shellWord((job / "sweep.sbatch").string())
                  << "   # then: sbatch --dependency=afterany:<its id> " << shellWord((job / "report.sbatch").string())
                  << '\n';
        return kExitOk;
    }
    const std::string array = sbatch({(job / "sweep.sbatch").string()});
    const std::string report = sbatch({"--dependency=afterany:" + array, (job / "report.sbatch").string()});
    std::cout << "array job " << array << "\nreport job " << report << '\n';
    return kExitOk;
}

int runSweep(CLI::App& cmd, const SweepOptions& opts)
{
    if (opts.outDir.empty()) throw InputError("sweep: --out-dir is required");
    const auto grid = planGrid(cmd, opts);
    for (const auto& point : grid)
        if (point.settings.dataset != grid.front().settings.dataset || point.settings.dataDir != grid.front().settings.dataDir)
            throw InputError("sweep: every run of a sweep uses the same data set");
    if (opts.slurmDir.empty() && (opts.submit || !opts.partition.empty() || !opts.timeLimit.empty()))
        throw InputError("sweep: --submit, --partition and --time go with --slurm DIR");
    if (!opts.slurmDir.empty()) return writeSlurmSweep(grid, opts);
    std::error_code ec;
    std::filesystem::create_directories(opts.outDir, ec);
    if (ec) throw InputError(opts.outDir + ": cannot create the folder (" + ec.message() + ")");
    // Every file the sweep will write, checked before its first run.
    std::vector<NamedPath> written, inputs{{"--config", opts.flags.config}};
    for (const auto& point : grid) {
        written.push_back({"the record of sweep point " + point.file, std::filesystem::path(opts.outDir) / point.file});
        written.push_back({"--save-weights of sweep point " + point.file, point.settings.saveWeights});
        written.push_back({"--write-batches of sweep point " + point.file, point.settings.writeBatches});
        inputs.push_back({"--init-weights", point.settings.initWeights});
        inputs.push_back({"--read-batches", point.settings.readBatches});
    }
    written.push_back({"--report-html", opts.reportHtml.empty() && opts.reportPdf.empty()
                                            ? (std::filesystem::path(opts.outDir) / "report.html").string() : opts.reportHtml});
    written.push_back({"--report-pdf", opts.reportPdf});
    checkOutputPaths(written, inputs);

    const DataSplit data = loadTrainingData(grid.front().settings);
    std::vector<std::string> files;
    bool interrupted = false, failed = false;
    for (std::size_t i = 0; i < grid.size(); ++i) {
        const auto& point = grid[i];
        const auto file = std::filesystem::path(opts.outDir) / point.file;
        std::cerr << "plab: sweep run " << i + 1 << "/" << grid.size() << ": " << point.settings.recipe.describe()
                  << ", batch " << point.settings.batch << '\n';
        const auto lock = lockRecord(file, "the record of sweep point");
        ProgressPrinter progress(std::cerr, opts.quiet);
        const RunResult result = runRecordedTraining(point.settings, data, file, {}, progress).result;
        files.push_back(file.string());
        // The status, unless the message already starts with it ("diverged: the loss was ...").
        const std::string status(runStatusName(result.status));
        const std::string said = result.message.rfind(status, 0) == 0 ? result.message
                                 : result.message.empty()              ? status
                                                                       : status + ": " + result.message;
        std::cerr << "plab: " << said << "; record " << file.string() << '\n';
        if (result.status == RunStatus::failed) failed = true;
        if (result.status == RunStatus::stopped) {
            interrupted = true;
            std::cerr << "plab: sweep interrupted; reporting the runs so far\n";
            break;
        }
    }

    std::vector<RunDigest> digests;
    for (const auto& f : files) digests.push_back(digestRunRecord(loadRunRecord(f), f));
    std::cout << comparisonTableText(compareRuns(std::move(digests)));
#if PLAB_WITH_REPORTS
    report::ReportOutputs outputs;
    outputs.html = opts.reportHtml;
    outputs.pdf = opts.reportPdf;
    if (outputs.html.empty() && outputs.pdf.empty()) outputs.html = (std::filesystem::path(opts.outDir) / "report.html").string();
    outputs.title = "Precision Lab sweep";
    report::writeReportOutputs(report::loadRunRecords(files), outputs, printFilesWritten());
#else
    if (!opts.reportHtml.empty() || !opts.reportPdf.empty())
        std::cerr << "plab: this build has no report support (Qt Gui/Svg were not found); records are in " << opts.outDir << '\n';
#endif
    if (interrupted) return kExitInterrupted;
    return failed ? kExitFailure : kExitOk;
}

}  // namespace

void addSweepCommand(CLI::App& app, std::function<int()>& run)
{
    auto* cmd = app.add_subcommand(
        "sweep", "Train a grid of recipes x loss scaling x batch sizes x learning rates x seeds and compare the runs");
    auto opts = std::make_shared<SweepOptions>();
    opts->flags.omitted = {"--recipe", "--loss-scale", "--batch", "--seed", "--lr"};
    cmd->add_option("--recipes", opts->recipes, "Presets, comma-separated (e.g. fp32,amp-fp16,pure-fp16)");
    cmd->add_option("--loss-scale", opts->lossScales, "Loss scaling policies, comma-separated (e.g. off,dynamic,static:1024)");
    cmd->add_option("--batch", opts->batches, "Batch sizes, comma-separated (e.g. 32,64)");
    cmd->add_option("--seed", opts->seeds, "Seeds, comma-separated (e.g. 1,2,3)");
    cmd->add_option("--lr", opts->lrs, "Learning rates, comma-separated (e.g. 0.001,0.01)");
    addTrainFlags(*cmd, opts->flags);
    cmd->add_option("--out-dir", opts->outDir, "Folder for the run records and the report")->required();
    cmd->add_option("--report-html", opts->reportHtml, "Write the comparison report as HTML here (default DIR/report.html)");
    cmd->add_option("--report-pdf", opts->reportPdf, "Write the comparison report as PDF here");
    cmd->add_flag("--quiet", opts->quiet, "No progress lines");
    cmd->add_option("--slurm", opts->slurmDir,
                    "Write a Slurm job array (one plab train per grid point) and a report job into this folder "
                    "instead of training here");
    cmd->add_option("--partition", opts->partition, "With --slurm: the Slurm partition");
    cmd->add_option("--time", opts->timeLimit, "With --slurm: each job's time limit (e.g. 01:00:00)");
    cmd->add_flag("--submit", opts->submit, "With --slurm: submit both jobs with sbatch and print their ids");
    cmd->callback([&run, cmd, opts] { run = [cmd, opts] { return runSweep(*cmd, *opts); }; });
}

}  // namespace plab::cli
