/*
 * tok_internal.h -- what the tokenizer's files share (not part of the API):
 * the tokenizer struct, its two hash maps, and small helpers.
 */
#ifndef HIPATH_TOK_INTERNAL_H
#define HIPATH_TOK_INTERNAL_H

#include "layers/tokenizer/tokenizer.h"
#include <stdint.h>
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#define TOK_MAX_SPLITS 4

/* One vocabulary entry: its bytes live in tokenizer.bytes[off .. off+len).
 * len < 0: no token has this id (ids may have gaps). */
typedef struct { size_t off; int len; } tok_entry;

/* A slot of the bytes -> id map: id -1 is empty; h is the hash's high half. */
typedef struct { uint32_t h; int id; } tok_slot;

/* One merge rule "left right -> merged", with its rank (lower merges first). */
typedef struct { uint64_t pair; int rank, merged; } tok_merge;

struct tokenizer {
    int n_vocab;              /* highest id + 1 */
    tok_entry *tok;           /* [n_vocab] */
    char *bytes;              /* every token's bytes, back to back */
    size_t nbytes, capbytes;
    tok_slot *vocab;          /* open-addressing map: token bytes -> id */
    int vocab_cap;            /* power of two */
    tok_merge *merges;        /* open-addressing map: (left, right) -> merge (rank -1 empty) */
    int merges_cap;           /* power of two */
    int byte_id[256];         /* token of each single byte: where BPE starts */
    int ignore_merges;        /* a word that is itself a token skips BPE (Llama-3) */
    int nfc;                  /* normalizer: NFC or none */
    pcre2_code *split[TOK_MAX_SPLITS]; /* pre-tokenizer stages, each "Isolated" */
    int nsplit;
    int *added;               /* ids of added/special tokens, matched before BPE */
    int nadded;
    unsigned char added_first[256]; /* can an added token start with this byte? */
    enum { CHAT_CHATML, CHAT_LLAMA3, CHAT_DEEPSEEK } family;   /* the chat template's (chat.c) */
    char *default_system;     /* system prompt the template inserts, or NULL */
    char *bos;                /* tokenizer_config.json bos_token's text (DeepSeek's template opens with it), or NULL */
    int eos_id;               /* tokenizer_config.json eos_token, or -1 */
};

/* vocab.c */
int  tok_vocab_add(tokenizer *t, int id, const char *b, size_t n);
int  tok_vocab_find(const tokenizer *t, const char *b, size_t n);
void tok_merge_add(tokenizer *t, int left, int right, int rank, int merged);
const tok_merge *tok_merge_find(const tokenizer *t, int left, int right);

/* bytelevel.c: GPT-2's reversible byte <-> printable-character map. */
/* Decode a ByteLevel token string into bytes (out needs n bytes). Chars
 * outside the map are copied as UTF-8. Returns the byte count. */
size_t tok_bytelevel_decode(const char *s, size_t n, char *out);

/* utf8.c: length of the UTF-8 character at s (n bytes available): > 0 a
 * whole valid character; 0 a valid but unfinished prefix; -k invalid, with
 * k the bytes to replace by one U+FFFD (Unicode's "maximal subpart"). */
int tok_utf8_char(const unsigned char *s, size_t n);

/* vocab.c: the smallest power of two >= 16 above 2n (a hash table's size). */
int tok_pow2_above(int n);
/* vocab.c: t's tables, empty, for n_vocab ids, n_strings vocabulary
 * strings, n_merges merges and n_added added tokens (one loader each:
 * load.c, gguf_vocab.c, placeholder.c). 0, or -1 when out of memory
 * (tokenizer_free frees what was made). */
int tok_tables(tokenizer *t, int n_vocab, int n_strings, int n_merges, int n_added);
/* pretok.c: append a pre-tokenizer stage (PCRE2 pattern, compiled UTF+UCP). */
int tok_add_split(tokenizer *t, const char *pattern, uint32_t flags, const char *path,
                  const char *field, char *err, int errlen);
extern const char *const TOK_GPT2_REGEX;   /* ByteLevel's default split */

/* load.c: the tokenizer of a tokenizer.json. */
tokenizer *tok_load_json(const char *path, char *err, int errlen);
/* gguf_vocab.c: the same tokenizer from a GGUF file's tokenizer.ggml.* metadata. */
tokenizer *tok_load_gguf(const char *path, char *err, int errlen);

/* chat.c: read tokenizer_config.json next to tokenizer_json, if there. */
int tok_load_config(tokenizer *t, const char *tokenizer_json, char *err, int errlen);
/* chat.c: pick the chat family and default system prompt from a Jinja
 * chat template's source. */
void tok_set_template(tokenizer *t, const char *tmpl);

#endif
