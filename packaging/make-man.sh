#!/usr/bin/env bash
# Writes a program's man page from its own --help and --version (help2man), so the page
# cannot drift from the options it documents. A program with subcommands (plab) gets a
# SUBCOMMANDS section made of every subcommand's --help, nested ones included; the
# hand-written sections in EXTRA (files, environment, see also) are added after.
# Usage: make-man.sh PROGRAM OUT.1 "one-line description" [EXTRA.h2m]
set -euo pipefail
prog="$1" out="$2" name="$3" extra="${4:-}"
command -v help2man >/dev/null || { echo "make-man.sh: help2man is missing (apt install help2man)" >&2; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export QT_QPA_PLATFORM=offscreen LC_ALL=C.UTF-8

# The names listed under "Subcommands:" in a help text.
subcommands() { "$@" --help | awk '/^Subcommands:/ { s = 1; next } s && /^  [a-z]/ { print $1 }'; }

# One subcommand's --help as roff: its first line as a paragraph, the usage line, every
# option and positional as a tagged paragraph (CLI11 sets the description at column 30, or
# on the next line when the option is longer); --help itself is left out.
section() {
  "$@" --help | awk -v title="${*##*/}" '
    function esc(s) { gsub(/\\/, "\\e", s); gsub(/-/, "\\-", s); return s }
    function breakable(s) { gsub(/,/, ",\\:", s); return s }   # a long {a,b,...} list may break after a comma
    function text(s) { gsub(/\\/, "\\e", s); sub(/^[.'\'']/, "\\\\\\&&", s); return s }
    function flush() { if (tag != "") { print ".TP"; print "\\fB" esc(tag) "\\fR" (arg != "" ? " " breakable(esc(arg)) : ""); print text(desc) }
                       tag = ""; arg = ""; desc = "" }
    BEGIN { print ".SS \"" title "\""; print ".ad l" }   # ragged right: a long {a,b,...} list cannot be justified
    /^(Options|Positionals|Subcommands):$/ { flush(); next }
    /^  [^ ]/ {
      flush()
      line = substr($0, 3)
      # An option and its type that reach the description column leave one space before it.
      if (match(line, /^[^ ]+ [A-Z<][^ ]* [^ ]/)) { spec = substr(line, 1, RLENGTH - 2); desc = substr(line, RLENGTH) }
      else if (match(line, /  +/)) { spec = substr(line, 1, RSTART - 1); desc = substr(line, RSTART + RLENGTH) }
      else { spec = line; desc = "" }
      if (spec ~ /^-h,--help$/) { skip = 1; next }
      skip = 0
      n = index(spec, " ")
      if (n > 0) { tag = substr(spec, 1, n - 1); arg = substr(spec, n + 1) } else { tag = spec }
      next
    }
    /^   +[^ ]/ { if (!skip) { sub(/^ +/, ""); desc = (desc == "" ? $0 : desc " " $0) } next }
    /^Usage: / { flush(); print ".PP"; print "\\fB" esc(substr($0, 8)) "\\fR"; next }
    /^$/ { flush(); next }
    { flush(); print ".PP"; print text($0) }
    END { flush() }'
}

include="$work/include.h2m"
: >"$include"
subs="$(subcommands "$prog")"
if [ -n "$subs" ]; then
  echo "[SUBCOMMANDS]" >>"$include"
  echo "Each subcommand has its own options; \\fB${prog##*/} SUBCOMMAND \\-\\-help\\fR prints them." >>"$include"
  for s in $subs; do
    section "$prog" "$s" >>"$include"
    for n in $(subcommands "$prog" "$s"); do section "$prog" "$s" "$n" >>"$include"; done
  done
fi
[ -n "$extra" ] && cat "$extra" >>"$include"
options=(--no-info --no-discard-stderr --name "$name" --output "$out")
[ -s "$include" ] && options+=(--include "$include")
help2man "${options[@]}" "$prog"
