#!/bin/bash
# Issue 13 part 4 (CTest "slurm_sweep"): a real single-node Slurm cluster on this machine.
# Starts munged with its own key and socket, slurmctld and slurmd from a slurm.conf for
# localhost, all in a temporary folder on free ports; submits a 2x2 sweep of 20 steps
# (`plab sweep --slurm DIR --submit`), waits for the array and its report job, and checks
# the four records and the report. Everything it started is stopped on exit.
#   slurm_sweep.sh PLAB
# Needs root (the daemons run as root here; CI runs as root) and Debian's slurm-wlm and
# munge, which scripts/setup.sh --tests installs. Not root: exit 77 (a skip, never a pass).
set -u
plab=$(readlink -f "$1")
if [ "$(id -u)" -ne 0 ]; then
    echo "SKIP: the Slurm daemons need root (CI runs as root)"
    exit 77
fi
for tool in munged slurmctld slurmd sbatch scontrol sinfo; do
    command -v "$tool" > /dev/null || { echo "FAIL: $tool is missing: scripts/setup.sh --tests installs slurm-wlm and munge"; exit 1; }
done

work=$(mktemp -d /tmp/plab-slurm.XXXXXX)
chmod 755 "$work"   # munged wants its socket's folders searchable by all
host=$(hostname -s)
export SLURM_CONF=$work/slurm.conf
stop_all() {
    for daemon in slurmd slurmctld munged; do
        [ -s "$work/$daemon.pid" ] && kill "$(cat "$work/$daemon.pid")" 2> /dev/null
    done
    sleep 1
    for daemon in slurmd slurmctld munged; do
        [ -s "$work/$daemon.pid" ] && kill -9 "$(cat "$work/$daemon.pid")" 2> /dev/null
    done
    rm -rf "$work"
}
trap stop_all EXIT
failures=0
check() {   # check DESCRIPTION COMMAND...: one line per check, a failure counts
    local what=$1; shift
    if "$@"; then echo "ok    $what"; else echo "FAIL  $what"; failures=$((failures + 1)); fi
}
show_logs() {
    for log in munged slurmctld slurmd; do
        echo "--- $log.log (last 20 lines)"; tail -n 20 "$work/$log.log" 2> /dev/null
    done
}
die() { echo "FAIL  $*"; show_logs; exit 1; }

# munge: a fresh key, its own socket.
head -c 1024 /dev/urandom > "$work/munge.key"
chmod 600 "$work/munge.key"
munged --force --key-file="$work/munge.key" --socket="$work/munge.socket" --pid-file="$work/munged.pid" \
    --log-file="$work/munged.log" --seed-file="$work/munged.seed" || die "munged did not start"

# Two free ports next to each other, away from Slurm's defaults (6817, 6818).
port=$((20000 + RANDOM % 20000))
while ss -ltn 2> /dev/null | grep -qE ":($port|$((port + 1)))\b"; do port=$((20000 + RANDOM % 20000)); done
mkdir -p "$work/state" "$work/spool" "$work/runs"
cat > "$SLURM_CONF" << EOF
ClusterName=plabtest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$work/munge.socket
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
MpiDefault=none
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=1000 State=UNKNOWN
PartitionName=plab Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
slurmctld -i || die "slurmctld did not start"
slurmd || die "slurmd did not start"
for _ in $(seq 60); do
    [ "$(sinfo -h -o %T 2> /dev/null)" = idle ] && break
    sleep 1
done
[ "$(sinfo -h -o %T 2> /dev/null)" = idle ] || die "the node did not become idle in 60 s ($(sinfo -h -o %T 2>&1))"
echo "ok    a one-node Slurm cluster is up ($(sinfo -h -o '%N %c CPUs, partition %P'))"

# The sweep: 2 recipes x 2 batch sizes, 20 steps each, on the set-up's real MNIST digits.
"$plab" sweep --recipes fp32,amp-bf16 --batch 16,32 --max-steps 20 --widths 4,8 --threads 1 --quiet \
    --out-dir "$work/runs" --slurm "$work/job" --submit > "$work/submit.out" 2> "$work/submit.err" ||
    die "plab sweep --submit failed: $(cat "$work/submit.err")"
array=$(sed -n 's/^array job \([0-9]*\)$/\1/p' "$work/submit.out")
report=$(sed -n 's/^report job \([0-9]*\)$/\1/p' "$work/submit.out")
check "plab sweep --submit prints the array and report job ids ($array, $report)" test -n "$array" -a -n "$report"
check "the report job depends on the array (afterany)" \
    bash -c "scontrol show job '$report' | grep -q 'Dependency=afterany:${array}'"

state() { scontrol show job "$1" 2> /dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p' | head -n 1; }
for _ in $(seq 300); do
    case "$(state "$report")" in COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY) break ;; esac
    sleep 1
done
check "the report job completed (state $(state "$report"))" test "$(state "$report")" = COMPLETED
for task in 0 1 2 3; do
    check "array task $task completed" test "$(state "${array}_$task")" = COMPLETED
done

records=$(ls "$work/runs"/*.json 2> /dev/null | wc -l)
check "four records in the shared runs folder (found $records)" test "$records" -eq 4
for record in "$work/runs"/*.json; do
    check "$(basename "$record") is a completed run of 20 steps" python3 - "$record" << 'EOF'
import json, sys
record = json.load(open(sys.argv[1]))
summary = record["summary"]
sys.exit(0 if summary.get("status") == "completed" and summary.get("steps") == 20 else 1)
EOF
done
check "the report job wrote report.html" test -s "$work/runs/report.html"
check "the report's log says every grid point has a record" grep -q "4 of 4 grid points have records" "$work/job/logs/report.log"
check "no missing points" test ! -s "$work/runs/missing.txt"

# Issue 34: a task that does not end well (here cancelled, as a time limit or a lost node
# would end it) still lets the report job run, which names the missing point. Two points,
# submitted while the node is drained, so task 1 is surely cancelled before it starts.
mkdir -p "$work/runs2"
scontrol update NodeName="$host" State=DRAIN Reason=plab-test || die "could not drain the node"
"$plab" sweep --recipes fp32 --batch 16,32 --max-steps 20 --widths 4,8 --threads 1 --quiet \
    --out-dir "$work/runs2" --slurm "$work/job2" --submit > "$work/submit2.out" 2> "$work/submit2.err" ||
    die "the second plab sweep --submit failed: $(cat "$work/submit2.err")"
array2=$(sed -n 's/^array job \([0-9]*\)$/\1/p' "$work/submit2.out")
report2=$(sed -n 's/^report job \([0-9]*\)$/\1/p' "$work/submit2.out")
scancel "${array2}_1"
scontrol update NodeName="$host" State=RESUME || die "could not resume the node"
for _ in $(seq 300); do
    case "$(state "$report2")" in COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY) break ;; esac
    sleep 1
done
check "with task 1 cancelled, the report job still ran (state $(state "$report2"))" test "$(state "$report2")" = COMPLETED
check "missing.txt names the cancelled point 1" grep -q "missing grid point 1 (fp32_b32.json)" "$work/runs2/missing.txt"
check "the report names 1 of 2 points with a record" grep -q "1 of 2 grid points have records" "$work/job2/logs/report.log"

if [ "$failures" -ne 0 ]; then
    echo "$failures check(s) failed"
    for log in "$work"/job/logs/*.log; do echo "--- $log"; tail -n 20 "$log"; done
    show_logs
    exit 1
fi
echo "all Slurm checks passed"
