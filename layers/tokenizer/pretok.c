/*
 * pretok.c -- pre-tokenizer stages: each is a PCRE2 regex (UTF, Unicode
 * classes) whose matches and the gaps between them are the pieces BPE
 * then works on (HF's "Isolated" behaviour).
 */
#include "layers/tokenizer/tok_internal.h"
#include <stdio.h>

/* GPT-2's pre-tokenizer regex: what ByteLevel(use_regex=true) splits with. */
const char *const TOK_GPT2_REGEX =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

int tok_add_split(tokenizer *t, const char *pattern, uint32_t flags, const char *path,
                     const char *field, char *err, int errlen) {
    if (t->nsplit == TOK_MAX_SPLITS)
        { snprintf(err, errlen, "%s: %s: more than %d split stages", path, field, TOK_MAX_SPLITS); return -1; }
    int code;
    PCRE2_SIZE at;
    /* Unicode classes mean nothing to a literal, and PCRE2 refuses PCRE2_UCP with PCRE2_LITERAL */
    uint32_t classes = flags & PCRE2_LITERAL ? 0 : PCRE2_UCP;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED,
                                   PCRE2_UTF | classes | flags, &code, &at, NULL);
    if (!re) {
        char msg[128];
        pcre2_get_error_message(code, (PCRE2_UCHAR *)msg, sizeof msg);
        snprintf(err, errlen, "%s: %s: regex error at %zu: %s", path, field, (size_t)at, msg);
        return -1;
    }
    pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);   /* faster if available, fine if not */
    t->split[t->nsplit++] = re;
    return 0;
}
