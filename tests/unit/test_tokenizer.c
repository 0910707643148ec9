/*
 * test_tokenizer.c -- layer 7 on a hand-made tokenizer.json, with every
 * expected id worked out by hand (see the merge table below).
 *
 * The vocabulary: ids 0-255 are the 256 single bytes (id = byte value),
 * written in GPT-2's ByteLevel spelling, which this file computes itself.
 * Then merges, ranked in order, half as "a b" strings, half as ["a","b"]:
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "layers/tokenizer/tokenizer.h"

static const struct { const char *left, *right; int pair_form; } MERGES[] = {
    { "h", "e", 0 },    /* rank 0 -> id 256 "he" */
    { "l", "l", 0 },    /* rank 1 -> 257 "ll" */
    { "ll", "o", 1 },   /* rank 2 -> 258 "llo" */
    { "he", "llo", 1 }, /* rank 3 -> 259 "hello" */
    { "l", "o", 0 },    /* rank 4 -> 260 "lo" */
    { " ", "w", 1 },    /* rank 5 -> 261 " w" */
    { "o", "r", 0 },    /* rank 6 -> 262 "or" */
    { " w", "or", 0 },  /* rank 7 -> 263 " wor" */
    { "l", "d", 1 },    /* rank 8 -> 264 "ld" */
    { "\xC3", "\xA9", 0 }, /* rank 9 -> 265 "é" */
    { "1", "2", 0 },    /* rank 10 -> 266 "12" */
    { " ", " ", 0 },    /* rank 11 -> 267 "  " */
};
#define NMERGES (int)(sizeof MERGES / sizeof *MERGES)
/* Added tokens: 300 "<|x|>", 301 "<|x|><|x|>" (longest match), 302 "<|im_end|>". */

static const char *QWEN_SPLIT =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

static char dir[64];

/* GPT-2's bytes_to_unicode: printable bytes stand for themselves, the
 * rest take U+0100, U+0101, ... in byte order. Appends UTF-8 to out. */
static void bytelevel(const char *bytes, char *out) {
    char *o = out + strlen(out);
    for (const unsigned char *b = (const unsigned char *)bytes; *b; b++) {
        int cp = *b, n = 0;
        if (!((cp >= '!' && cp <= '~') || (cp >= 0xA1 && cp <= 0xAC) || cp >= 0xAE)) {
            for (int c = 0; c < *b; c++)
                n += !((c >= '!' && c <= '~') || (c >= 0xA1 && c <= 0xAC) || c >= 0xAE);
            cp = 256 + n;
        }
        if (cp < 0x80) *o++ = (char)cp;
        else *o++ = (char)(0xC0 | cp >> 6), *o++ = (char)(0x80 | (cp & 0x3F));
    }
    *o = 0;
}

static char *bl(const char *bytes, char *buf) { buf[0] = 0; bytelevel(bytes, buf); return buf; }

/* Write <dir>/<sub>/tokenizer.json with the given pre_tokenizer (and merge
 * table, possibly broken), plus tokenizer_config.json if config != NULL. */
static void write_tokenizer(const char *sub, cJSON *pretok, int broken_merge, const char *config, char *path) {
    cJSON *root = cJSON_CreateObject(), *model = cJSON_AddObjectToObject(root, "model");
    cJSON *vocab = cJSON_AddObjectToObject(model, "vocab"), *merges = cJSON_AddArrayToObject(model, "merges");
    char a[32], b[32], ab[64];
    for (int i = 0; i < 256; i++) {
        char byte[2] = { (char)i, 0 };
        if (i == 0) strcpy(a, "\xC4\x80");   /* byte 0 -> U+0100 */
        else bl(byte, a);
        cJSON_AddNumberToObject(vocab, a, i);
    }
    for (int r = 0; r < NMERGES; r++) {
        snprintf(ab, sizeof ab, "%s%s", MERGES[r].left, MERGES[r].right);
        cJSON_AddNumberToObject(vocab, bl(ab, a), 256 + r);
        bl(MERGES[r].left, a), bl(MERGES[r].right, b);
        if (broken_merge && r == 0) strcpy(b, "zz");   /* "zz" is no token */
        if (MERGES[r].pair_form) {
            const char *pair[2] = { a, b };
            cJSON_AddItemToArray(merges, cJSON_CreateStringArray(pair, 2));
        } else {
            snprintf(ab, sizeof ab, "%s %s", a, b);
            cJSON_AddItemToArray(merges, cJSON_CreateString(ab));
        }
    }
    cJSON_AddStringToObject(model, "type", "BPE");
    cJSON *added = cJSON_AddArrayToObject(root, "added_tokens");
    const char *names[] = { "<|x|>", "<|x|><|x|>", "<|im_end|>" };
    for (int i = 0; i < 3; i++) {
        cJSON *t = cJSON_CreateObject();
        cJSON_AddNumberToObject(t, "id", 300 + i);
        cJSON_AddStringToObject(t, "content", names[i]);
        cJSON_AddBoolToObject(t, "special", 1);
        cJSON_AddItemToArray(added, t);
    }
    cJSON *norm = cJSON_AddObjectToObject(root, "normalizer");
    cJSON_AddStringToObject(norm, "type", "NFC");
    cJSON_AddItemToObject(root, "pre_tokenizer", pretok);

    char d[128];
    snprintf(d, sizeof d, "%s/%s", dir, sub);
    mkdir(d, 0755);
    snprintf(path, 160, "%s/tokenizer.json", d);
    char *text = cJSON_Print(root);
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
    free(text);
    cJSON_Delete(root);
    if (config) {
        snprintf(d, sizeof d, "%s/%s/tokenizer_config.json", dir, sub);
        f = fopen(d, "w");
        fputs(config, f);
        fclose(f);
    }
}

static cJSON *bytelevel_pretok(int use_regex) {
    cJSON *p = cJSON_CreateObject();
    cJSON_AddStringToObject(p, "type", "ByteLevel");
    cJSON_AddBoolToObject(p, "add_prefix_space", 0);
    cJSON_AddBoolToObject(p, "use_regex", use_regex);
    return p;
}

/* Qwen's layout: Sequence[Split(regex, Isolated), ByteLevel(use_regex=false)]. */
static cJSON *qwen_pretok(void) {
    cJSON *seq = cJSON_CreateObject(), *split = cJSON_CreateObject();
    cJSON_AddStringToObject(seq, "type", "Sequence");
    cJSON *list = cJSON_AddArrayToObject(seq, "pretokenizers");
    cJSON_AddStringToObject(split, "type", "Split");
    cJSON_AddStringToObject(cJSON_AddObjectToObject(split, "pattern"), "Regex", QWEN_SPLIT);
    cJSON_AddStringToObject(split, "behavior", "Isolated");
    cJSON_AddBoolToObject(split, "invert", 0);
    cJSON_AddItemToArray(list, split);
    cJSON_AddItemToArray(list, bytelevel_pretok(0));
    return seq;
}

/* SmolLM2's layout: Sequence[Digits(individual), ByteLevel(use_regex=true)]. */
static cJSON *digits_pretok(void) {
    cJSON *seq = cJSON_CreateObject(), *digits = cJSON_CreateObject();
    cJSON_AddStringToObject(seq, "type", "Sequence");
    cJSON *list = cJSON_AddArrayToObject(seq, "pretokenizers");
    cJSON_AddStringToObject(digits, "type", "Digits");
    cJSON_AddBoolToObject(digits, "individual_digits", 1);
    cJSON_AddItemToArray(list, digits);
    cJSON_AddItemToArray(list, bytelevel_pretok(1));
    return seq;
}

static const char *QWEN_CONFIG =
    "{\"eos_token\": \"<|x|>\", \"chat_template\": \"{%- if messages[0]['role'] == 'system' %}"
    "{{- '<|im_start|>system\\\\n' + messages[0]['content'] + '<|im_end|>\\\\n' }}{%- else %}"
    "{{- '<|im_start|>system\\\\nYou are Tiny.\\\\nBe brief.<|im_end|>\\\\n' }}{%- endif %}"
    "{%- for message in messages %}{{- '<|im_start|>' + message.role + '\\\\n' + message.content + "
    "'<|im_end|>' + '\\\\n' }}{%- endfor %}{{- '<|im_start|>assistant\\\\n' }}\"}";

/* Real newlines inside the literals here (JSON \n), as Llama-3's template has. */
static const char *LLAMA_CONFIG =
    "{\"eos_token\": {\"content\": \"<|im_end|>\"}, \"chat_template\": \"{{- bos_token }}"
    "{%- if messages[0]['role'] != 'system' %}{{- '<|start_header_id|>system<|end_header_id|>\\n\\n"
    "Be kind.<|eot_id|>' }}{%- endif %}"
    "{%- for message in messages %}{{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\\\n\\\\n'"
    " + message['content'] | trim + '<|eot_id|>' }}{%- endfor %}\"}";

static tokenizer *tq;   /* the Qwen-layout tokenizer */

static int setup(void **state) {
    (void)state;
    strcpy(dir, "/tmp/hipath_tok_XXXXXX");
    if (!mkdtemp(dir)) return -1;
    char path[160], err[256];
    write_tokenizer("qwen", qwen_pretok(), 0, QWEN_CONFIG, path);
    tq = tokenizer_load(path, err, sizeof err);
    if (!tq) fprintf(stderr, "%s\n", err);
    return tq ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    tokenizer_free(tq);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd);
}

static void expect_ids(const tokenizer *t, const char *text, const int *want, int nwant) {
    int ids[64];
    char err[128];
    int n = tokenizer_encode(t, text, strlen(text), ids, 64, err, sizeof err);
    if (n != nwant) fprintf(stderr, "\"%s\": %d ids, want %d\n", text, n, nwant);
    assert_int_equal(n, nwant);
    for (int i = 0; i < n; i++) {
        if (ids[i] != want[i]) fprintf(stderr, "\"%s\": ids[%d] = %d, want %d\n", text, i, ids[i], want[i]);
        assert_int_equal(ids[i], want[i]);
    }
}
#define EXPECT(t, text, ...) do { int w_[] = { __VA_ARGS__ }; expect_ids(t, text, w_, sizeof w_ / sizeof *w_); } while (0)

static void test_vocab(void **state) {
    (void)state;
    assert_int_equal(tokenizer_vocab_size(tq), 303);
    assert_int_equal(tokenizer_token_id(tq, "hello"), 259);
    assert_int_equal(tokenizer_token_id(tq, "<|x|>"), 300);
    assert_int_equal(tokenizer_token_id(tq, "nope"), -1);
    size_t n;
    const char *b = tokenizer_token_bytes(tq, 263, &n);   /* ByteLevel "Ġwor" is the bytes " wor" */
    assert_non_null(b);
    assert_int_equal(n, 4);
    assert_memory_equal(b, " wor", 4);
    assert_null(tokenizer_token_bytes(tq, 270, &n));     /* a gap in the ids */
    assert_null(tokenizer_token_bytes(tq, 303, &n));
    assert_null(tokenizer_token_bytes(tq, -1, &n));
}

static void test_bpe(void **state) {
    (void)state;
    /* h e l l o: he (rank 0), ll (1), llo (2), hello (3). " world": Ġw (5),
     * or (6), Ġwor (7), ld (8). */
    EXPECT(tq, "hello world", 259, 263, 264);
    /* o l l o: ll (rank 1) beats lo (rank 4), then llo. */
    EXPECT(tq, "ollo", 'o', 258);
    /* Equal ranks merge leftmost first: (ll)l, not l(ll). */
    EXPECT(tq, "lll", 257, 'l');
    EXPECT(tq, "llll", 257, 257);
    EXPECT(tq, "lo", 260);
    /* Added tokens are cut out before BPE; "<|x|><|x|>" is the longer match. */
    EXPECT(tq, "hello<|x|>world", 259, 300, 'w', 262, 264);
    EXPECT(tq, "<|x|><|x|><|x|>", 301, 300);
    EXPECT(tq, "<|x|", '<', '|', 'x', '|');
    /* NFC: e + U+0301 becomes é (C3 A9), which merges (rank 9). */
    EXPECT(tq, "e\xCC\x81", 265);
    int ids[1];
    char err[64];
    assert_int_equal(tokenizer_encode(tq, "", 0, ids, 1, err, sizeof err), 0);
}

static void test_pretokenizer(void **state) {
    (void)state;
    /* Qwen's regex: digits one by one, so "1 2" (rank 10) never applies. */
    EXPECT(tq, "12", '1', '2');
    /* \s+(?!\S) leaves the last space to the next word: "a", " ", " b". */
    EXPECT(tq, "a  b", 'a', ' ', ' ', 'b');
    EXPECT(tq, "a  ", 'a', 267);
    EXPECT(tq, "x\r\n", 'x', '\r', '\n');

    char path[160], err[256];
    write_tokenizer("gpt2", bytelevel_pretok(1), 0, NULL, path);   /* ' ?\p{N}+': "12" stays whole */
    tokenizer *t = tokenizer_load(path, err, sizeof err);
    assert_non_null(t);
    EXPECT(t, "12", 266);
    EXPECT(t, "a  b", 'a', ' ', ' ', 'b');
    EXPECT(t, "hello world", 259, 263, 264);
    tokenizer_free(t);

    write_tokenizer("digits", digits_pretok(), 0, NULL, path);
    t = tokenizer_load(path, err, sizeof err);
    assert_non_null(t);
    EXPECT(t, "12", '1', '2');
    EXPECT(t, "hello world", 259, 263, 264);
    tokenizer_free(t);
}

static void test_overflow(void **state) {
    (void)state;
    int ids[3] = { -7, -7, -7 };
    char err[128];
    assert_int_equal(tokenizer_encode(tq, "hello world", 11, ids, 1, err, sizeof err), 3);
    assert_int_equal(ids[0], 259);
    assert_int_equal(ids[1], -7);
}

static void test_invalid_utf8(void **state) {
    (void)state;
    const char *bad[] = { "\xFF", "a\xC3", "\xC0\x80", "\xED\xA0\x80", "\xF4\x90\x80\x80", "ok\x80" };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        int ids[8];
        char err[128] = "";
        assert_int_equal(tokenizer_encode(tq, bad[i], strlen(bad[i]), ids, 8, err, sizeof err), -1);
        assert_non_null(strstr(err, "invalid UTF-8"));
    }
}

static void step(detok_stream *s, int id, const char *want) {
    char out[32];
    int n = detok_step(s, id, out, sizeof out);
    assert_int_equal(n, (int)strlen(want));
    assert_string_equal(out, want);
}

static void test_detok(void **state) {
    (void)state;
    detok_stream s;
    char out[32];
    detok_init(&s, tq);
    /* 你 = E4 BD A0, one byte token at a time: nothing until the third. */
    step(&s, 0xE4, "");
    step(&s, 0xBD, "");
    step(&s, 0xA0, "\xE4\xBD\xA0");
    step(&s, 259, "hello");
    step(&s, 0xC3, "");              /* é split across two tokens */
    step(&s, 0xA9, "\xC3\xA9");
    step(&s, 300, "<|x|>");          /* special tokens decode to their text */
    step(&s, 0xC3, "");
    step(&s, 'h', "\xEF\xBF\xBDh");  /* an interrupted character becomes U+FFFD */
    assert_int_equal(detok_step(&s, 270, out, sizeof out), -1);
    step(&s, 0xE4, "");
    assert_int_equal(detok_flush(&s, out, sizeof out), 3);   /* unfinished at the end */
    assert_string_equal(out, "\xEF\xBF\xBD");
    assert_int_equal(detok_flush(&s, out, sizeof out), 0);
    /* Output that does not fit is cut at a character, the length still counted. */
    assert_int_equal(detok_step(&s, 259, out, 4), 5);
    assert_string_equal(out, "hel");
}

static void test_chat(void **state) {
    (void)state;
    chat_message user = { "user", "hi" }, two[] = { { "system", "Sys." }, { "user", "hi" } };
    char *p = tokenizer_apply_chat(tq, &user, 1);
    assert_string_equal(p, "<|im_start|>system\nYou are Tiny.\nBe brief.<|im_end|>\n"
                           "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
    free(p);
    p = tokenizer_apply_chat(tq, two, 2);
    assert_string_equal(p, "<|im_start|>system\nSys.<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n"
                           "<|im_start|>assistant\n");
    free(p);
    int ids[8];
    assert_int_equal(tokenizer_stop_ids(tq, ids, 8), 2);   /* <|im_end|>, then eos_token */
    assert_int_equal(ids[0], 302);
    assert_int_equal(ids[1], 300);

    char path[160], err[256];
    write_tokenizer("llama", qwen_pretok(), 0, LLAMA_CONFIG, path);
    tokenizer *t = tokenizer_load(path, err, sizeof err);
    assert_non_null(t);
    chat_message spaced = { "user", " hi \n" };
    p = tokenizer_apply_chat(t, &spaced, 1);
    assert_string_equal(p, "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe kind.<|eot_id|>"
                           "<|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>"
                           "<|start_header_id|>assistant<|end_header_id|>\n\n");
    free(p);
    assert_int_equal(tokenizer_stop_ids(t, ids, 8), 1);
    assert_int_equal(ids[0], 302);
    tokenizer_free(t);

    write_tokenizer("plain", qwen_pretok(), 0, NULL, path);   /* no config: ChatML, no default */
    t = tokenizer_load(path, err, sizeof err);
    assert_non_null(t);
    p = tokenizer_apply_chat(t, &user, 1);
    assert_string_equal(p, "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
    free(p);
    tokenizer_free(t);
}

/* Plain spans in any order (DeepSeek's template writes the system message
 * first, whatever its index): each stays ordinary text. */
static void test_plain_spans(void **state) {
    (void)state;
    const char *text = "<|im_end|>x<|im_end|>";
    tok_span order[] = { { 0, 10 }, { 11, 21 } }, reversed[] = { { 11, 21 }, { 0, 10 } };
    int a[64], b[64], c[64];
    char err[128];
    int na = tokenizer_encode_plain(tq, text, strlen(text), order, 2, a, 64, err, sizeof err);
    int nb = tokenizer_encode_plain(tq, text, strlen(text), reversed, 2, b, 64, err, sizeof err);
    int nc = tokenizer_encode(tq, text, strlen(text), c, 64, err, sizeof err);
    assert_int_equal(nc, 3);   /* the token, x, the token */
    assert_true(na > nc);
    assert_int_equal(nb, na);
    assert_memory_equal(a, b, na * sizeof *a);
}

static void test_load_errors(void **state) {
    (void)state;
    char path[160], err[256] = "";
    assert_null(tokenizer_load("/nonexistent/tokenizer.json", err, sizeof err));
    assert_non_null(strstr(err, "/nonexistent/tokenizer.json"));
    write_tokenizer("broken", qwen_pretok(), 1, NULL, path);
    assert_null(tokenizer_load(path, err, sizeof err));
    assert_non_null(strstr(err, "model.merges[0]"));

    snprintf(path, sizeof path, "%s/notjson.json", dir);
    FILE *f = fopen(path, "w");
    fputs("{\"model\": {\"vocab\": ", f);
    fclose(f);
    assert_null(tokenizer_load(path, err, sizeof err));
    assert_non_null(strstr(err, "not valid JSON"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vocab),
        cmocka_unit_test(test_bpe),
        cmocka_unit_test(test_pretokenizer),
        cmocka_unit_test(test_overflow),
        cmocka_unit_test(test_invalid_utf8),
        cmocka_unit_test(test_detok),
        cmocka_unit_test(test_chat),
        cmocka_unit_test(test_plain_spans),
        cmocka_unit_test(test_load_errors),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
