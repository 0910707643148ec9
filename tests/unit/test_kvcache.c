/* test_kvcache.c -- block accounting of the paged KV cache. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include "layers/tensor/kvcache.h"

static void reserve_and_release(void **state) {
    (void)state;
    kv_cache c;
    assert_int_equal(kv_init(&c, 2, 8, 16, 10, 0), 0);
    assert_int_equal(kv_token_bytes(c.n_layers, c.kv_dim), 2 * 4 * 2 * 8);
    kv_seq a = { 0 }, b = { 0 };
    assert_int_equal(kv_reserve(&c, &a, 17), 0);          /* 17 tokens -> 2 blocks */
    assert_int_equal(a.n_blocks, 2);
    assert_int_equal(c.n_free, 8);
    assert_int_equal(kv_reserve(&c, &a, 32), 0);          /* still 2 */
    assert_int_equal(a.n_blocks, 2);
    assert_int_equal(kv_reserve(&c, &b, 16 * 8 + 1), -1); /* 9 blocks > 8 free: refused, nothing taken */
    assert_int_equal(b.n_blocks, 0);
    assert_int_equal(c.n_free, 8);
    assert_int_equal(kv_reserve(&c, &b, 16 * 8), 0);
    assert_int_equal(c.n_free, 0);
    /* Blocks are distinct: no two sequences share a block. */
    for (int i = 0; i < a.n_blocks; i++)
        for (int j = 0; j < b.n_blocks; j++) assert_int_not_equal(a.blocks[i], b.blocks[j]);
    /* Slot addresses: position 16 is the first slot of a's second block. */
    float *k16 = kv_k(&c, &a, 1, 16);
    assert_ptr_equal(k16, c.k + (((size_t)1 * c.n_blocks + a.blocks[1]) * 16) * 8);
    kv_release(&c, &a);
    kv_release(&c, &b);
    assert_int_equal(c.n_free, 10);
    kv_free(&c);
}

int main(void) {
    const struct CMUnitTest tests[] = { cmocka_unit_test(reserve_and_release) };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
