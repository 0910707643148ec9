/*
 * traced.c -- layer 7 on a request's path: the chat template, encode and
 * detok_step, each recorded as the request's layer-7 event. The tokenizer
 * emits its own events, so every caller (the server, `hipath generate`)
 * shows the same layer 7. The request's flows come from its id
 * (trace_request_flow), so no flow id has to be passed in.
 */
#include "layers/tokenizer/tokenizer.h"
#include "trace/trace.h"
#include <stdio.h>
#include <string.h>

char *tokenizer_apply_chat_traced(const tokenizer *t, const chat_message *msgs, int n, tok_span *content, int64_t req) {
    trace_where w = trace_at(L_TOKENIZER, DIR_DOWN, req, NO_STEP);
    trace_begin(w, "chat_template", TRACE_ARGS(TA_INT("messages", n)));
    char *text = tokenizer_apply_chat_spans(t, msgs, n, content);
    trace_end(w, TRACE_ARGS(TA_INT("bytes", text ? (int64_t)strlen(text) : -1)));
    return text;
}

/* The first ids as a JSON array, as many as fit in cap: a long prompt's
 * list is cut short (the "tokens" arg still has the whole count). */
static void ids_json(const int *ids, int n, char *out, int cap) {
    int len = 1;
    out[0] = '[';
    for (int i = 0; i < n; i++) {
        char num[16];
        int k = snprintf(num, sizeof num, "%s%d", i ? "," : "", ids[i]);
        if (len + k + 2 > cap) break;   /* room left for "]" and the NUL */
        memcpy(out + len, num, k);
        len += k;
    }
    memcpy(out + len, "]", 2);
}

int tokenizer_encode_traced(const tokenizer *t, const char *text, const tok_span *plain, int n_plain, int *ids, int max_ids,
                            char *err, int errlen, int64_t req) {
    trace_where w = trace_at(L_TOKENIZER, DIR_DOWN, req, NO_STEP);
    trace_flow_in(trace_request_flow(req, HOP_SENT));        /* from the client's request */
    trace_flow_out(trace_request_flow(req, HOP_TOKENIZED));  /* -> the scheduler's admission */
    trace_begin(w, "tokenize", TRACE_ARGS(TA_STR("text", text)));
    int n = tokenizer_encode_plain(t, text, strlen(text), plain, n_plain, ids, max_ids, err, errlen);
    char json[512] = "";
    if (trace_enabled()) ids_json(ids, n < max_ids ? n : max_ids, json, sizeof json);   /* only for the event */
    trace_end(w, TRACE_ARGS(TA_INT("tokens", n), TA_STR("ids", json)));
    return n;
}

int detok_step_traced(detok_stream *s, int id, char *out, int cap, int64_t req, int64_t step) {
    int n = detok_step(s, id, out, cap);
    if (step == 0) {   /* the first token on its way up: from its sampling, on to the SSE stream */
        trace_flow_in(trace_request_flow(req, HOP_SAMPLED));
        trace_flow_out(trace_request_flow(req, HOP_DETOKENIZED));
    }
    trace_instant(trace_at(L_TOKENIZER, DIR_UP, req, step), "detokenize",
                  TRACE_ARGS(TA_INT("id", id), TA_STR("text", n < 0 ? "" : out)));
    return n;
}
