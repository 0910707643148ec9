/* engine.c -- layer 6: prefill, then decode token by token. */
#include "layers/scheduler/engine.h"
#include "trace/trace.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int engine_init(engine *e, const model *m, int max_tokens_per_step, int max_seqs, int kv_tokens,
                char *err, int errlen) {
    memset(e, 0, sizeof *e);
    e->m = m;
    const model_config *c = &m->cfg;
    int blocks = (kv_tokens + KV_BLOCK_SIZE - 1) / KV_BLOCK_SIZE;
    if (kv_init(&e->kv, c->n_layers, c->n_kv_heads * c->head_dim, KV_BLOCK_SIZE, blocks) ||
        forward_state_init(&e->fs, c, max_tokens_per_step, max_seqs) ||
        !(e->logits = malloc((size_t)c->vocab_size * sizeof(float))) ||
        !(e->work = malloc(2 * (size_t)c->vocab_size * sizeof(float)))) {
        snprintf(err, errlen, "out of memory for the KV cache (%d tokens) and step buffers", kv_tokens);
        engine_free(e);
        return -1;
    }
    return 0;
}

void engine_free(engine *e) {
    kv_free(&e->kv);
    forward_state_free(&e->fs);
    free(e->logits); free(e->work);
    memset(e, 0, sizeof *e);
}

static int is_stop(const request *r, int id) {
    for (int i = 0; i < r->n_stop; i++) if (r->stop_ids[i] == id) return 1;
    return 0;
}

int engine_generate(engine *e, request *r, char *err, int errlen) {
    const model_config *c = &e->m->cfg;
    if (r->n_prompt < 1 || r->n_prompt > e->fs.max_tokens) {
        snprintf(err, errlen, "prompt of %d tokens: need 1 to %d", r->n_prompt, e->fs.max_tokens); return -1;
    }
    if (r->n_prompt + r->max_tokens > c->max_seq_len) {
        snprintf(err, errlen, "prompt (%d) + max tokens (%d) exceeds the context length %d", r->n_prompt, r->max_tokens, c->max_seq_len);
        return -1;
    }
    for (int i = 0; i < r->n_prompt; i++)
        if (r->prompt[i] < 0 || r->prompt[i] >= c->vocab_size) {
            snprintf(err, errlen, "token id %d is outside the vocabulary (0..%d)", r->prompt[i], c->vocab_size - 1); return -1;
        }
    trace_where w = { .layer = L_SCHEDULER, .dir = DIR_DOWN, .req = r->id, .step = -1, .clock = CLOCK_MEASURED };
    if (kv_reserve(&e->kv, &r->kv, r->n_prompt + r->max_tokens)) {
        snprintf(err, errlen, "KV cache too small: %d tokens need %d blocks, %d free", r->n_prompt + r->max_tokens,
                 kv_blocks_for(&e->kv, r->n_prompt + r->max_tokens), e->kv.n_free);
        return -1;
    }
    trace_arg aa[] = { TA_INT("blocks", r->kv.n_blocks), TA_INT("block_size", e->kv.block_size),
                       TA_INT("free_blocks", e->kv.n_free), TA_DBL("kv_bytes", (double)r->kv.n_blocks * e->kv.block_size * kv_bytes_per_token(&e->kv)) };
    trace_instant(w, "kv_alloc", 4, aa);
    trace_counter(w, "kv_blocks_used", e->kv.n_blocks - e->kv.n_free, 0);

    r->n_out = 0;
    r->finish = "length";
    int token = -1, rc = 0;
    double t0 = now_s();
    for (int i = 0; i < r->max_tokens; i++) {
        seq_step st = { .tokens = i == 0 ? r->prompt : &token, .n = i == 0 ? r->n_prompt : 1,
                        .kv = &r->kv, .logits = e->logits };
        w.step = i; w.dir = DIR_DOWN;
        trace_arg sa[] = { TA_STR("phase", i == 0 ? "prefill" : "decode"), TA_INT("tokens", st.n), TA_INT("batch", 1) };
        trace_begin(w, "step", 3, sa);
        if (forward(e->m, &e->fs, &e->kv, &st, 1, e->step++)) {
            trace_end(w, 0, NULL);
            snprintf(err, errlen, "step of %d tokens does not fit the step buffers", st.n); rc = -1; break;
        }
        sample_result s;
        sample(&r->samp, e->logits, c->vocab_size, r->top_logprobs, e->work, &s);
        trace_end(w, 0, NULL);
        double t = now_s();
        if (i == 0) r->prefill_s = t - t0; else r->decode_s += t - t0;
        t0 = t;
        token = s.id;
        r->n_out++;
        int stop = is_stop(r, token);
        if (r->on_token && r->on_token(r, &s, r->user)) { r->finish = "cancelled"; break; }
        if (stop) { r->finish = "stop"; break; }
    }
    trace_arg fa[] = { TA_INT("blocks", r->kv.n_blocks), TA_INT("generated", r->n_out), TA_STR("finish", r->finish) };
    kv_release(&e->kv, &r->kv);
    w.dir = DIR_UP; w.step = -1;
    trace_instant(w, "kv_free", 3, fa);
    trace_counter(w, "kv_blocks_used", e->kv.n_blocks - e->kv.n_free, 0);
    return rc;
}
