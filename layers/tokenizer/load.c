/*
 * load.c -- tokenizer.json -> struct tokenizer: model.vocab and
 * model.merges into hash maps, added_tokens, normalizer and pre_tokenizer.
 * Anything this tokenizer would silently get wrong is refused with a
 * one-line reason naming the field.
 */
#include "layers/tokenizer/tok_internal.h"
#include "layers/common/file.h"
#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(char *err, int errlen, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

/* Every pre-tokenizer here becomes a regex whose matches and the gaps
 * between them are the pieces (HF's "Isolated" behaviour). */
static int load_pretok(tokenizer *t, const cJSON *p, const char *path, char *err, int errlen) {
    if (!p || cJSON_IsNull(p)) return 0;
    const char *type = cJSON_GetStringValue(cJSON_GetObjectItem(p, "type"));
    if (!type) return fail(err, errlen, "%s: pre_tokenizer: no type", path);
    if (!strcmp(type, "Sequence")) {
        const cJSON *q;
        cJSON_ArrayForEach(q, cJSON_GetObjectItem(p, "pretokenizers"))
            if (load_pretok(t, q, path, err, errlen)) return -1;
        return 0;
    }
    if (!strcmp(type, "ByteLevel")) {
        if (cJSON_IsTrue(cJSON_GetObjectItem(p, "add_prefix_space")))
            return fail(err, errlen, "%s: pre_tokenizer ByteLevel: add_prefix_space not supported", path);
        const cJSON *use_regex = cJSON_GetObjectItem(p, "use_regex");   /* default true */
        if (cJSON_IsFalse(use_regex)) return 0;
        return tok_add_split(t, TOK_GPT2_REGEX, 0, path, "pre_tokenizer ByteLevel", err, errlen);
    }
    if (!strcmp(type, "Digits"))   /* HF splits on every Unicode number (char::is_numeric) */
        return tok_add_split(t, cJSON_IsTrue(cJSON_GetObjectItem(p, "individual_digits")) ? "\\p{N}" : "\\p{N}+",
                         0, path, "pre_tokenizer Digits", err, errlen);
    if (!strcmp(type, "Split")) {
        const char *behavior = cJSON_GetStringValue(cJSON_GetObjectItem(p, "behavior"));
        if (!behavior || strcmp(behavior, "Isolated") || cJSON_IsTrue(cJSON_GetObjectItem(p, "invert")))
            return fail(err, errlen, "%s: pre_tokenizer Split: only behavior Isolated, invert false", path);
        const cJSON *pat = cJSON_GetObjectItem(p, "pattern");
        const char *regex = cJSON_GetStringValue(cJSON_GetObjectItem(pat, "Regex"));
        const char *literal = cJSON_GetStringValue(cJSON_GetObjectItem(pat, "String"));
        if (regex) return tok_add_split(t, regex, 0, path, "pre_tokenizer Split.pattern", err, errlen);
        if (literal) return tok_add_split(t, literal, PCRE2_LITERAL, path, "pre_tokenizer Split.pattern", err, errlen);
        return fail(err, errlen, "%s: pre_tokenizer Split: pattern has no Regex or String", path);
    }
    return fail(err, errlen, "%s: pre_tokenizer type %s not supported", path, type);
}

static int load_normalizer(tokenizer *t, const cJSON *n, const char *path, char *err, int errlen) {
    if (!n || cJSON_IsNull(n)) return 0;
    const char *type = cJSON_GetStringValue(cJSON_GetObjectItem(n, "type"));
    if (type && !strcmp(type, "NFC")) { t->nfc = 1; return 0; }
    return fail(err, errlen, "%s: normalizer type %s not supported", path, type ? type : "(none)");
}

static int load_model(tokenizer *t, const cJSON *model, const cJSON *added, const char *path,
                      char *err, int errlen) {
    const char *type = cJSON_GetStringValue(cJSON_GetObjectItem(model, "type"));
    if (type && strcmp(type, "BPE")) return fail(err, errlen, "%s: model.type %s is not BPE", path, type);
    const cJSON *vocab = cJSON_GetObjectItem(model, "vocab"), *merges = cJSON_GetObjectItem(model, "merges");
    if (!cJSON_IsObject(vocab)) return fail(err, errlen, "%s: model.vocab missing", path);
    if (!cJSON_IsArray(merges)) return fail(err, errlen, "%s: model.merges missing", path);
    t->ignore_merges = cJSON_IsTrue(cJSON_GetObjectItem(model, "ignore_merges"));

    /* Ids may have gaps; the table spans 0 .. highest id. */
    int nv = 0, max_id = -1;
    const cJSON *e;
    cJSON_ArrayForEach(e, vocab) {
        if (!cJSON_IsNumber(e) || e->valuedouble < 0 || e->valuedouble > 1e7 || e->valuedouble != e->valueint)
            return fail(err, errlen, "%s: model.vocab[\"%s\"]: id is not a small integer", path, e->string);
        if (e->valueint > max_id) max_id = e->valueint;
        nv++;
    }
    cJSON_ArrayForEach(e, added) {
        const cJSON *id = cJSON_GetObjectItem(e, "id");
        if (!cJSON_IsNumber(id) || id->valuedouble < 0 || id->valuedouble > 1e7 || id->valuedouble != id->valueint
            || !cJSON_GetStringValue(cJSON_GetObjectItem(e, "content")))
            return fail(err, errlen, "%s: added_tokens: entry without integer id and content", path);
        if (id->valueint > max_id) max_id = id->valueint;
        t->nadded++;
    }
    if (tok_tables(t, max_id + 1, nv + t->nadded, cJSON_GetArraySize(merges), t->nadded))
        return fail(err, errlen, "%s: out of memory", path);

    size_t maxlen = 1;   /* longest vocab string: bounds every token's bytes */
    cJSON_ArrayForEach(e, vocab) if (strlen(e->string) > maxlen) maxlen = strlen(e->string);
    char *scratch = malloc(2 * maxlen);
    if (!scratch) return fail(err, errlen, "%s: out of memory", path);

    int rc = 0;
    cJSON_ArrayForEach(e, vocab)
        if (tok_vocab_add(t, e->valueint, scratch, tok_bytelevel_decode(e->string, strlen(e->string), scratch)))
            { rc = fail(err, errlen, "%s: out of memory", path); goto done; }
    /* A vocabulary may lack some bytes (SmolLM2 has no token for 0xC0, 0xF5-0xFF,
     * ...): encode drops such bytes, as HF's byte-level BPE does. */
    for (int b = 0; b < 256; b++) {
        char c = (char)b;
        t->byte_id[b] = tok_vocab_find(t, &c, 1);
    }

    /* Merges come as "a b" strings or as ["a", "b"] pairs. */
    int rank = 0;
    cJSON_ArrayForEach(e, merges) {
        const char *a = NULL, *b = NULL, *s = cJSON_GetStringValue(e), *sp = s ? strchr(s, ' ') : NULL;
        size_t la = 0, lb = 0;
        if (sp && !strchr(sp + 1, ' ')) a = s, la = sp - s, b = sp + 1, lb = strlen(b);
        else if (cJSON_GetArraySize(e) == 2 && (a = cJSON_GetStringValue(cJSON_GetArrayItem(e, 0)))
                 && (b = cJSON_GetStringValue(cJSON_GetArrayItem(e, 1))))
            la = strlen(a), lb = strlen(b);
        else { rc = fail(err, errlen, "%s: model.merges[%d]: not \"a b\" or [\"a\",\"b\"]", path, rank); goto done; }
        int left = -1, right = -1, merged = -1;
        if (la <= maxlen && lb <= maxlen) {
            size_t na = tok_bytelevel_decode(a, la, scratch), nb = tok_bytelevel_decode(b, lb, scratch + na);
            left = tok_vocab_find(t, scratch, na);
            right = tok_vocab_find(t, scratch + na, nb);
            merged = tok_vocab_find(t, scratch, na + nb);
        }
        if (left < 0 || right < 0 || merged < 0)
            { rc = fail(err, errlen, "%s: model.merges[%d]: \"%.*s\" + \"%.*s\" not in model.vocab",
                        path, rank, (int)la, a, (int)lb, b); goto done; }
        tok_merge_add(t, left, right, rank++, merged);
    }

    /* Added tokens: their content is plain text, not ByteLevel. */
    int k = 0;
    cJSON_ArrayForEach(e, added) {
        const char *content = cJSON_GetObjectItem(e, "content")->valuestring;
        if (!*content) { rc = fail(err, errlen, "%s: added_tokens[%d]: empty content", path, k); goto done; }
        int id = cJSON_GetObjectItem(e, "id")->valueint;
        if (tok_vocab_add(t, id, content, strlen(content))) { rc = fail(err, errlen, "%s: out of memory", path); goto done; }
        t->added[k++] = id;
        t->added_first[(unsigned char)content[0]] = 1;
    }
done:
    free(scratch);
    return rc;
}

tokenizer *tok_load_json(const char *path, char *err, int errlen) {
    size_t len;
    char *text = file_read(path, FILE_LARGE, &len, err, errlen);
    if (!text) return NULL;
    cJSON *root = cJSON_ParseWithLength(text, len);
    free(text);
    if (!root) { fail(err, errlen, "%s: not valid JSON", path); return NULL; }
    tokenizer *t = calloc(1, sizeof *t);
    if (!t) { cJSON_Delete(root); fail(err, errlen, "%s: out of memory", path); return NULL; }
    t->eos_id = -1;
    const cJSON *model = cJSON_GetObjectItem(root, "model"), *added = cJSON_GetObjectItem(root, "added_tokens");
    int bad;
    if (added && !cJSON_IsArray(added) && !cJSON_IsNull(added))
        bad = fail(err, errlen, "%s: added_tokens is not an array", path);
    else if (!cJSON_IsObject(model))
        bad = fail(err, errlen, "%s: model missing", path);
    else
        bad = load_model(t, model, added, path, err, errlen)
              || load_normalizer(t, cJSON_GetObjectItem(root, "normalizer"), path, err, errlen)
              || load_pretok(t, cJSON_GetObjectItem(root, "pre_tokenizer"), path, err, errlen)
              || tok_load_config(t, path, err, errlen);
    cJSON_Delete(root);
    if (bad) { tokenizer_free(t); return NULL; }
    return t;
}
