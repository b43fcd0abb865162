// plab: the headless command-line front end of Precision Lab. It drives the same
// engine API as the desktop app: train, convert numbers between formats, install data.
#include "commands.h"

#include "error.h"

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

int main(int argc, char** argv)
{
    using namespace plab::cli;
    // A write past the file-size limit (ulimit -f) fails with EFBIG, said as an error, instead
    // of killing plab mid-run: the record on disk stays the last complete one.
    std::signal(SIGXFSZ, SIG_IGN);
    CLI::App app{"Precision Lab: see what FP16, BF16 and TF32 do to training.", "plab"};
    app.set_version_flag("--version", std::string("plab ") + PLAB_VERSION);
    app.require_subcommand(1);

    std::function<int()> run;
    addTrainCommand(app, run);
    addConvertCommand(app, run);
    addDataCommand(app, run);
    addInfoCommand(app, run);
    addSweepCommand(app, run);
    addLessonCommand(app, run);
    addExportCommand(app, run);
#if PLAB_WITH_REPORTS
    addReportCommand(app, run);
#endif

    // A typo says what was meant: "plab traine" names `train`, "--recipes" names --recipe.
    std::vector<std::string> commands;
    for (const CLI::App* sub : app.get_subcommands({})) commands.push_back(sub->get_name());
    if (argc > 1 && argv[1][0] != '-' && std::find(commands.begin(), commands.end(), argv[1]) == commands.end()) {
        std::cerr << "plab: unknown command " << plab::quotedExcerpt(argv[1], 40)
                  << plab::didYouMean(argv[1], commands) << "; the commands are " << plab::alternatives(commands)
                  << " (plab --help)\n";
        return kExitBadInput;
    }
    try {
        app.parse(argc, argv);
    } catch (const CLI::ExtrasError& e) {
        // Arguments no option took: name the first option-like one with its nearest option.
        for (const CLI::App* sub : app.get_subcommands()) {
            std::vector<std::string> options;
            for (const CLI::Option* o : sub->get_options())
                for (const std::string& name : o->get_lnames()) options.push_back("--" + name);
            for (int i = 2; i < argc; ++i) {
                const std::string arg = std::string(argv[i]).substr(0, std::string(argv[i]).find('='));
                if (arg.rfind("--", 0) != 0 || std::find(options.begin(), options.end(), arg) != options.end()) continue;
                std::cerr << "plab " << sub->get_name() << ": unknown option " << plab::quotedExcerpt(arg, 40)
                          << plab::didYouMean(arg, options) << " (plab " << sub->get_name() << " --help)\n";
                return kExitBadInput;
            }
        }
        const int code = app.exit(e);
        return code == 0 ? kExitOk : kExitBadInput;
    } catch (const CLI::ValidationError& e) {
        // A value outside an option's fixed set ("--format: bf61 not in {tf32,fp16,...}"):
        // the set in words and the nearest member.
        static const std::regex notIn(R"(^(--?[A-Za-z0-9-]+): (.*) not in \{(.*)\}$)");
        std::smatch m;
        const std::string what = e.what();
        if (std::regex_match(what, m, notIn)) {
            std::vector<std::string> names;
            std::stringstream members(m[3].str());
            for (std::string name; std::getline(members, name, ',');) names.push_back(name);
            std::cerr << "plab: " << m[1].str() << " must be " << plab::alternatives(names) << ", got "
                      << plab::quotedExcerpt(m[2].str(), 40) << plab::didYouMean(m[2].str(), names) << '\n';
            return kExitBadInput;
        }
        const int code = app.exit(e);
        return code == 0 ? kExitOk : kExitBadInput;
    } catch (const CLI::ParseError& e) {
        const int code = app.exit(e);   // prints help, version or the usage error
        return code == 0 ? kExitOk : kExitBadInput;
    }
    try {
        const int status = run ? run() : kExitBadInput;
        // What went to stdout must have arrived (`plab convert > /dev/full` exited 0).
        std::cout.flush();
        if (!std::cout || std::fflush(stdout) != 0 || std::ferror(stdout)) {
            std::cerr << "plab: error: could not write the output (standard output failed: a full disk or a closed pipe)\n";
            return kExitFailure;
        }
        return status;
    } catch (const plab::InputError& e) {
        std::cerr << "plab: " << e.what() << '\n';
        return kExitBadInput;
    } catch (const std::exception& e) {
        std::cerr << "plab: error: " << e.what() << '\n';
        return kExitFailure;
    }
}
