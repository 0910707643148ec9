/*
 * test_sched_steps.c -- the scheduler (layers/scheduler/scheduler.c) on
 * Llama-3-8B's shapes on an analytic H100, three requests queued before
 * the first step, its layer-6 events read back from the SQLite trace and
 * compared with the steps worked out by hand below from the policy that
 * sched_compose's comment states (vLLM V1's).
 *
 * Blocks of 16 ids; a step computes at most 64 ids (max_num_batched_tokens);
 * the pool holds 11 blocks (176 ids); prefix caching on. Each request asks
 * 3 tokens (no stop ids). A step's blocks are those held as it starts
 * (4, 9, 11, 11, 8, 4 below). Queued in this order:
 *   R1: 100 ids (1000..1099)
 *   R2:  48 ids (2000..2047)
 *   R3:  48 ids: R1's first 32, then 16 of its own (3000..3015)
 *
 * step 0: nothing runs. Admit R1: no hit; it computes min(100, 64) = 64
 *         ids, 4 blocks (7 free). Budget spent.
 *         -> R1 [0,64) of 100.   R1's 4 full blocks are cached after it.
 * step 1: no decodes. R1's next chunk: its 36 ids left; grows to 100 ids,
 *         7 blocks (4 free); budget 28. Admit R2: no hit; it computes
 *         min(48, 28) = 28 ids, 2 blocks (2 free). Budget spent.
 *         -> R1 [64,100) of 100, R2 [0,28) of 48.  R1 samples its 1st
 *         token; its 6 full blocks are cached.
 * step 2: R1 decodes (101 ids fit its 7 blocks); budget 63. R2's last 20
 *         ids: 3 blocks (1 free); budget 43. Admit R3: its first 32 ids are
 *         R1's first two blocks, a hit of 32 (its lookup stops at 47 ids:
 *         its last id gives the logits); it computes the other 16, in 1
 *         new block (0 free); budget 27; no one waits.
 *         -> R1 decode, R2 [28,48) of 48, R3 [32,48) of 48.  R1 has 2
 *         tokens, R2 and R3 1 each (49 ids).
 * step 3: decodes in admission order. R1 (102 ids in 7 blocks). R2 needs
 *         a 4th block for its 49th id and none is free: the most recently
 *         admitted not yet in the step, R3, is preempted (its own block
 *         freed; R1's two it shared stay R1's), and R2 takes that block
 *         (evicting R3's cached third block). R3 waits at the head of the
 *         queue; no admission in a step that preempted.
 *         -> R1 decode, R2 decode.  R1's 3rd token: it finishes, its 7
 *         blocks freed (still cached).
 * step 4: R2 decodes (50 ids, 4 blocks). Resume R3 (49 ids: its prompt
 *         and its 1 token): the hit is R1's first two blocks again, 32 ids
 *         (its own third block was evicted); it computes the other 17
 *         (2 hit blocks off the free queue, 2 new).
 *         -> R2 decode, R3 [32,49) of 49.  R2's 3rd token: it finishes.
 *         (8 blocks held: R2's 4, R3's 4.)
 * step 5: -> R3 decode (its 4 blocks): its 3rd token (its 1st came before
 *         the preemption, its 2nd from the recomputed chunk), and it finishes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include "kernels/backend.h"
#include "layers/scheduler/scheduler.h"
#include "trace/trace.h"
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const BY_HAND[] = {
    "admit 1: prompt 100, cached 0, chunk 64",
    "step 0: requests [1], blocks 4, prefill 64, decode 0, chunks [{\"req\":1,\"from\":0,\"to\":64,\"of\":100}]",
    "admit 2: prompt 48, cached 0, chunk 28",
    "step 1: requests [1,2], blocks 9, prefill 64, decode 0, chunks [{\"req\":1,\"from\":64,\"to\":100,\"of\":100},"
        "{\"req\":2,\"from\":0,\"to\":28,\"of\":48}]",
    "admit 3: prompt 48, cached 32, chunk 16",
    "prefix_cache_hit 3: cached 32",
    "step 2: requests [1,2,3], blocks 11, prefill 36, decode 1, chunks [{\"req\":2,\"from\":28,\"to\":48,\"of\":48},"
        "{\"req\":3,\"from\":32,\"to\":48,\"of\":48}]",
    "preempt 3: computed 48, blocks 3, generated 1",
    "step 3: requests [1,2], blocks 11, prefill 0, decode 2, chunks []",
    "resume 3: prompt 48, cached 32, chunk 17",
    "prefix_cache_hit 3: cached 32",
    "step 4: requests [2,3], blocks 8, prefill 17, decode 1, chunks [{\"req\":3,\"from\":32,\"to\":49,\"of\":49}]",
    "step 5: requests [3], blocks 4, prefill 0, decode 1, chunks []",
};
enum { N_BY_HAND = sizeof BY_HAND / sizeof *BY_HAND };

/* The layer-6 events of the run, as the lines above, in the order recorded. */
static const char SQL[] =
    "SELECT CASE name"
    " WHEN 'step' THEN printf('step %d: requests %s, blocks %d, prefill %d, decode %d, chunks %s', step, args->>'requests',"
    "   args->>'kv_blocks_used', args->>'prefill_tokens', args->>'decode_tokens', args->>'chunks')"
    " WHEN 'preempt' THEN printf('preempt %d: computed %d, blocks %d, generated %d', request, args->>'computed_tokens',"
    "   args->>'blocks', args->>'generated')"
    " WHEN 'prefix_cache_hit' THEN printf('prefix_cache_hit %d: cached %d', request, args->>'cached_tokens')"
    " ELSE printf('%s %d: prompt %d, cached %d, chunk %d', name, request, args->>'prompt_tokens', args->>'cached_tokens',"
    "   args->>'chunk') END"
    " FROM slices WHERE layer = 6 AND name IN ('step', 'admit', 'resume', 'preempt', 'prefix_cache_hit') ORDER BY ts_ns, id";

static void scheduled_as_by_hand(void **state) {
    (void)state;
    char err[512], dir[] = "/tmp/test_sched_steps.XXXXXX", db[64];
    assert_non_null(mkdtemp(dir));
    snprintf(db, sizeof db, "%s/t.db", dir);
    assert_int_equal(backend_open("analytic:h100", err, sizeof err), 0);
    model m;
    assert_int_equal(model_load_analytic(&m, "tests/data/llama-3-8b.config.json", "fp16", NULL, err, sizeof err), 0);
    trace_run_info info = { .db_path = db, .command = "test_sched_steps", .model = "llama-3-8b", .device = "analytic:h100",
                            .clock_domain = "analytic" };
    assert_int_equal(trace_open(&info, err, sizeof err), 0);
    engine e;
    engine_opts o = { .max_num_batched_tokens = 64, .max_num_seqs = 4, .kv_tokens = 11 * 16 };
    assert_int_equal(engine_init(&e, &m, &o, err, sizeof err), 0);

    static int p1[100], p2[48], p3[48];
    for (int i = 0; i < 100; i++) p1[i] = 1000 + i;
    for (int i = 0; i < 48; i++) p2[i] = 2000 + i, p3[i] = i < 32 ? 1000 + i : 3000 + i - 32;
    request r[3] = { { .id = 1, .prompt = p1, .n_prompt = 100 }, { .id = 2, .prompt = p2, .n_prompt = 48 },
                     { .id = 3, .prompt = p3, .n_prompt = 48 } };
    for (int i = 0; i < 3; i++) {
        r[i].max_tokens = 3;
        assert_int_equal(engine_submit(&e, &r[i], err, sizeof err), SUBMIT_OK);
    }
    int steps = 0;
    while (engine_step(&e) && steps < 50) steps++;
    for (int i = 0; i < 3; i++) assert_string_equal(r[i].finish, "length");
    assert_int_equal(e.met.preemptions, 1);
    assert_int_equal(e.kv.n_blocks - e.bm.n_free, 0);   /* every block back */
    engine_free(&e);
    assert_int_equal(trace_close(err, sizeof err), 0);
    model_free(&m);
    backend_close();

    sqlite3 *s;
    sqlite3_stmt *q;
    assert_int_equal(sqlite3_open(db, &s), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(s, SQL, -1, &q, NULL), SQLITE_OK);
    int n = 0, bad = 0;
    for (; sqlite3_step(q) == SQLITE_ROW; n++) {
        const char *got = (const char *)sqlite3_column_text(q, 0), *want = n < N_BY_HAND ? BY_HAND[n] : "(nothing)";
        if (strcmp(got, want)) bad++, print_error("event %d: %s\n   by hand: %s\n", n, got, want);
    }
    sqlite3_finalize(q);
    sqlite3_close(s);
    unlink(db);
    rmdir(dir);
    assert_int_equal(n, N_BY_HAND);
    assert_int_equal(bad, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = { cmocka_unit_test(scheduled_as_by_hand) };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
