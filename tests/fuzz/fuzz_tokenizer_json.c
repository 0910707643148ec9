/* fuzz_tokenizer_json.c -- tokenizer.json loading (layers/tokenizer/load.c, pretok.c, vocab.c),
 * then a little encoding and decoding with whatever loaded. */
#include "layers/tokenizer/tokenizer.h"
#include "tests/fuzz/fuzz.h"
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char err[512];
    tokenizer *t = tokenizer_load(fuzz_file("tokenizer.json", data, size), err, sizeof err);
    if (!t) return 0;
    const char *text = "Hi <|im_start|> caf\xc3\xa9 2024";
    int ids[64], n = tokenizer_encode(t, text, strlen(text), ids, 64, err, sizeof err);
    detok_stream s;
    detok_init(&s, t);
    for (int i = 0; i < n && i < 64; i++) {
        size_t len;
        if (!tokenizer_token_bytes(t, ids[i], &len)) abort();   /* encode gives ids of the vocabulary */
        char *out = malloc(DETOK_ROOM(len));
        detok_step(&s, ids[i], out, (int)DETOK_ROOM(len));
        free(out);
    }
    tokenizer_free(t);
    return 0;
}
