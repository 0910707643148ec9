/*
 * sse_parse.h -- layer 8: an OpenAI chat stream as its bytes arrive.
 *
 * The bytes are cut into lines in time linear in their number (each byte
 * is looked at once and copied at most once), and a line longer than the
 * cap is an error, not memory: a server that never sends a newline cannot
 * make the client grow. Each `data:` line is then read as one chunk.
 */
#ifndef HIPATH_SSE_PARSE_H
#define HIPATH_SSE_PARSE_H

#include <cjson/cJSON.h>
#include <stddef.h>

typedef struct {
    char *p;                     /* the line not yet ended */
    size_t len, cap;
    size_t max;                  /* the longest line allowed */
} sse_lines;

typedef void (*sse_line_fn)(void *user, const char *line, size_t len);
/* Hand each line that ends in bytes[0..n) to fn, without its "\n" or
 * "\r\n" (not NUL-terminated). 0, or -1 once a line is longer than max
 * (nothing more is handed on). */
int  sse_lines_feed(sse_lines *l, const char *bytes, size_t n, sse_line_fn fn, void *user);
void sse_lines_free(sse_lines *l);

/* One `data:` line of a chat stream, read. */
typedef struct {
    int done;                    /* data: [DONE] */
    int not_json;                /* the data is not JSON */
    cJSON *json;                 /* holds the strings below */
    const char *content;         /* choices[0].delta.content, or NULL */
    const char *finish;          /* choices[0].finish_reason, or NULL */
    const char *error;           /* error.message, or NULL */
    int usage;                   /* a usage object came with these counts: */
    int prompt_tokens, completion_tokens;   /* 0 unless a whole number 0..INT_MAX */
} sse_chunk;

/* 1 when line is a data line (c filled: free it), 0 when it carries
 * nothing (a comment, a blank line, another field). */
int  sse_chunk_read(const char *line, size_t n, sse_chunk *c);
void sse_chunk_free(sse_chunk *c);

#endif
