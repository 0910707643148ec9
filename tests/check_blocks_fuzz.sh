#!/bin/sh
# The KV block manager (layers/scheduler/blocks.c) against a model of it
# written from its specification and vLLM's BlockPool (tests/blocks/model.py):
# BLOCKS_CASES random scripts (default 3000) of admissions (a prefix-cache
# lookup, then blocks for a chunk), growth, commits, releases and lookups,
# on pools of 2-12 blocks of 1-4 ids, prompts from 2-3 ids that share
# prefixes, replayed by tests/blocks/replay.c and by the model, compared
# after every operation: the hits, the blocks needed, taken or short, the
# free queue in order, evictions, every sequence's blocks
# (tests/blocks/fuzz.py). Then again on a build whose block hashes have 2
# bits: nearly every lookup meets another prefix's hash, and the
# confirmation against the ids and the prefix alone must keep each hit
# the model's (a model with no hashes at all). The seed is printed
# (BLOCKS_SEED=N replays a run).
cd "$(dirname "$0")/.." || exit 1
B=build/asan/tests   # the sanitizer build when there is one
[ -x $B/blocks_replay ] || B=build/tests
SEED=${BLOCKS_SEED:-$(date +%s)}
echo "seed $SEED"
fail=0
for replay in $B/blocks_replay $B/blocks_replay_weak_hash; do
  [ -x $replay ] || { echo "FAIL: $replay is not built (run make)"; fail=1; continue; }
  python3 tests/blocks/fuzz.py $replay "${BLOCKS_CASES:-3000}" $SEED || fail=1
done
exit $fail
