/* test_kvcache.c -- the paged KV cache's slots, and the block manager's
 * accounting and prefix cache (layers/scheduler/blocks.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include "layers/tensor/kvcache.h"
#include "layers/scheduler/blocks.h"

static void slots_and_blocks(void **state) {
    (void)state;
    kv_cache c;
    block_manager bm;
    assert_int_equal(kv_init(&c, 2, 8, 2, 16, 10, 0), 0);
    assert_int_equal(blocks_init(&bm, 10, 16, 0), 0);
    assert_int_equal(kv_token_bytes(c.n_layers, c.kv_dim), 2 * 4 * 2 * 8);
    kv_seq a = { 0 }, b = { 0 };
    assert_int_equal(blocks_allocate(&bm, &a, NULL, 0, 17), 0);          /* 17 tokens -> 2 blocks */
    assert_int_equal(a.n_blocks, 2);
    assert_int_equal(bm.n_free, 8);
    assert_int_equal(blocks_allocate(&bm, &a, NULL, 0, 32), 0);          /* still 2 */
    assert_int_equal(a.n_blocks, 2);
    assert_int_equal(blocks_allocate(&bm, &b, NULL, 0, 16 * 8 + 1), -1); /* 9 blocks > 8 free: refused, nothing taken */
    assert_int_equal(b.n_blocks, 0);
    assert_int_equal(bm.n_free, 8);
    assert_int_equal(blocks_allocate(&bm, &b, NULL, 0, 16 * 8), 0);
    assert_int_equal(bm.n_free, 0);
    for (int i = 0; i < a.n_blocks; i++)   /* no two sequences share a block without the prefix cache */
        for (int j = 0; j < b.n_blocks; j++) assert_int_not_equal(a.blocks[i], b.blocks[j]);
    /* Slot addresses: position 16 is the first slot of a's second block. */
    float *k16 = kv_k(&c, &a, 1, 16);
    assert_ptr_equal(k16, c.k + (((size_t)1 * c.n_blocks + a.blocks[1]) * 16) * 8);
    blocks_release(&bm, &a);
    blocks_release(&bm, &b);
    assert_int_equal(bm.n_free, 10);
    blocks_free(&bm);
    kv_free(&c);
}

/* Two prompts that share 40 ids: the second finds the first's two full
 * blocks (not the partial third), shares them, and a third prompt that
 * differs in its 20th id finds only the first. Freed, they stay findable
 * until their blocks are taken for new tokens, the least recently freed
 * first; then they are gone. */
static void prefix_cache(void **state) {
    (void)state;
    block_manager bm;
    assert_int_equal(blocks_init(&bm, 6, 16, 1), 0);
    int p[48], q[48], hit[8];
    for (int i = 0; i < 48; i++) p[i] = q[i] = 1000 + i;
    q[19] = 7;
    kv_seq a = { 0 }, b = { 0 }, c = { 0 };
    assert_int_equal(blocks_lookup(&bm, 0, p, 40, hit, 8), 0);   /* cold */
    assert_int_equal(blocks_allocate(&bm, &a, NULL, 0, 40), 0);
    a.len = 40;
    blocks_commit(&bm, &a, 0, p, 40);
    assert_int_equal(a.n_hashed, 2);
    assert_int_equal(blocks_lookup(&bm, 0, p, 47, hit, 8), 2);
    assert_int_equal(hit[0], a.blocks[0]);
    assert_int_equal(hit[1], a.blocks[1]);
    assert_int_equal(blocks_lookup(&bm, 0, p, 31, hit, 8), 1);   /* at most 31 ids: one whole block */
    assert_int_equal(blocks_lookup(&bm, 7, p, 47, hit, 8), 0);   /* another salt: nothing shared */
    assert_int_equal(blocks_lookup(&bm, 0, p, 47, hit, 8), 2);
    assert_int_equal(blocks_allocate(&bm, &b, hit, 2, 48), 0);
    assert_int_equal(b.len, 32);
    assert_int_equal(b.n_blocks, 3);
    assert_int_equal(bm.b[a.blocks[0]].ref, 2);
    assert_int_equal(bm.n_free, 2);   /* 6 - a's 3 - b's one new */
    assert_int_equal(blocks_lookup(&bm, 0, q, 47, hit, 8), 1);   /* differs in block 1 */
    blocks_release(&bm, &a);
    blocks_release(&bm, &b);
    assert_int_equal(bm.n_free, 6);
    /* freed, still a hit; taking c's 4 blocks reuses the never-used ones and
     * the freed tails first, so the prefix's head survives */
    assert_int_equal(blocks_lookup(&bm, 0, p, 47, hit, 8), 2);
    assert_int_equal(blocks_needed(&bm, &c, hit, 2, 48), 3);
    assert_int_equal(blocks_allocate(&bm, &c, NULL, 0, 16 * 4), 0);
    assert_int_equal(blocks_lookup(&bm, 0, p, 47, hit, 8), 2);
    c.len = 64;
    for (int i = 0; i < 48; i++) q[i] = 5000 + i;
    blocks_release(&bm, &c);
    kv_seq d = { 0 };
    assert_int_equal(blocks_allocate(&bm, &d, NULL, 0, 16 * 6), 0);   /* every block: the cache is emptied */
    assert_int_equal(blocks_lookup(&bm, 0, p, 47, hit, 8), 0);
    assert_true(bm.evictions >= 2);
    blocks_release(&bm, &d);
    blocks_free(&bm);
}

/* A prefix is a hit block by block from its start: another first block
 * finds nothing, whatever follows; once its blocks are taken for new
 * tokens it is no hit at all. */
static void confirmed_chain(void **state) {
    (void)state;
    block_manager bm;
    assert_int_equal(blocks_init(&bm, 4, 2, 1), 0);
    int p[] = { 1, 2, 3, 4, 9 }, q[] = { 5, 6, 3, 4, 9 }, hit[4];
    kv_seq a = { 0 }, b = { 0 };
    assert_int_equal(blocks_allocate(&bm, &a, NULL, 0, 4), 0);
    a.len = 4;
    blocks_commit(&bm, &a, 0, p, 4);
    assert_int_equal(blocks_lookup(&bm, 0, p, 4, hit, 4), 2);
    assert_int_equal(blocks_lookup(&bm, 0, q, 4, hit, 4), 0);
    blocks_release(&bm, &a);
    assert_int_equal(blocks_allocate(&bm, &b, NULL, 0, 8), 0);   /* all 4: p's blocks reused */
    b.len = 8;
    assert_int_equal(blocks_lookup(&bm, 0, p, 4, hit, 4), 0);
    blocks_release(&bm, &b);
    blocks_free(&bm);
}

int main(void) {
    const struct CMUnitTest tests[] = { cmocka_unit_test(slots_and_blocks), cmocka_unit_test(prefix_cache),
                                        cmocka_unit_test(confirmed_chain) };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
