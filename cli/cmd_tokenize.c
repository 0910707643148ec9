/*
 * cmd_tokenize.c -- layer 7 on its own:
 *   hipath tokenize   --tokenizer FILE [--chat] [--split-special-tokens] < text -> [id, ...]
 *   hipath detokenize --tokenizer FILE < [ids] -> text
 * --chat wraps stdin as one user message in the model's chat template first.
 * --split-special-tokens: special-token text in stdin ("<|im_start|>") is
 * ordinary text, as the server's request field of that name does.
 */
#include "cli/cli.h"
#include "layers/tokenizer/tokenizer.h"
#include "layers/common/file.h"
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Parse "--tokenizer FILE" and, for tokenize, "[--chat] [--split-special-tokens]",
 * and load; NULL after printing why. */
static tokenizer *open_tokenizer(int argc, char **argv, int tokenize, int *chat, int *split) {
    const char *path = NULL;
    *chat = *split = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--tokenizer") && i + 1 < argc) path = argv[++i];
        else if (tokenize && !strcmp(argv[i], "--chat")) *chat = 1;
        else if (tokenize && !strcmp(argv[i], "--split-special-tokens")) *split = 1;
        else { path = NULL; break; }
    }
    if (!path) {
        stack_fail("usage: hipath %s --tokenizer tokenizer.json%s", argv[0], tokenize ? " [--chat] [--split-special-tokens]" : "");
        return NULL;
    }
    char err[512];
    tokenizer *t = tokenizer_load(path, err, sizeof err);
    if (!t) stack_fail("%s: %s", argv[0], err);
    return t;
}

int cmd_tokenize(int argc, char **argv) {
    int chat, split;
    tokenizer *t = open_tokenizer(argc, argv, 1, &chat, &split);
    if (!t) return 1;
    size_t len;
    char err[256] = "out of memory", *text = file_read("-", FILE_LARGE, &len, err, sizeof err), *prompt = NULL;
    const char *in = text;
    tok_span plain = { 0, len };   /* with --split-special-tokens: all of stdin, or the message */
    if (text && chat) {   /* the message is a C string: a NUL byte would end it */
        chat_message m = { "user", text };
        in = prompt = tokenizer_apply_chat_spans(t, &m, 1, &plain);
        len = prompt ? strlen(prompt) : 0;
    }
    /* Every id covers a byte or more of the normalized text, but NFC may
     * make the text longer (U+0344 becomes 4 bytes from 2): when the count
     * says so, encode again into a buffer of that size. */
    int *ids = NULL, cap = (int)len + 1, n = -1;
    for (int *p; in && (p = realloc(ids, sizeof *ids * cap)); cap = n) {
        ids = p;
        if ((n = tokenizer_encode_plain(t, in, len, &plain, split, ids, cap, err, sizeof err)) <= cap) break;
    }
    if (n >= 0) {
        putchar('[');
        for (int i = 0; i < n; i++) printf(i ? ",%d" : "%d", ids[i]);
        puts("]");
    } else stack_fail("%s: %s", argv[0], err);
    free(ids), free(prompt), free(text);
    tokenizer_free(t);
    return n < 0;
}

int cmd_detokenize(int argc, char **argv) {
    int chat, split;
    tokenizer *t = open_tokenizer(argc, argv, 0, &chat, &split);
    if (!t) return 1;
    size_t len;
    char err[256], *text = file_read("-", FILE_LARGE, &len, err, sizeof err);
    cJSON *arr = text ? cJSON_ParseWithLength(text, len) : NULL;
    int rc = 0;
    if (!text) rc = stack_fail("%s: %s", argv[0], err);
    else if (!cJSON_IsArray(arr)) rc = stack_fail("%s: stdin: not a JSON array of ids", argv[0]);
    const cJSON *e, *list = rc ? NULL : arr;
    int i = 0;
    size_t most = 0;   /* longest token, in bytes */
    cJSON_ArrayForEach(e, list) {   /* check every id before printing any text */
        size_t n;
        if (!cJSON_IsNumber(e) || e->valuedouble != e->valueint) {
            rc = stack_fail("%s: stdin: element [%d] is not an integer id", argv[0], i);
            break;
        }
        if (!tokenizer_token_bytes(t, e->valueint, &n)) {
            rc = stack_fail("%s: stdin: id %d at [%d] is not in the vocabulary", argv[0], e->valueint, i);
            break;
        }
        if (n > most) most = n;
        i++;
    }
    int cap = (int)DETOK_ROOM(most);   /* one step's text, for the longest token */
    char *out = rc ? NULL : malloc(cap);
    if (!rc && !out) rc = stack_fail("%s: out of memory", argv[0]);
    if (!rc) {
        detok_stream s;
        detok_init(&s, t);
        cJSON_ArrayForEach(e, list) fwrite(out, 1, detok_step(&s, e->valueint, out, cap), stdout);
        fwrite(out, 1, detok_flush(&s, out, cap), stdout);
    }
    free(out);
    cJSON_Delete(arr);
    free(text);
    tokenizer_free(t);
    return rc != 0;
}
