#!/bin/bash
# Issue 37 part 2 (CTest "slurm_hostile"): the scripts `plab sweep --slurm` writes are safe
# whatever values they are given. Hostile values that may go into a quoted shell word (a
# runs folder holding spaces, $(...), backticks and quotes) are written quoted: both
# scripts pass `bash -n`, the array task and the report job run for real (one 2-step
# point) and nothing but plab runs. Values that would go raw into an #SBATCH line or hold
# a control character (a newline in --partition, $(...) in --time, a space or % in the
# job folder) are refused with exit 2 naming the flag, and no script is written. --submit
# goes through a fake sbatch that only records its arguments.
#   slurm_hostile.sh PLAB
set -u
plab=$(readlink -f "$1")
work=$(mktemp -d /tmp/plab-hostile.XXXXXX)
trap 'rm -rf "$work"' EXIT
failures=0
check() {   # check DESCRIPTION COMMAND...
    local what=$1; shift
    if "$@"; then echo "ok    $what"; else echo "FAIL  $what"; failures=$((failures + 1)); fi
}
pwned() { [ -z "$(ls "$work"/pwned* 2> /dev/null)" ]; }

# A runs folder name that would run commands if it reached the shell unquoted.
hostile="$work/runs \$(touch $work/pwned-dollar) \`touch $work/pwned-backtick\` 'single' \"double\" ; touch $work/pwned-semicolon"
mkdir -p "$work/bin"
cat > "$work/bin/sbatch" << 'FAKE'
#!/bin/bash
# A fake sbatch: records its arguments one per line and prints a job id.
printf '%s\n' "$@" >> "$(dirname "$0")/sbatch.args"
echo "4242;cluster"
FAKE
chmod +x "$work/bin/sbatch"

common=(--recipes fp32 --max-steps 2 --threads 1 --eval-every 0 --histogram-every 0)
"$plab" sweep "${common[@]}" --slurm "$work/job" --out-dir "$hostile" --partition cpu,debug --time 0-01:00:00 \
    > "$work/gen.out" 2> "$work/gen.err"
check "a hostile runs folder is accepted (it only goes into quoted words)" test $? -eq 0
check "sweep.sbatch passes bash -n" bash -n "$work/job/sweep.sbatch"
check "report.sbatch passes bash -n" bash -n "$work/job/report.sbatch"
check "#SBATCH lines hold only the checked values" \
    bash -c "grep '^#SBATCH' '$work/job/sweep.sbatch' '$work/job/report.sbatch' | grep -vqE '\\\$|\`|;' "
(cd "$work" && SLURM_ARRAY_TASK_ID=0 bash "$work/job/sweep.sbatch" > "$work/task.log" 2>&1)
check "the array task ran plab, which exited 0" test "$(cat "$work/job/status/0" 2> /dev/null)" = 0
check "its record is in the hostile runs folder" test -s "$hostile/fp32.json"
if "$plab" report --help > /dev/null 2>&1; then
    (cd "$work" && bash "$work/job/report.sbatch" > "$work/report.log" 2>&1)
    check "the report job ran plab report into the hostile folder" test -s "$hostile/report.html"
fi
check "nothing in the runs folder's name ran" pwned

PATH="$work/bin:$PATH" "$plab" sweep "${common[@]}" --slurm "$work/job2" --out-dir "$hostile" --submit \
    > "$work/submit.out" 2> "$work/submit.err"
check "--submit through a fake sbatch exits 0" test $? -eq 0
check "sbatch got the array script as one argument" grep -qxF "$work/job2/sweep.sbatch" "$work/bin/sbatch.args"
check "the report job depends on the array's id" grep -qxF -e "--dependency=afterany:4242" "$work/bin/sbatch.args"
check "nothing else ran on submission" pwned

refused() {   # refused FLAG-NAMED-IN-MESSAGE ARGS...: exit 2, the flag named, no script written
    local flag=$1; shift
    rm -rf "$work/bad"
    local out=(--out-dir "$work/runs-bad")
    [[ " $* " == *" --out-dir "* ]] && out=()
    "$plab" sweep "${common[@]}" "${out[@]}" "$@" > /dev/null 2> "$work/refused.err"
    local rc=$?
    [ $rc -eq 2 ] && grep -qF -- "$flag" "$work/refused.err" && ! [ -e "$work/bad/sweep.sbatch" ] &&
        [ "$(wc -l < "$work/refused.err")" -eq 1 ] || { echo "      exit $rc: $(head -c 300 "$work/refused.err")"; return 1; }
}
check "a newline in --partition is refused" refused --partition --slurm "$work/bad" --partition $'cpu\ntouch '"$work/pwned-nl"
check "a ; in --partition is refused" refused --partition --slurm "$work/bad" --partition "cpu;touch $work/pwned-sc"
check "\$(...) in --time is refused" refused --time --slurm "$work/bad" --time "\$(touch $work/pwned-time)"
check "an #SBATCH line smuggled in --time is refused" refused --time --slurm "$work/bad" --time $'01:00:00\n#SBATCH --wrap=id'
check "a space in the job folder is refused" refused --slurm --slurm "$work/bad dir"
check "a % in the job folder is refused" refused --slurm --slurm "$work/bad%j"
check "a newline in the job folder is refused" refused --slurm --slurm "$work/bad"$'\n'"x"
check "a newline in the runs folder is refused" refused --out-dir --slurm "$work/bad" --out-dir "$work/runs"$'\n'"x"
check "an escape in --report-html is refused" refused --report-html --slurm "$work/bad" --report-html "$work/r"$'\e[2J'".html"
check "the refusal quotes the value escaped" grep -qF '\x1b[2J' "$work/refused.err"
check "nothing ran after all of it" pwned

[ "$failures" -eq 0 ] && echo "all checks passed" || echo "$failures checks FAILED"
[ "$failures" -eq 0 ]
