// The fuzz targets (issue 11): one LLVMFuzzerTestOneInput per parser, in its own file. Each
// feeds the bytes to a parser that reads files from outside and must answer every input with
// a value or an exception, never a crash, a hang or undefined behaviour. Built two ways:
// with libFuzzer (clang, -DPLAB_BUILD_FUZZERS=ON) to search, and with replay_main.cpp as a
// CTest suite that runs the kept corpus (seeds and every reproducer found) on every build.
#pragma once

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);
