#!/bin/sh
# CTest ignored_problem_does_not_compile: ignored_problem.cpp compiles with the build's
# flags when it uses the problems it is given, and fails, naming the ignored result,
# when it drops them.
#   ignored_problem.sh CXX ENGINE_DIR SOURCE
set -u
cxx="$1" engine="$2" src="$3"
flags="-std=c++20 -fsyntax-only -Werror=unused-result -I$engine"
if ! out=$("$cxx" $flags "$src" 2>&1); then
  echo "the file that uses its problems does not compile:" >&2
  echo "$out" >&2
  exit 1
fi
if out=$("$cxx" $flags -DPLAB_IGNORE_THE_PROBLEM "$src" 2>&1); then
  echo "ignoring a problem compiled: a problem-returning function lost [[nodiscard]]" >&2
  exit 1
fi
# One error per ignored call in the file (two).
n=$(printf '%s\n' "$out" | grep -c "error: ignoring return value")
if [ "$n" -ne 2 ]; then
  echo "expected 2 ignored-result errors, got $n:" >&2
  echo "$out" >&2
  exit 1
fi
echo "ignoring a problem does not compile (-Werror=unused-result): $n errors"
