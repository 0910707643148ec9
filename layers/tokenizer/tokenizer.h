/*
 * tokenizer.h -- layer 7: text <-> token ids.
 *
 * Byte-level BPE as Hugging Face's tokenizer.json describes it: NFC
 * normalizer, Split regex pre-tokenizer (PCRE2, Unicode classes), ByteLevel
 * byte->char mapping, ranked merges, added/special tokens matched first.
 * Decoding is incremental and UTF-8 safe, so text can stream.
 */
#ifndef HIPATH_TOKENIZER_H
#define HIPATH_TOKENIZER_H

#include "layers/common/chat.h"
#include "layers/scheduler/text.h"
#include <stddef.h>
#include <stdint.h>

typedef struct tokenizer tokenizer;

/* Load tokenizer.json (and, when present, tokenizer_config.json in the same
 * folder for the chat template and special tokens). NULL on failure with a
 * one-line reason in err naming the file and field. */
tokenizer *tokenizer_load(const char *tokenizer_json, char *err, int errlen);
void tokenizer_free(tokenizer *t);
/* For analytic runs without a tokenizer.json: bytes in as ids 0..255, every
 * id out as the text "[analytic: token N]" (placeholder.c). */
tokenizer *tokenizer_placeholder(int n_vocab, char *err, int errlen);

int tokenizer_vocab_size(const tokenizer *t);   /* highest id + 1 */
/* Id of a token string (e.g. "<|im_end|>"), or -1. */
int tokenizer_token_id(const tokenizer *t, const char *token);

/* Encode UTF-8 text. Returns the number of ids written into ids[] (at most
 * max_ids), or -1 with a reason (e.g. invalid UTF-8) in err. When the text
 * has more than max_ids tokens, returns the full count without writing past
 * max_ids, so callers can size a buffer and retry. */
int tokenizer_encode(const tokenizer *t, const char *text, size_t len,
                     int *ids, int max_ids, char *err, int errlen);
/* Bytes [from, to) of a text. */
typedef struct { size_t from, to; } tok_span;
/* The same, where the plain spans (apart, in any order) are ordinary text: an
 * added token's text there ("<|im_start|>" typed by a user) is tokenized
 * like any other text instead of becoming that token, as HF does with
 * split_special_tokens (its default is to make it the token). */
int tokenizer_encode_plain(const tokenizer *t, const char *text, size_t len, const tok_span *plain, int n_plain,
                           int *ids, int max_ids, char *err, int errlen);

/* Bytes of one token (after undoing the ByteLevel mapping). NULL if the id
 * is out of range. *len receives the length. Not NUL-terminated. */
const char *tokenizer_token_bytes(const tokenizer *t, int id, size_t *len);

/* Incremental decoder: feed ids one at a time, get the text that became
 * complete. A token that ends mid-character keeps its bytes until the
 * character completes. */
typedef struct {
    const tokenizer *t;
    char pending[8];
    int npending;
} detok_stream;
void detok_init(detok_stream *s, const tokenizer *t);
/* The room one step may need for a token of n bytes: each of its bytes,
 * and each one still pending, may come out as a 3-byte U+FFFD; and a NUL.
 * A vocabulary token may be long (a GGUF's up to 1 KiB, an added token's
 * any length): size out by the token (tokenizer_token_bytes), not by a guess. */
#define DETOK_ROOM(n) (3 * ((size_t)(n) + sizeof ((detok_stream *)0)->pending) + 1)
/* Append the newly completed UTF-8 text for `id` to out (at most cap bytes,
 * NUL-terminated); returns its length, or -1 if the id is out of range.
 * Like snprintf, a length past cap means the text did not all fit, and only
 * whole characters that did were written: give it DETOK_ROOM. */
int  detok_step(detok_stream *s, int id, char *out, int cap);
/* Bytes still pending at the end (an incomplete character) are replaced by
 * U+FFFD, as HF does. Returns the length written. */
int  detok_flush(detok_stream *s, char *out, int cap);

/* Chat template. A message list in, the prompt text out (with the
 * assistant header appended so the model answers). The template family is
 * picked from tokenizer_config.json's chat_template (ChatML or Llama-3),
 * falling back to ChatML. Returns a malloc'd string or NULL. */
char *tokenizer_apply_chat(const tokenizer *t, const chat_message *msgs, int n);
/* The same; content[i] gets where message i's content landed in the text
 * (content has room for n spans). */
char *tokenizer_apply_chat_spans(const tokenizer *t, const chat_message *msgs, int n, tok_span *content);

/* End-of-turn / end-of-text ids this tokenizer knows (<|im_end|>,
 * <|endoftext|>, <|eot_id|>...). Returns how many were written. */
int tokenizer_stop_ids(const tokenizer *t, int *ids, int max_ids);

/* The same on request req's path (traced.c), each recorded as a layer-7
 * event: going down, "chat_template" (args messages; bytes of the prompt)
 * and "tokenize" (args text; tokens, ids), which ends the client's flow
 * (hop 1) and starts the flow to the engine step that prefills (hop 2);
 * coming up, a "detokenize" instant per token (args id, text) at `step`.
 * The text to encode is NUL-terminated. */
char *tokenizer_apply_chat_traced(const tokenizer *t, const chat_message *msgs, int n, tok_span *content, int64_t req);
int tokenizer_encode_traced(const tokenizer *t, const char *text, const tok_span *plain, int n_plain, int *ids, int max_ids,
                            char *err, int errlen, int64_t req);
int detok_step_traced(detok_stream *s, int id, char *out, int cap, int64_t req, int64_t step);

/* Layer 7 as layer 6 sees it (layers/scheduler/text.h): the tokenizer at
 * path (tokenizer.json or a .gguf; NULL: the analytic placeholder for
 * n_vocab ids) behind the server's table, every call traced (codec.c). The
 * CLI hands this function to server_start. 0, or -1 with a reason. */
int tokenizer_open_text(const char *path, int n_vocab, text_codec *out, char *err, int errlen);

#endif
