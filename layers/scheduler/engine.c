/* engine.c -- layer 6: the engine's buffers, the request queue's door
 * (engine_submit) and a one-request run for `hipath generate`. */
#include "layers/scheduler/engine.h"
#include "layers/runtime/runtime.h"
#include "layers/tokenizer/tokenizer.h"
#include "trace/trace.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Make the weights resident on the device: the mapped files, and the f32
 * vectors made at load. */
static int map_weights(const model *m) {
    const model_config *c = &m->cfg;
    size_t f = sizeof(float), dim = c->dim, q = (size_t)c->n_heads * c->head_dim, kv = (size_t)c->n_kv_heads * c->head_dim;
    int rc = 0;
    for (int i = 0; i < m->files.nfiles; i++) rc |= rt_map(m->files.file[i].map, m->files.file[i].size, RT_WEIGHTS, m->files.file[i].path);
    for (int l = 0; l < c->n_layers; l++) {
        const layer_weights *L = &m->w.layer[l];
        const struct { const float *v; size_t n; } vec[] = { { L->attn_norm, dim }, { L->ffn_norm, dim }, { L->bq, q },
            { L->bk, kv }, { L->bv, kv }, { L->q_norm, c->head_dim }, { L->k_norm, c->head_dim } };
        for (size_t i = 0; i < sizeof vec / sizeof vec[0]; i++)
            if (vec[i].v) rc |= rt_map(vec[i].v, vec[i].n * f, RT_WEIGHTS, "norms and biases");
    }
    return rc | rt_map(m->w.final_norm, dim * f, RT_WEIGHTS, "final_norm");
}

int engine_init(engine *e, const model *m, int max_step_tokens, int max_batch, int kv_tokens,
                char *err, int errlen) {
    memset(e, 0, sizeof *e);
    e->m = m;
    e->max_batch = max_batch;
    e->max_step_tokens = max_step_tokens;
    const model_config *c = &m->cfg;
    int blocks = (kv_tokens + KV_BLOCK_SIZE - 1) / KV_BLOCK_SIZE;
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->wake, NULL);
    metrics_init(&e->met);
    if (map_weights(m)) {
        snprintf(err, errlen, "out of device memory for the weights (%.0f bytes on %s)", rt_allocated(RT_WEIGHTS), rt_device_now()->name);
        engine_free(e);
        return -1;
    }
    if (kv_init(&e->kv, c->n_layers, c->n_kv_heads * c->head_dim, KV_BLOCK_SIZE, blocks) ||
        forward_state_init(&e->fs, c, max_step_tokens, max_batch) ||
        !(e->logits = malloc((size_t)max_batch * c->vocab_size * sizeof(float))) ||
        !(e->work = malloc(2 * (size_t)c->vocab_size * sizeof(float))) ||
        !(e->running = calloc(max_batch, sizeof *e->running))) {
        snprintf(err, errlen, "out of memory for the KV cache (%d tokens) and step buffers", kv_tokens);
        engine_free(e);
        return -1;
    }
    return 0;
}

void engine_free(engine *e) {
    kv_free(&e->kv);
    forward_state_free(&e->fs);
    free(e->logits); free(e->work); free(e->running);
    rt_unmap_all();
    pthread_mutex_destroy(&e->mu);
    pthread_cond_destroy(&e->wake);
    memset(e, 0, sizeof *e);
}

int engine_submit(engine *e, request *r, char *err, int errlen) {
    const model_config *c = &e->m->cfg;
    if (r->n_prompt < 1 || r->n_prompt > e->max_step_tokens) {
        snprintf(err, errlen, "prompt of %d tokens: need 1 to %d", r->n_prompt, e->max_step_tokens);
        return SUBMIT_INVALID;
    }
    if (r->max_tokens < 1 || r->n_prompt + r->max_tokens > c->max_seq_len) {
        snprintf(err, errlen, "prompt (%d) + max tokens (%d) exceeds the context length %d", r->n_prompt, r->max_tokens, c->max_seq_len);
        return SUBMIT_INVALID;
    }
    for (int i = 0; i < r->n_prompt; i++)
        if (r->prompt[i] < 0 || r->prompt[i] >= c->vocab_size) {
            snprintf(err, errlen, "token id %d is outside the vocabulary (0..%d)", r->prompt[i], c->vocab_size - 1);
            return SUBMIT_INVALID;
        }
    r->worst_blocks = kv_blocks_for(&e->kv, r->n_prompt + r->max_tokens);
    if (r->worst_blocks > e->kv.n_blocks) {
        snprintf(err, errlen, "the request needs up to %d KV-cache tokens (%d blocks) but the whole cache holds %d (%d blocks)",
                 r->n_prompt + r->max_tokens, r->worst_blocks, e->kv.n_blocks * e->kv.block_size, e->kv.n_blocks);
        return SUBMIT_NO_ROOM;
    }
    memset(&r->kv, 0, sizeof r->kv);
    r->n_out = 0;
    r->finish = NULL;
    r->next = NULL;
    if (!r->t_arrive) r->t_arrive = trace_now_ns() * 1e-9;

    pthread_mutex_lock(&e->mu);
    if (e->quit) {
        pthread_mutex_unlock(&e->mu);
        snprintf(err, errlen, "the server is shutting down");
        return SUBMIT_CLOSED;
    }
    if (e->wait_tail) e->wait_tail->next = r; else e->wait_head = r;
    e->wait_tail = r;
    e->n_waiting++;
    trace_instant(trace_at(L_SCHEDULER, DIR_DOWN, r->id, NO_STEP), "enqueue",
                  TRACE_ARGS(TA_INT("prompt_tokens", r->n_prompt), TA_INT("max_tokens", r->max_tokens),
                             TA_INT("waiting", e->n_waiting), TA_INT("running", e->n_running)));
    pthread_cond_signal(&e->wake);
    pthread_mutex_unlock(&e->mu);
    return SUBMIT_OK;
}

int engine_generate(engine *e, request *r, char *err, int errlen) {
    if (engine_submit(e, r, err, errlen)) return -1;
    while (!r->finish) engine_step(e);
    if (!strcmp(r->finish, "error")) { snprintf(err, errlen, "engine step failed"); return -1; }
    return 0;
}

int engine_stop_ids(const model *m, const tokenizer *t, int *ids, int cap) {
    int n = 0;
    for (int i = 0; i < m->cfg.n_stop && n < cap; i++) ids[n++] = m->cfg.stop_ids[i];
    return t ? n + tokenizer_stop_ids(t, ids + n, cap - n) : n;
}

int is_stop_id(const int *ids, int n, int id) {
    for (int i = 0; i < n; i++)
        if (ids[i] == id) return 1;
    return 0;
}
