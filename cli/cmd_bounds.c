/*
 * cmd_bounds.c -- `hipath bounds`: what a model must take on a GPU, before
 * running anything: capacity, and the prefill and decode lower bounds
 * T >= max(F / Pi, R / beta); with --tp and --pp, a GPU's share and the
 * step with its communication (labs/bounds.h, docs/bounds.md).
 */
#include "cli/cli.h"
#include "labs/bounds.h"
#include <cjson/cJSON.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char USAGE[] =
    "usage: hipath bounds --config CONFIG.json --device NAME|FILE.json [options]\n"
    "  --config FILE        a Hugging Face config.json (llama, qwen2, qwen3, qwen3_moe, mixtral, deepseek_v3;\n"
    "                       a mixture of experts adds params_active and a \"moe\" object: docs/moe.md)\n"
    "  --device NAME|FILE   a profile in layers/gpu/profiles (%s) or a path\n"
    "  --dtype T            weights: bf16 fp16 fp32 int8 int4 (0.5 bytes) q4_0 (0.5625) q4_1 (0.625) (default bf16)\n"
    "  --compute-dtype T    the matmuls' dtype, whose peak is Pi: bf16 fp16 fp32 int8\n"
    "                       (default: the weights'; int8 for int8, int4, q4_0, q4_1)\n"
    "  --group-size G       int8/int4 weights of the blocks' linear layers with a bf16 scale\n"
    "                       per G; embeddings, LM head, norms and biases then stay bf16\n"
    "  --batch B            sequences (default 1)\n"
    "  --prompt-len P       prompt tokens per sequence, prefilled (default 512)\n"
    "  --context L          the decode step attends to L positions (default P)\n"
    "  --kv-dtype T         KV cache: bf16 fp16 fp32 int8 (default bf16)\n"
    "  --device-gb binary|decimal  the device's \"80 GB\": 80 GiB (default, what it holds) or\n"
    "                       80e9 bytes (decimal: the chapter's nominal capacity)\n"
    "  --workspace SIZE     M_work fixed, in bytes or with GB GiB MB MiB (the chapter: 2GiB)\n"
    "                       (default: hipath's estimate, one layer's prefill activations + logits)\n"
    "  --tp N               tensor parallel over N GPUs (heads, FFN and vocabulary split N ways)\n"
    "  --pp M               pipeline of M stages (the layers split M ways); tp x pp GPUs in one\n"
    "                       server, joined by the profile's interconnect (default 1 and 1)\n"
    "  --json               one JSON object\n"
    "  --breakdown          per-operator table (with --json: an \"ops\" array)\n"
    "conventions: 2 FLOPs per multiply-add; matmuls only (q k v o gate up down,\n"
    "LM head, and QK^T + AV over the context; norms, RoPE, SiLU, softmax left out);\n"
    "causal prefill: query i attends to i positions, itself included; prefill runs\n"
    "the LM head for the last position only. A phase reads each weight once (plus\n"
    "the tokens' embedding rows); prefill writes the prompt's KV, a decode step\n"
    "reads L positions of KV per sequence. Decode at batch B: FLOPs and KV x B,\n"
    "weights once. Pi is the peak of the compute dtype; beta the memory bandwidth.\n"
    "B* = b_W Pi / (2 beta), b_W the bytes of a linear weight (its scale's share\n"
    "included). Sizes print in GB = 10^9 bytes. Details: docs/bounds.md.\n";

static cJSON *phase_json(const bounds_phase *p) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "flops", p->flops);
    cJSON_AddNumberToObject(j, "bytes", p->bytes);
    cJSON_AddNumberToObject(j, "weight_bytes", p->weight_bytes);
    cJSON_AddNumberToObject(j, "kv_bytes", p->kv_bytes);
    cJSON_AddNumberToObject(j, "t_compute_s", p->t_compute);
    cJSON_AddNumberToObject(j, "t_memory_s", p->t_memory);
    cJSON_AddNumberToObject(j, "t_lower_s", p->t_lower);
    cJSON_AddStringToObject(j, "bound", bounds_compute_bound(p) ? "compute" : "memory");
    cJSON_AddNumberToObject(j, "arithmetic_intensity", p->intensity);
    return j;
}

static cJSON *parallel_phase_json(cJSON *j, const bounds_parallel_phase *q, const char *step) {
    cJSON *a = cJSON_AddObjectToObject(j, "all_reduce");
    cJSON_AddNumberToObject(a, "bytes", q->all_reduce.bytes);
    cJSON_AddNumberToObject(a, "per_step", q->all_reduce.per_step);
    cJSON_AddNumberToObject(a, "bandwidth_s", q->all_reduce.bandwidth_s);
    cJSON_AddNumberToObject(a, "latency_s", q->all_reduce.latency_s);
    cJSON_AddNumberToObject(a, "total_s", q->all_reduce.total_s);
    cJSON_AddNumberToObject(j, "t_compute_s", q->t_compute);
    cJSON_AddNumberToObject(j, "t_memory_s", q->t_memory);
    cJSON_AddNumberToObject(j, "pp_send_bytes", q->send_bytes);
    cJSON_AddNumberToObject(j, "pp_send_s", q->send_s);
    cJSON_AddNumberToObject(j, step, q->t_step);
    cJSON_AddNumberToObject(j, "comm_share", q->comm_share);
    return j;
}

/* "parallel": a GPU's share over tp x pp GPUs; the decode step's figures
 * at its top, the prefill's in its own object. */

/* A capacity's terms, the whole model's or one GPU's, into cap. */
static cJSON *capacity_json(cJSON *cap, const bounds_capacity *c) {
    cJSON_AddBoolToObject(cap, "fits", c->fits);
    cJSON_AddNumberToObject(cap, "weights_bytes", c->weights_bytes);
    cJSON_AddNumberToObject(cap, "kv_bytes", c->kv_bytes);
    cJSON_AddNumberToObject(cap, "workspace_bytes", c->workspace_bytes);
    cJSON_AddNumberToObject(cap, "device_bytes", c->device_bytes);
    cJSON_AddNumberToObject(cap, "total_bytes", c->total_bytes);
    return cap;
}
static cJSON *parallel_json(const gpu_profile *g, const bounds_parallel *p) {
    cJSON *j = cJSON_CreateObject(), *cap = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "tp", p->tp);
    cJSON_AddNumberToObject(j, "pp", p->pp);
    cJSON_AddNumberToObject(j, "gpus", p->gpus);
    cJSON_AddStringToObject(j, "interconnect", g->link.name);
    cJSON_AddStringToObject(j, "topology", g->link.topology);
    cJSON_AddNumberToObject(j, "ring_bandwidth_bytes_per_s", p->ring_bandwidth);
    cJSON_AddNumberToObject(j, "heads_per_gpu", p->heads);
    cJSON_AddNumberToObject(j, "kv_heads_per_gpu", p->kv_heads);
    cJSON_AddItemToObject(j, "stage_layers", cJSON_CreateIntArray(p->stage_layers, p->pp));
    cJSON_AddNumberToObject(j, "fullest_stage", p->fullest);
    cJSON_AddNumberToObject(j, "kv_bytes_per_token_per_gpu", p->kv_bytes_per_token);
    cJSON_AddItemToObject(j, "per_gpu", capacity_json(cap, &p->per_gpu));
    parallel_phase_json(j, &p->decode, "decode_step_s");
    cJSON_AddNumberToObject(j, "b_fit", (double)p->b_fit);
    cJSON_AddItemToObject(j, "prefill", parallel_phase_json(cJSON_CreateObject(), &p->prefill, "step_s"));
    return j;
}

/* A MoE's decode step at batch B: the experts a layer reads, expected, and
 * the weight bytes of the step (bounds_compute_with at that batch). */
static const int MOE_BATCHES[] = { 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096 };
#define N_MOE_BATCHES (int)(sizeof MOE_BATCHES / sizeof *MOE_BATCHES)
static double decode_weight_bytes(const model_config *c, const gpu_profile *g, const bounds_input *in,
                                  const bounds_options *opt, int B) {
    bounds_input at = *in;
    bounds_result r;
    char err[256];
    at.batch = B;
    return bounds_compute_with(c, g, &at, opt, &r, err, sizeof err) ? 0 : r.decode.weight_bytes;
}

static cJSON *moe_json(const model_config *c, const gpu_profile *g, const bounds_input *in, const bounds_options *opt,
                       const bounds_result *r) {
    cJSON *j = cJSON_CreateObject(), *by = cJSON_CreateArray();
    cJSON_AddNumberToObject(j, "experts", c->n_experts);
    cJSON_AddNumberToObject(j, "top_k", c->n_experts_per_tok);
    cJSON_AddNumberToObject(j, "shared_experts", c->n_shared_experts);
    cJSON_AddNumberToObject(j, "moe_layers", r->moe_layers);
    cJSON_AddNumberToObject(j, "expert_bytes", r->expert_bytes);
    cJSON_AddNumberToObject(j, "experts_read_decode", bounds_experts_read(c, in->batch));
    cJSON_AddNumberToObject(j, "experts_read_prefill", bounds_experts_read(c, (double)in->batch * in->prompt_len));
    for (int i = 0; i < N_MOE_BATCHES; i++) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddNumberToObject(e, "batch", MOE_BATCHES[i]);
        cJSON_AddNumberToObject(e, "experts_read", bounds_experts_read(c, MOE_BATCHES[i]));
        cJSON_AddNumberToObject(e, "weight_bytes", decode_weight_bytes(c, g, in, opt, MOE_BATCHES[i]));
        cJSON_AddItemToArray(by, e);
    }
    cJSON_AddItemToObject(j, "decode_by_batch", by);
    cJSON_AddNumberToObject(j, "b_star", r->b_star_moe);
    return j;
}

static void print_json(const model_config *c, const gpu_profile *g, const bounds_input *in,
                       const bounds_options *opt, const bounds_result *r, int breakdown) {
    cJSON *j = cJSON_CreateObject(), *cap = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "model_arch", c->arch_name);
    cJSON_AddStringToObject(j, "device", g->name);
    cJSON_AddStringToObject(j, "dtype", in->dtype);
    cJSON_AddStringToObject(j, "kv_dtype", in->kv_dtype);
    cJSON_AddStringToObject(j, "compute_dtype", r->compute_dtype);
    cJSON_AddNumberToObject(j, "group_size", opt->group_size);
    cJSON_AddNumberToObject(j, "bytes_per_weight", r->b_w);
    cJSON_AddNumberToObject(j, "bytes_per_other_weight", r->b_other);
    cJSON_AddNumberToObject(j, "batch", in->batch);
    cJSON_AddNumberToObject(j, "prompt_len", in->prompt_len);
    cJSON_AddNumberToObject(j, "context", in->context);
    cJSON_AddNumberToObject(j, "peak_flops", r->peak);
    cJSON_AddNumberToObject(j, "memory_bandwidth_bytes_per_s", r->bandwidth);
    cJSON_AddNumberToObject(j, "params", (double)r->params);
    cJSON_AddNumberToObject(j, "params_active", (double)r->params_active);
    cJSON_AddNumberToObject(j, "weights_bytes", r->weights_bytes);
    cJSON_AddNumberToObject(j, "kv_bytes_per_token", r->kv_bytes_per_token);
    if (c->kv_lora_rank) {   /* MLA: the cache holds the latent, not K and V */
        cJSON *mla = cJSON_AddObjectToObject(j, "mla");
        cJSON_AddNumberToObject(mla, "kv_lora_rank", c->kv_lora_rank);
        cJSON_AddNumberToObject(mla, "qk_rope_head_dim", c->qk_rope_head_dim);
        cJSON_AddNumberToObject(mla, "q_lora_rank", c->q_lora_rank);
        cJSON_AddNumberToObject(mla, "kv_bytes_per_token_expanded", r->kv_bytes_per_token_expanded);
    }
    capacity_json(cap, &r->capacity);
    cJSON_AddStringToObject(cap, "device_gb", opt->decimal_gb ? "decimal" : "binary");
    cJSON_AddStringToObject(cap, "workspace", opt->workspace_bytes > 0 ? "fixed" : "estimate");
    cJSON_AddItemToObject(j, "capacity", cap);
    cJSON_AddItemToObject(j, "prefill", phase_json(&r->prefill));
    cJSON_AddItemToObject(j, "decode", phase_json(&r->decode));
    cJSON_AddNumberToObject(j, "b_star", r->b_star);
    if (r->moe_layers) cJSON_AddItemToObject(j, "moe", moe_json(c, g, in, opt, r));
    if (r->parallel.gpus > 1) cJSON_AddItemToObject(j, "parallel", parallel_json(g, &r->parallel));
    if (breakdown) {
        cJSON *ops = cJSON_AddArrayToObject(j, "ops");
        for (int i = 0; i < r->nops; i++) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "name", r->op[i].name);
            cJSON_AddNumberToObject(o, "times", r->op[i].times);
            cJSON_AddItemToObject(o, "prefill", phase_json(&r->op[i].phase[BOUNDS_PREFILL]));
            cJSON_AddItemToObject(o, "decode", phase_json(&r->op[i].phase[BOUNDS_DECODE]));
            cJSON_AddItemToArray(ops, o);
        }
    }
    char *s = cJSON_Print(j);
    puts(s);
    free(s);
    cJSON_Delete(j);
}

static void print_row(const char *name, int times, const bounds_phase *p) {
    char label[32];
    snprintf(label, sizeof label, times > 1 ? "%s x%d" : "%s", name, times);
    printf("  %-14s %10.3e %10.3e %9.1f %11.4f %11.4f  %s\n", label, p->flops, p->bytes, p->intensity,
           p->t_compute * 1e3, p->t_memory * 1e3, p->bytes == 0 && p->flops == 0 ? "-" : bounds_compute_bound(p) ? "compute" : "memory");
}

static void print_table(const bounds_result *r, enum bounds_phase_id ph) {
    printf("  %-14s %10s %10s %9s %11s %11s  %s\n", "operator", "FLOPs", "bytes", "FLOP/B", "t_comp ms", "t_mem ms", "bound");
    for (int i = 0; i < r->nops; i++) print_row(r->op[i].name, r->op[i].times, &r->op[i].phase[ph]);
    print_row("total", 1, ph == BOUNDS_PREFILL ? &r->prefill : &r->decode);
}

/* Bytes as kB, MB or GB (10^3, 10^6, 10^9). */
static const char *size(double bytes, char *buf, int len) {
    const char *unit[] = { "B", "kB", "MB", "GB" };
    int i = 0;
    for (; i < 3 && bytes >= 1000; i++) bytes /= 1000;
    snprintf(buf, len, "%.3g %s", bytes, unit[i]);
    return buf;
}

static void print_parallel_phase(const char *what, const bounds_parallel_phase *q) {
    char b[32];
    printf("%s per GPU: T_compute %.3f ms, T_memory %.3f ms", what, q->t_compute * 1e3, q->t_memory * 1e3);
    if (q->all_reduce.per_step)
        printf("; all-reduce %d x %s: %.3f ms bandwidth (its lower bound) + %.3f ms latency", q->all_reduce.per_step,
               size(q->all_reduce.bytes, b, sizeof b), q->all_reduce.bandwidth_s * 1e3, q->all_reduce.latency_s * 1e3);
    if (q->send_s > 0) printf("; hand-offs %.3f ms", q->send_s * 1e3);
    printf(" -> T >= %.3f ms, %.1f%% communication\n", q->t_step * 1e3, q->comm_share * 100);
}

/* The tp x pp lines: the interconnect, a GPU's capacity, both phases with
 * their communication, and what the pipeline does and does not buy. */
static void print_parallel(const model_config *c, const gpu_profile *g, const bounds_input *in, const bounds_result *r) {
    const bounds_parallel *p = &r->parallel;
    const bounds_capacity *k = &p->per_gpu;
    const double GB = 1e9;
    char b[32];
    printf("on %d GPUs, tp %d x pp %d, over %s: %s", p->gpus, p->tp, p->pp, g->link.name, g->link.topology);
    if (p->tp > 1) printf(", a ring of %d at %.0f GB/s a GPU", p->tp, p->ring_bandwidth / GB);
    if (c->kv_lora_rank)   /* MLA: no KV heads to split */
        printf(", %.1f us a hop; a GPU holds %d of %d heads and the whole latent KV\n", g->link.latency_s * 1e6, p->heads, c->n_heads);
    else
        printf(", %.1f us a hop; a GPU holds %d of %d heads, %d of %d KV heads%s\n", g->link.latency_s * 1e6,
               p->heads, c->n_heads, p->kv_heads, c->n_kv_heads, p->tp > c->n_kv_heads ? " (each copied on several)" : "");
    if (p->pp > 1) {
        printf("pipeline: %d stages of", p->pp);
        for (int i = 0; i < p->pp; i++) printf("%s%d", i ? " + " : " ", p->stage_layers[i]);
        printf(" layers (the first holds the embedding table, the last the final norm and LM head)\n");
    }
    printf("per GPU%s: weights %.2f + KV %.2f (%d x %d tokens x %.0f B) + workspace %.2f = %.2f of %.2f GB: %s;"
           " B_fit %lld sequences of %d tokens\n", p->pp > 1 ? (snprintf(b, sizeof b, " (stage %d, the fullest)", p->fullest), b) : "",
           k->weights_bytes / GB, k->kv_bytes / GB, in->batch, in->prompt_len > in->context ? in->prompt_len : in->context,
           p->kv_bytes_per_token, k->workspace_bytes / GB, k->total_bytes / GB, k->device_bytes / GB,
           k->fits ? "fits" : "DOES NOT FIT", (long long)p->b_fit, in->prompt_len > in->context ? in->prompt_len : in->context);
    print_parallel_phase("prefill", &p->prefill);
    print_parallel_phase("decode ", &p->decode);
    printf("decode on %d GPUs: at most %.1f tokens/s per sequence, %.1f in all (batch %d, context %d)\n",
           p->gpus, 1 / p->decode.t_step, in->batch / p->decode.t_step, in->batch, in->context);
    if (p->pp > 1)
        printf("pipeline: one batch passes the %d stages in turn, so its step is their sum and %d hand-off%s of %s;"
               " %d batches in flight give up to %dx the tokens/s (%.1f), but no request's step is shorter\n",
               p->pp, p->pp - 1, p->pp > 2 ? "s" : "", size(p->decode.send_bytes, b, sizeof b), p->pp, p->pp,
               p->pp * in->batch / p->decode.t_step);
}

static void print_text(const model_config *c, const gpu_profile *g, const bounds_input *in,
                       const bounds_options *opt, const bounds_result *r, int breakdown) {
    const double GB = 1e9;
    char weights[128] = "", pi_for[32];
    if (opt->group_size > 0)
        snprintf(weights, sizeof weights, " (a bf16 scale per %d; embeddings, LM head, norms bf16)", opt->group_size);
    snprintf(pi_for, sizeof pi_for, opt->compute_dtype ? "%s compute" : "%s", opt->compute_dtype ? r->compute_dtype : in->dtype);
    printf("%s model, %.3f B params, %s%s weights %.2f GB; on %s (beta %.0f GB/s, Pi %.1f TFLOPS for %s)\n",
           c->arch_name, r->params / 1e9, in->dtype, weights, r->weights_bytes / GB, g->name, r->bandwidth / GB, r->peak / 1e12, pi_for);
    printf("capacity: weights %.2f + KV %.2f (%d x %d tokens x %.0f B) + workspace %.2f%s = %.2f of %.2f GB%s: %s\n",
           r->capacity.weights_bytes / GB, r->capacity.kv_bytes / GB, in->batch,
           in->prompt_len > in->context ? in->prompt_len : in->context, r->kv_bytes_per_token,
           r->capacity.workspace_bytes / GB, opt->workspace_bytes > 0 ? " (fixed)" : "", r->capacity.total_bytes / GB,
           r->capacity.device_bytes / GB, opt->decimal_gb ? " (nominal: the datasheet's GB as 10^9 bytes)" : "",
           r->capacity.fits ? "fits" : "DOES NOT FIT");
    if (c->kv_lora_rank)
        printf("KV a token: MLA caches one latent a layer, %d layers x (kv_lora_rank %d + qk_rope_head_dim %d) x %g B = %.0f B; "
               "its %d heads' own K (%d) and V (%d) would take %.0f B (%.0fx)\n",
               c->n_layers, c->kv_lora_rank, c->qk_rope_head_dim, r->b_kv, r->kv_bytes_per_token, c->n_heads, c->head_dim,
               c->v_head_dim, r->kv_bytes_per_token_expanded, r->kv_bytes_per_token_expanded / r->kv_bytes_per_token);
    const bounds_phase *ph[2] = { &r->prefill, &r->decode };
    const char *what[2] = { "prefill", "decode " };
    for (int i = 0; i < 2; i++)
        printf("%s: F %.3e FLOP, R %.3e B (%.1f FLOP/B): T_compute %.3f ms, T_memory %.3f ms -> T >= %.3f ms (%s-bound)\n",
               what[i], ph[i]->flops, ph[i]->bytes, ph[i]->intensity, ph[i]->t_compute * 1e3, ph[i]->t_memory * 1e3,
               ph[i]->t_lower * 1e3, bounds_compute_bound(ph[i]) ? "compute" : "memory");
    printf("decode: at most %.1f tokens/s per sequence, %.1f in all (batch %d, context %d)\n",
           1 / r->decode.t_lower, in->batch / r->decode.t_lower, in->batch, in->context);
    printf("B* = b_W Pi / (2 beta) = %.3g x %.4g / (2 x %.4g) = %.1f\n", r->b_w, r->peak, r->bandwidth, r->b_star);
    if (r->moe_layers) {
        printf("MoE: %d experts, top %d%s, in %d of %d layers: %.3f B params active a token of %.3f B\n", c->n_experts,
               c->n_experts_per_tok, c->n_shared_experts ? (snprintf(pi_for, sizeof pi_for, " + %d shared", c->n_shared_experts), pi_for) : "",
               r->moe_layers, c->n_layers, r->params_active / 1e9, r->params / 1e9);
        printf("MoE decode: a step of B tokens reads E (1 - (1 - k/E)^B) experts a layer (of %.1f MB each):", r->expert_bytes / 1e6);
        for (int i = 0; i < N_MOE_BATCHES; i += 2)
            printf("%s B %d: %.1f, %.2f GB", i ? ";" : "", MOE_BATCHES[i], bounds_experts_read(c, MOE_BATCHES[i]),
                   decode_weight_bytes(c, g, in, opt, MOE_BATCHES[i]) / GB);
        printf("\nB* with the experts read: %.1f (2 B A / Pi = b_W weights_read(B) / beta; A the active matmul params)\n", r->b_star_moe);
    }
    if (r->parallel.gpus > 1) print_parallel(c, g, in, r);
    if (breakdown) {
        printf("\nprefill (B %d x P %d):\n", in->batch, in->prompt_len);
        print_table(r, BOUNDS_PREFILL);
        printf("\ndecode step (B %d, context %d):\n", in->batch, in->context);
        print_table(r, BOUNDS_DECODE);
    }
}

/* A size in bytes: a number, alone or with GB, GiB, MB or MiB. 0, or -1. */
static int parse_size(const char *s, double *out) {
    static const struct { const char *unit; double bytes; } UNITS[] = {
        { "", 1 }, { "GB", 1e9 }, { "GiB", 1073741824.0 }, { "MB", 1e6 }, { "MiB", 1048576.0 } };
    char *end;
    double v = strtod(s, &end);
    for (size_t i = 0; end != s && i < sizeof UNITS / sizeof *UNITS; i++)
        if (!strcmp(end, UNITS[i].unit) && v > 0 && isfinite(v)) { *out = v * UNITS[i].bytes; return 0; }
    return -1;
}

int cmd_bounds(int argc, char **argv) {
    static const struct option OPTS[] = {
        { "config", 1, 0, 'c' }, { "device", 1, 0, 'd' }, { "dtype", 1, 0, 't' }, { "batch", 1, 0, 'b' },
        { "prompt-len", 1, 0, 'p' }, { "context", 1, 0, 'L' }, { "kv-dtype", 1, 0, 'k' },
        { "compute-dtype", 1, 0, 'C' }, { "group-size", 1, 0, 'G' }, { "device-gb", 1, 0, 'M' }, { "workspace", 1, 0, 'W' },
        { "tp", 1, 0, 'T' }, { "pp", 1, 0, 'P' }, { "json", 0, 0, 'j' }, { "breakdown", 0, 0, 'B' }, { "help", 0, 0, 'h' }, { 0, 0, 0, 0 } };
    const char *config = NULL, *device = NULL;
    bounds_input in = { .dtype = "bf16", .kv_dtype = "bf16", .batch = 1, .prompt_len = 512, .context = -1 };
    bounds_options opt = { 0 };
    long v;
    int json = 0, breakdown = 0, o;
    char known[512];
    optind = 1;
    opterr = 0;
    while ((o = getopt_long(argc, argv, "", OPTS, NULL)) != -1) {
        switch (o) {
        case 'c': config = optarg; break;
        case 'd': device = optarg; break;
        case 't': in.dtype = optarg; break;
        case 'k': in.kv_dtype = optarg; break;
        case 'b': if (parse_int(optarg, 1, 1 << 24, &v)) return stack_fail("--batch must be a whole number from 1, got '%s'", optarg); in.batch = (int)v; break;
        case 'p': if (parse_int(optarg, 1, 1 << 30, &v)) return stack_fail("--prompt-len must be a whole number from 1, got '%s'", optarg); in.prompt_len = (int)v; break;
        case 'L': if (parse_int(optarg, 1, 1 << 30, &v)) return stack_fail("--context must be a whole number from 1, got '%s'", optarg); in.context = (int)v; break;
        case 'C': opt.compute_dtype = optarg; break;
        case 'G': if (parse_int(optarg, 1, 1 << 20, &v)) return stack_fail("--group-size must be a whole number from 1, got '%s'", optarg); opt.group_size = (int)v; break;
        case 'M':
            if (strcmp(optarg, "binary") && strcmp(optarg, "decimal")) return stack_fail("--device-gb must be binary or decimal, got '%s'", optarg);
            opt.decimal_gb = !strcmp(optarg, "decimal");
            break;
        case 'W': if (parse_size(optarg, &opt.workspace_bytes)) return stack_fail("--workspace must be a positive size (2GiB, 1.5e9), got '%s'", optarg); break;
        case 'T': if (parse_int(optarg, 1, 1 << 20, &v)) return stack_fail("--tp must be a whole number from 1, got '%s'", optarg); opt.tp = (int)v; break;
        case 'P': if (parse_int(optarg, 1, 1 << 20, &v)) return stack_fail("--pp must be a whole number from 1, got '%s'", optarg); opt.pp = (int)v; break;
        case 'j': json = 1; break;
        case 'B': breakdown = 1; break;
        case 'h': gpu_profile_list(known, sizeof known); printf(USAGE, known); return 0;
        default: return stack_fail("bounds: unknown or incomplete option '%s' (see --help)", argv[optind - 1]);
        }
    }
    if (optind < argc) return stack_fail("bounds: unexpected argument '%s' (see --help)", argv[optind]);
    if (!config) return stack_fail("bounds: --config is required");
    if (!device) return stack_fail("bounds: --device is required");
    if (in.context < 0) in.context = in.prompt_len;

    char err[512];
    model_config c;
    gpu_profile g;
    bounds_result r;
    if (model_config_load(&c, config, err, sizeof err)) return stack_fail("%s", err);
    if (gpu_profile_load(&g, device, err, sizeof err)) return stack_fail("%s", err);
    if (bounds_compute_with(&c, &g, &in, &opt, &r, err, sizeof err)) return stack_fail("bounds: %s", err);
    if (json) print_json(&c, &g, &in, &opt, &r, breakdown);
    else print_text(&c, &g, &in, &opt, &r, breakdown);
    return 0;
}
