/* fuzz_safetensors.c -- the safetensors header and data offsets (layers/tensor/safetensors.c). */
#include "layers/tensor/weights.h"
#include "tests/fuzz/fuzz.h"
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    /* a copy of exactly size bytes, so a read past the file is a read past the buffer */
    uint8_t *file = malloc(size ? size : 1);
    memcpy(file, data, size);
    weights w = { 0 };
    char err[512];
    if (safetensors_parse(&w, "fuzz.safetensors", file, size, err, sizeof err) == 0)
        for (int i = 0; i < w.n; i++) {   /* every tensor inside the file, on bytes of its own */
            const uint8_t *p = w.t[i].data;
            if (p < file || p + w.t[i].nbytes > file + size) abort();
            if (w.t[i].nbytes) (void)*(volatile const uint8_t *)(p + w.t[i].nbytes - 1);
        }
    weights_free(&w);
    free(file);
    return 0;
}
