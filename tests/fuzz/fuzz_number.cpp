// Fuzz target: a line of `plab convert` and the format explorer's number text.
#include "fuzz_targets.h"

#include "convert_command.h"
#include "numerics/format.h"

#include <sstream>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
    std::ostringstream out, err;
    for (plab::Format f : {plab::Format::fp16, plab::Format::bf16, plab::Format::tf32}) {
        in.clear();
        in.seekg(0);
        (void)plab::cli::runConvertCommand(f, in, out, err);
    }
    return 0;
}
