/* fuzz_gguf.c -- a GGUF file as a model (layers/tensor/gguf.c, gguf_model.c, bind.c) and as a
 * tokenizer (layers/tokenizer/gguf_vocab.c). */
#include "kernels/backend.h"
#include "layers/tensor/model.h"
#include "layers/tokenizer/tokenizer.h"
#include "tests/fuzz/fuzz.h"
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static int ready;
    char err[512];
    if (!ready++ && backend_open("cpu", err, sizeof err)) { fprintf(stderr, "%s\n", err); abort(); }
    const char *path = fuzz_file("model.gguf", data, size);
    model m;
    if (model_load(&m, path, err, sizeof err) == 0) model_free(&m);
    tokenizer *t = tokenizer_load(path, err, sizeof err);
    if (t) {
        int ids[64];
        const char *text = "Hello, world! 你好";
        tokenizer_encode(t, text, strlen(text), ids, 64, err, sizeof err);
        tokenizer_free(t);
    }
    return 0;
}
