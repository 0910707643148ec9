/*
 * text.h -- what layer 6 needs from a tokenizer, as a table of functions.
 *
 * The tokenizer is layer 7, above the serving framework: the request
 * passes it on the way down (chat template, encode) and its text on the
 * way up (incremental decode). So layer 6 never includes the tokenizer's
 * headers; it is handed this table by whoever assembles the stack (cli/
 * passes layer 7's tokenizer_open_text to server_start), as vLLM is handed
 * the model's own tokenizer. Each call records the tokenizer's own trace
 * events (layer 7) for request req.
 */
#ifndef HIPATH_TEXT_H
#define HIPATH_TEXT_H

#include "layers/common/chat.h"
#include <stddef.h>
#include <stdint.h>

typedef struct text_decoder text_decoder;   /* one reply's incremental decoder */

typedef struct {
    void *ctx;
    /* A chat's prompt: the chat template over the messages, encoded into at
     * most max_ids ids: the count (it may exceed max_ids, which are then
     * all that was written), or -1 with a reason in err. split_special: the
     * text of a special token inside a message ("<|im_start|>" typed by a
     * user) is ordinary text, not that token (HF's default is the token). */
    int (*encode_chat)(void *ctx, const chat_message *msgs, int n, int split_special, int *ids, int max_ids,
                       char *err, int errlen, int64_t req);
    /* The same for NUL-terminated text (a completion's prompt: no template). */
    int (*encode)(void *ctx, const char *text, int split_special, int *ids, int max_ids, char *err, int errlen, int64_t req);
    text_decoder *(*decoder)(void *ctx);                  /* NULL when out of memory */
    /* The text id completes (whole UTF-8 characters only), NUL-terminated,
     * *len bytes, in the decoder's buffer until its next call; NULL when id
     * is out of range. flush: what is still pending at the end (U+FFFD). */
    const char *(*decode)(text_decoder *d, int id, size_t *len, int64_t req, int64_t step);
    const char *(*flush)(text_decoder *d, size_t *len);
    void (*decoder_free)(text_decoder *d);
    /* A token's bytes (not NUL-terminated), *len of them; NULL when out of range. */
    const char *(*token_bytes)(void *ctx, int id, size_t *len);
    /* The end-of-turn ids it knows (<|im_end|>, <|eot_id|>...): how many were written. */
    int (*stop_ids)(void *ctx, int *ids, int cap);
    void (*close)(void *ctx);
} text_codec;

/* How the server opens the tokenizer of the model it loaded: tokenizer_path
 * (NULL: none, as for a shapes-only model) and its vocabulary size. 0, or
 * -1 with a one-line reason. */
typedef int (*text_opener)(const char *tokenizer_path, int n_vocab, text_codec *out, char *err, int errlen);

#endif
