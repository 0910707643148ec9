/* fuzz_tokenizer.c -- models/tiny-hi's tokenizer on any text and any ids: encode (with and
 * without plain spans), the chat template, incremental decode (layers/tokenizer/). The first
 * byte picks what the rest is. */
#include "layers/tokenizer/tokenizer.h"
#include "tests/fuzz/fuzz.h"
#include <string.h>

static tokenizer *tok;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc; (void)argv;
    char err[512];
    const char *path = getenv("HIPATH_FUZZ_TOKENIZER");
    if (!(tok = tokenizer_load(path ? path : "models/tiny-hi/tokenizer.json", err, sizeof err))) {
        fprintf(stderr, "%s (run from the repository's root, or set HIPATH_FUZZ_TOKENIZER)\n", err);
        abort();
    }
    return 0;
}

/* ids from pairs of bytes, through the incremental decoder */
static void decode(const uint8_t *data, size_t size) {
    detok_stream s;
    detok_init(&s, tok);
    int V = tokenizer_vocab_size(tok);
    for (size_t i = 0; i + 1 < size; i += 2) {
        int id = (data[i] | data[i + 1] << 8) % (V + 8) - 4;   /* some out of range on both sides */
        size_t n;
        if (!tokenizer_token_bytes(tok, id, &n)) { char none[8]; if (detok_step(&s, id, none, sizeof none) != -1) abort(); continue; }
        char *out = malloc(DETOK_ROOM(n));
        int k = detok_step(&s, id, out, (int)DETOK_ROOM(n));
        if (k < 0 || (size_t)k >= DETOK_ROOM(n)) abort();   /* the room it says is enough is */
        free(out);
    }
    char tail[16];
    if (detok_flush(&s, tail, sizeof tail) >= (int)sizeof tail) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!size) return 0;
    int mode = data[0] % 4;
    data++, size--;
    if (mode == 3) { decode(data, size); return 0; }
    char *text = malloc(size + 1), err[256];
    memcpy(text, data, size);
    text[size] = 0;
    int cap = 8, *ids = malloc(cap * sizeof *ids), n;
    tok_span plain = { size / 3, size - size / 4 }, *spans = mode == 1 ? &plain : NULL;
    if (mode == 2) {   /* a chat of one message: its content, where it landed, plain */
        chat_message m = { "user", text };
        char *prompt = tokenizer_apply_chat_spans(tok, &m, 1, &plain);
        if (prompt) {
            size_t len = strlen(prompt);
            if (plain.from > plain.to || plain.to > len) abort();
            while ((n = tokenizer_encode_plain(tok, prompt, len, &plain, 1, ids, cap, err, sizeof err)) > cap)
                ids = realloc(ids, (cap = n) * sizeof *ids);
            free(prompt);
        }
    } else {
        while ((n = tokenizer_encode_plain(tok, text, size, spans, spans != NULL, ids, cap, err, sizeof err)) > cap)
            ids = realloc(ids, (cap = n) * sizeof *ids);
        for (int i = 0; i < n; i++) if (ids[i] < 0 || ids[i] >= tokenizer_vocab_size(tok)) abort();
    }
    free(ids);
    free(text);
    return 0;
}
