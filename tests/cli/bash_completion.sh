#!/usr/bin/env bash
# The bash completion (packaging/plab.bash-completion) against the plab it completes: a
# settings key's choices come from its row through `plab train --help` ({adam,sgd}), an
# on/off key offers on and off, a number offers nothing, a file option offers files, and
# subcommands and options complete by prefix.
# Usage: bash_completion.sh PLAB
# No set -e or pipefail: the completion runs in an interactive shell without them (its pipes
# end early, awk exiting at the line it wants).
plab="$1"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bin"
ln -s "$(readlink -f "$plab")" "$work/bin/plab"
export PATH="$work/bin:$PATH" QT_QPA_PLATFORM=offscreen
# shellcheck source=/dev/null
source "$(dirname "${BASH_SOURCE[0]}")/../../packaging/plab.bash-completion"
cd "$work"
touch weights.safetensors
status=0
expect() {   # expect "WORDS TYPED" "EXPECTED COMPLETIONS"
  local -a COMP_WORDS
  read -ra COMP_WORDS <<<"$1"
  [[ $1 == *" " ]] && COMP_WORDS+=("")
  COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
  COMPREPLY=()
  _plab
  local got="${COMPREPLY[*]}"
  if [[ $got != "$2" ]]; then
    echo "FAIL: '$1' completed to '$got', expected '$2'"
    status=1
  else
    echo "ok: '$1' -> '$got'"
  fi
}
expect "plab tra" "train"
expect "plab train --optimizer " "adam sgd"
expect "plab train --update-rounding k" "kahan"
expect "plab train --arithmetic " "hardware exact"
expect "plab train --master-weights o" "on off"
expect "plab train --quantize mxfp" "mxfp8 mxfp4 mxfp6"
expect "plab train --batch " ""
expect "plab train --lr 1" ""
expect "plab train --init-weights weig" "weights.safetensors"
expect "plab train --lr-sch" "--lr-schedule"
exit "$status"
