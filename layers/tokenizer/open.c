/* open.c -- a tokenizer from tokenizer.json (load.c) or from a GGUF file's metadata (gguf_vocab.c). */
#include "layers/tokenizer/tok_internal.h"
#include <string.h>

tokenizer *tokenizer_load(const char *path, char *err, int errlen) {
    size_t len = strlen(path);
    return len > 5 && !strcmp(path + len - 5, ".gguf") ? tok_load_gguf(path, err, errlen) : tok_load_json(path, err, errlen);
}
