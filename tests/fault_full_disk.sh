#!/bin/bash
# Fault tests of issue 11 (CTest "fault_full_disk"): what plab does when the disk fills
# and when it is killed. A file-size limit (ulimit -f, with SIGXFSZ ignored so that a write
# past it fails with EFBIG) stands in for a full disk: it needs no root and no tiny
# filesystem, and the write fails part-way exactly as on a full disk.
#   fault_full_disk.sh PLAB
set -u
plab=$(readlink -f "$1")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
failures=0
check() {   # check DESCRIPTION COMMAND...: one line per check, a failure counts
    local what=$1; shift
    if "$@"; then echo "ok    $what"; else echo "FAIL  $what"; failures=$((failures + 1)); fi
}
limited() {   # limited KIB COMMAND...: runs COMMAND with files capped at KIB KiB
    local kib=$1; shift
    bash -c 'ulimit -f "$1"; trap "" XFSZ; shift; exec "$@"' _ "$kib" "$@"
}
no_temporaries() { ! ls -A | grep -q '\.tmp$'; }
# plab report reads only whole, valid records; it prints the run's status in its table.
valid_record() { rm -rf csv-check; "$plab" report "$1" --csv csv-check > table.txt 2>&1; }

# A good record and report to start from.
"$plab" train --max-steps 40 --histogram-every 10 --threads 1 --quiet --out good.json > /dev/null 2>&1
check "a good record is written" valid_record good.json
"$plab" report good.json --html good.html --pdf good.pdf > /dev/null 2>&1
cp good.html before.html; cp good.pdf before.pdf

# 1. plab train whose record outgrows the disk: exit 1 naming the file, the record keeps its
#    last complete version, no temporary left.
limited 40 "$plab" train --max-steps 400 --histogram-every 1 --threads 1 --quiet --out full.json > train.out 2> train.err
status=$?
check "train on a full disk exits 1 (got $status)" test "$status" -eq 1
check "train says which file could not be written" grep -q "cannot write full.json" train.err
check "train's record keeps a complete version" valid_record full.json
check "train leaves no temporary file" no_temporaries

# 2. plab report onto a full disk: exit non-zero, the earlier report untouched, no temporary.
limited 16 "$plab" report good.json --html good.html --pdf good.pdf > report.out 2> report.err
status=$?
check "report on a full disk fails (got $status)" test "$status" -ne 0
check "report names the file" grep -q "cannot write good" report.err
check "the earlier HTML report is intact" cmp -s good.html before.html
check "the earlier PDF report is intact" cmp -s good.pdf before.pdf
check "report leaves no temporary file" no_temporaries
"$plab" report good.json --pdf /dev/full > /dev/null 2> devfull.err
status=$?
check "report into /dev/full fails (got $status)" test "$status" -ne 0
check "/dev/full is still a device" test -c /dev/full

# 2b. Standard output that fails, standard input that is a folder.
echo 1.5 | "$plab" convert --format fp16 > /dev/full 2> convert.err
status=$?
check "convert into /dev/full fails (got $status)" test "$status" -eq 1
"$plab" info > /dev/full 2> info.err
status=$?
check "info into /dev/full fails (got $status)" test "$status" -eq 1
"$plab" convert --format fp16 < "$work" > /dev/null 2> stdin.err
status=$?
check "convert reading a folder fails as bad input (got $status)" test "$status" -eq 2

# 3. kill -9 in the middle of a run: the record on disk is complete and plab report reads it.
"$plab" train --max-steps 100000 --histogram-every 5 --threads 1 --quiet --out killed.json > /dev/null 2>&1 &
pid=$!
for _ in $(seq 100); do [ -s killed.json ] && break; sleep 0.1; done
sleep "1.$((RANDOM % 10))"
kill -9 "$pid"; wait "$pid" 2> /dev/null
check "a killed run's record is complete JSON" valid_record killed.json
"$plab" report killed.json --html killed.html > /dev/null 2> killed.err
check "plab report reads a killed run's record" test -s killed.html
# A kill during a write can leave the half-written temporary (nothing can remove it then);
# it is never read as a record, and the next writer of the same record, holding its lock,
# removes it. One is put there too, so that the check does not hang on the kill's timing.
: > .killed.json.AbC123.tmp
"$plab" train --max-steps 2 --threads 1 --quiet --out killed.json > /dev/null 2>&1
check "the next write of a killed run's record leaves no temporary file" no_temporaries

# 4. SIGTERM and SIGHUP stop a run like SIGINT: exit 130, the record says "stopped". The
#    signal is sent as soon as the record exists (the trainer's constructor writes it): plab
#    catches the signals from before that. plab starts with the default dispositions (env
#    --default-signal), whatever this test was started under (nohup ignores SIGHUP).
for sig in TERM HUP; do
    rm -f sig.json
    env --default-signal=TERM,HUP "$plab" train --max-steps 100000 --threads 1 --quiet --out sig.json > /dev/null 2>&1 &
    pid=$!
    for _ in $(seq 100); do [ -s sig.json ] && break; sleep 0.1; done
    kill -"$sig" "$pid"; wait "$pid"; status=$?
    check "SIG$sig exits 130 (got $status)" test "$status" -eq 130
    check "SIG$sig leaves a valid record" valid_record sig.json
    check "SIG$sig's record says stopped" grep -Eq " stopped " table.txt
done
# Under nohup (SIGHUP ignored when plab starts) a closed terminal does not stop the run.
rm -f sig.json
env --ignore-signal=HUP --default-signal=TERM "$plab" train --max-steps 100000 --threads 1 --quiet --out sig.json > /dev/null 2>&1 &
pid=$!
for _ in $(seq 100); do [ -s sig.json ] && break; sleep 0.1; done
kill -HUP "$pid"; sleep 1
check "under nohup, SIGHUP leaves the run training" kill -0 "$pid"
kill -TERM "$pid"; wait "$pid"; status=$?
check "under nohup, SIGTERM still stops it (exit 130, got $status)" test "$status" -eq 130

echo "$failures failed"
exit $((failures > 0))
