// `plab convert --format fp16|bf16|tf32`: the format explorer's engine on stdin/stdout.
#include "commands.h"

#include "numerics/convert_command.h"
#include "numerics/format.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>

namespace plab::cli {

void addConvertCommand(CLI::App& app, std::function<int()>& run)
{
    auto* cmd = app.add_subcommand("convert",
        "Round numbers read from stdin (one per line: a decimal, or 0x + 8 hex digits of an "
        "fp32 pattern) to a format; prints value, bits and class, tab-separated");
    auto format = std::make_shared<std::string>();
    cmd->add_option("--format", *format, "Target format")
        ->required()
        ->check(CLI::IsMember({"fp16", "bf16", "tf32"}));
    cmd->callback([&run, format] {
        run = [format]() -> int {
            const int status = runConvertCommand(*parseFormat(*format), std::cin, std::cout, std::cerr);
            // std::cin reports a failed read of stdin (a folder: EISDIR) as its end; stdio keeps the error.
            if (status == 0 && std::ferror(stdin)) {
                std::cerr << "plab: convert: cannot read standard input (" << std::strerror(errno) << ")\n";
                return kExitBadInput;
            }
            return status;
        };
    });
}

}  // namespace plab::cli
