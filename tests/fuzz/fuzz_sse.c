/* fuzz_sse.c -- the client's reading of a chat stream (layers/client/sse_parse.c): the bytes
 * cut at the places the input's first bytes say, as the network may cut them; each line read
 * as a chunk. The lines must not depend on where the bytes were cut. */
#include "layers/client/sse_parse.h"
#include "tests/fuzz/fuzz.h"
#include <string.h>

typedef struct { size_t lines, bytes; } tally;

static void on_line(void *user, const char *line, size_t n) {
    tally *t = user;
    t->lines++;
    t->bytes += n;
    sse_chunk c;
    if (sse_chunk_read(line, n, &c)) {
        if (c.prompt_tokens < 0 || c.completion_tokens < 0) abort();
        if (c.content) (void)strlen(c.content);
        sse_chunk_free(&c);
    }
}

static tally feed(const uint8_t *data, size_t size, const uint8_t *cuts, size_t ncuts, size_t max) {
    sse_lines l = { .max = max };
    tally t = { 0, 0 };
    size_t at = 0;
    for (size_t i = 0; at < size; i++) {
        size_t n = i < ncuts ? cuts[i] % 64 + 1 : size - at;
        if (n > size - at) n = size - at;
        if (sse_lines_feed(&l, (const char *)data + at, n, on_line, &t)) { t.lines = (size_t)-1; break; }
        at += n;
    }
    sse_lines_free(&l);
    return t;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2) return 0;
    size_t ncuts = data[0] % 8, max = 64 + data[1] * 4;   /* a small cap, so it is reached */
    if (size < 2 + ncuts) return 0;
    const uint8_t *cuts = data + 2;
    data += 2 + ncuts, size -= 2 + ncuts;
    tally whole = feed(data, size, NULL, 0, max), cut = feed(data, size, cuts, ncuts, max);
    if (whole.lines != cut.lines || (whole.lines != (size_t)-1 && whole.bytes != cut.bytes)) abort();
    return 0;
}
