/* engine.c -- layer 6: the engine's buffers: the weights made resident,
 * the KV-cache pool, the step's activations and logits. The scheduler
 * (scheduler.c) runs it. */
#include "layers/scheduler/scheduler.h"
#include "layers/runtime/runtime.h"
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

static int init(engine *e, const model *m, int max_step_tokens, int max_batch, int kv_tokens, char *err, int errlen) {
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
    if (kv_init(&e->kv, c->n_layers, c->n_kv_heads * c->head_dim, KV_BLOCK_SIZE, blocks, m->kv_bytes) ||
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

/* Setting up and tearing down are the calling thread's, on tracks of their
 * own in the trace: the layers' own tracks are the steps'. */
int engine_init(engine *e, const model *m, int max_step_tokens, int max_batch, int kv_tokens, char *err, int errlen) {
    trace_thread_name("engine setup");
    int rc = init(e, m, max_step_tokens, max_batch, kv_tokens, err, errlen);
    trace_thread_name(NULL);
    return rc;
}

void engine_free(engine *e) {
    trace_thread_name("engine teardown");
    kv_free(&e->kv);
    forward_state_free(&e->fs);
    free(e->logits); free(e->work); free(e->running);
    rt_unmap_all();
    pthread_mutex_destroy(&e->mu);
    pthread_cond_destroy(&e->wake);
    memset(e, 0, sizeof *e);
    trace_thread_name(NULL);
}
