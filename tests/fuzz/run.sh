#!/bin/sh
# Run the fuzzers (build/fuzz/fuzzers/, made by `make fuzz-build`) for
# SECONDS each, FUZZ_JOBS at a time (default 1), on their corpora in
# build/fuzz/corpus/NAME (kept and grown from run to run) and the seeds
# tests/fuzz/seeds.py makes from the repository's files. One line per
# fuzzer: executions, corpus, and a crash if any (its input is kept in
# build/fuzz/crashes/NAME/, its log in build/fuzz/logs/NAME.log).
#   sh tests/fuzz/run.sh SECONDS [build/fuzz/fuzzers/fuzz_NAME ...]
cd "$(dirname "$0")/../.." || exit 1
secs=${1:-60}
[ $# -gt 0 ] && shift
[ $# -gt 0 ] || set -- build/fuzz/fuzzers/fuzz_*
B=build/fuzz
rm -rf $B/seeds && python3 tests/fuzz/seeds.py $B/seeds || exit 1
mkdir -p $B/logs
one() {   # one FUZZER: run it, then its line
  name=$(basename "$1")
  mkdir -p $B/corpus/$name $B/crashes/$name $B/seeds/$name
  "$1" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=30 -print_final_stats=1 \
       -artifact_prefix=$B/crashes/$name/ $B/corpus/$name $B/seeds/$name > $B/logs/$name.log 2>&1
  rc=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' $B/logs/$name.log)
  files=$(ls $B/corpus/$name | wc -l)
  if [ $rc -eq 0 ]; then
    echo "ok   $name: ${runs:-?} executions in $secs s, corpus $files inputs, no crash"
  else
    echo "FAIL $name: exit $rc after ${runs:-?} executions: $(grep -m1 -E 'ERROR|runtime error|deadly|==[0-9]+==' $B/logs/$name.log)"
    echo "     log: $B/logs/$name.log, input: $(ls -t $B/crashes/$name | head -n 1)"
    return 1
  fi
}
fail=0 running=0 pids=""
for f in "$@"; do
  one "$f" > $B/logs/$(basename "$f").line &
  pids="$pids $!"
  running=$((running + 1))
  if [ $running -ge "${FUZZ_JOBS:-1}" ]; then
    for p in $pids; do wait $p || fail=1; done
    pids="" running=0
  fi
done
for p in $pids; do wait $p || fail=1; done
for f in "$@"; do cat $B/logs/$(basename "$f").line; done
exit $fail
