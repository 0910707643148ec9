/*
 * cmd_generate.c -- `hipath generate`: a prompt in, tokens out, no server.
 * The user message goes through the chat template and the tokenizer
 * (layer 7), the engine (layer 6) prefills and decodes, the model (5) and
 * operators (4) compute on the CPU.
 */
#include "cli/cli.h"
#include "layers/scheduler/scheduler.h"
#include "kernels/backend.h"
#include "kernels/cpu/kernels.h"
#include "layers/tokenizer/tokenizer.h"
#include "trace/trace.h"
#include <cjson/cJSON.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char USAGE[] =
    "usage: hipath generate --model DIR|FILE.gguf (--prompt TEXT | --prompt-ids 1,2,3) [options]\n"
    "  --prompt TEXT        the user message; the chat template is applied\n"
    "  --prompt-ids LIST    raw token ids, comma separated, no template\n"
    "  --max-tokens N       tokens to generate (default 64)\n"
    "  --temperature T      0 = greedy (default 0)\n"
    "  --top-p P            nucleus sampling (default 1)\n"
    "  --top-k K            keep the K most likely tokens (default 0 = off)\n"
    "  --seed S             seed for sampling (default: from the clock)\n"
    "  --top-logprobs K     report the K most likely alternatives per token (0-20)\n"
    "  --device D           cpu (default), sim:PROFILE (e.g. sim:w7900), hip:N, or auto\n"
    "  --jit                hip: compile the kernels at run time, cached (docs/timing.md)\n"
    "  --ignore-eos         keep generating past the end-of-turn token, to --max-tokens\n"
    "  --trace-db FILE      record a SQLite trace (and a Perfetto one: --perfetto FILE)\n"
    "  --perfetto FILE      record a Perfetto trace\n"
    "  --json               print one JSON object instead of the text\n";

/* The one request, numbered as the server numbers its first, so a trace of
 * generate reads like one of run: every layer's events carry this id. */
enum { REQ_ID = 1 };

typedef struct {
    int json;
    text_codec tc;        /* the tokenizer, when the model has one */
    text_decoder *dec;
    char *text;           /* accumulated reply */
    size_t len, cap;
    cJSON *ids, *logprobs;
} gen_out;

static void append(gen_out *g, const char *s, size_t n) {
    if (g->len + n + 1 > g->cap) {
        g->cap = (g->len + n + 1) * 2;
        g->text = realloc(g->text, g->cap);
    }
    memcpy(g->text + g->len, s, n);
    g->len += n;
    g->text[g->len] = 0;
}

static int on_token(request *r, const sample_result *s, void *user) {
    gen_out *g = user;
    cJSON_AddItemToArray(g->ids, cJSON_CreateNumber(s->id));
    cJSON *lp = cJSON_CreateObject(), *top = cJSON_CreateArray();
    cJSON_AddNumberToObject(lp, "id", s->id);
    cJSON_AddNumberToObject(lp, "logprob", s->logprob);
    for (int j = 0; j < s->n_top; j++) {
        cJSON *pair = cJSON_CreateArray();
        cJSON_AddItemToArray(pair, cJSON_CreateNumber(s->top_id[j]));
        cJSON_AddItemToArray(pair, cJSON_CreateNumber(s->top_logprob[j]));
        cJSON_AddItemToArray(top, pair);
    }
    cJSON_AddItemToObject(lp, "top", top);
    cJSON_AddItemToArray(g->logprobs, lp);
    if (g->dec && !is_stop_id(r->stop_ids, r->n_stop, s->id)) {   /* the end-of-turn token is not part of the text */
        size_t n = 0;
        const char *piece = g->tc.decode(g->dec, s->id, &n, r->id, r->n_out - 1);
        if (piece && n > 0) {
            append(g, piece, n);
            if (!g->json) { fwrite(piece, 1, n, stdout); fflush(stdout); }
        }
    }
    return 0;
}

static int parse_ids(const char *s, int **ids, int *n) {
    int cap = 16;
    *ids = malloc(cap * sizeof **ids);
    *n = 0;
    for (const char *p = s; *p;) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 0 || v > 0x7fffffff || (*end && *end != ',')) return -1;
        if (*n == cap) *ids = realloc(*ids, (cap *= 2) * sizeof **ids);
        (*ids)[(*n)++] = (int)v;
        p = *end ? end + 1 : end;
    }
    return *n ? 0 : -1;
}

/* The user message through the chat template and the tokenizer (traced as
 * request req's layer 7). */
static int encode_prompt(const text_codec *tc, const char *text, int64_t req, int **ids, int *n, char *err, int errlen) {
    chat_message msg = { "user", text };
    /* A guess, and when NFC made the text longer than that (the count says
     * so), once more at the count. */
    int cap = (int)strlen(text) + 64, *p;
    for (*n = -1; (p = realloc(*ids, cap * sizeof **ids)); cap = *n) {
        *ids = p;
        if ((*n = tc->encode_chat(tc->ctx, &msg, 1, 0, *ids, cap, err, errlen, req)) <= cap) break;
    }
    if (!p) snprintf(err, errlen, "out of memory");
    return *n < 0 || !p ? -1 : 0;
}

int cmd_generate(int argc, char **argv) {
    static const struct option OPTS[] = {
        { "model", 1, 0, 'm' }, { "prompt", 1, 0, 'p' }, { "prompt-ids", 1, 0, 'i' },
        { "max-tokens", 1, 0, 'n' }, { "temperature", 1, 0, 't' }, { "top-p", 1, 0, 'P' },
        { "top-k", 1, 0, 'k' }, { "seed", 1, 0, 's' }, { "top-logprobs", 1, 0, 'l' },
        { "device", 1, 0, 'd' }, { "trace-db", 1, 0, 'D' }, { "perfetto", 1, 0, 'F' }, { "json", 0, 0, 'j' }, { "jit", 0, 0, 'J' }, { "ignore-eos", 0, 0, 'E' }, { "help", 0, 0, 'h' }, { 0, 0, 0, 0 } };
    const char *model_path = NULL, *prompt = NULL, *prompt_ids = NULL, *device = "cpu",
               *db = NULL, *pftrace = NULL;
    long max_tokens = 64, top_k = 0, top_logprobs = 0, seed = -1;
    double temperature = 0, top_p = 1;
    int json = 0, ignore_eos = 0, o;
    optind = 1;
    opterr = 0;
    while ((o = getopt_long(argc, argv, "", OPTS, NULL)) != -1) {
        switch (o) {
        case 'm': model_path = optarg; break;
        case 'p': prompt = optarg; break;
        case 'i': prompt_ids = optarg; break;
        case 'n': if (parse_int(optarg, 1, 1 << 30, &max_tokens)) return stack_fail("--max-tokens must be a positive integer, got '%s'", optarg); break;
        case 't': if (parse_float(optarg, 0, 100, &temperature)) return stack_fail("--temperature must be a number >= 0, got '%s'", optarg); break;
        case 'P': if (parse_float(optarg, 1e-6, 1, &top_p)) return stack_fail("--top-p must be in (0, 1], got '%s'", optarg); break;
        case 'k': if (parse_int(optarg, 0, 1 << 30, &top_k)) return stack_fail("--top-k must be an integer >= 0, got '%s'", optarg); break;
        case 's': if (parse_int(optarg, 0, 0x7fffffffL, &seed)) return stack_fail("--seed must be an integer >= 0, got '%s'", optarg); break;
        case 'l': if (parse_int(optarg, 0, MAX_TOP_LOGPROBS, &top_logprobs)) return stack_fail("--top-logprobs must be 0 to %d, got '%s'", MAX_TOP_LOGPROBS, optarg); break;
        case 'd': device = optarg; break;
        case 'D': db = optarg; break;
        case 'F': pftrace = optarg; break;
        case 'j': json = 1; break;
        case 'J': rt_jit(1); break;
        case 'E': ignore_eos = 1; break;
        case 'h': fputs(USAGE, stdout); return 0;
        default: return stack_fail("generate: unknown or incomplete option '%s' (see --help)", argv[optind - 1]);
        }
    }
    if (!model_path) return stack_fail("generate: --model is required");
    if (!prompt == !prompt_ids) return stack_fail("generate: give exactly one of --prompt or --prompt-ids");

    char err[512], cmd[1024];
    stack k = { .run = -1 };
    stack_command(argc, argv, cmd, sizeof cmd);
    if (stack_device(&k, device, err, sizeof err) ||
        ((db || pftrace) && stack_trace(&k, db, &pftrace, cmd, model_path, err, sizeof err))) {
        stack_fail("%s", err);
        stack_close(&k, err, sizeof err);
        return 1;
    }
    model m;
    if (model_load(&m, model_path, err, sizeof err)) { stack_fail("%s", err); stack_close(&k, err, sizeof err); return 1; }
    gen_out g = { .json = json, .ids = cJSON_CreateArray(), .logprobs = cJSON_CreateArray() };
    int *ids = NULL, n_ids = 0, rc = 1;
    if (m.tokenizer_path && tokenizer_open_text(m.tokenizer_path, m.cfg.vocab_size, &g.tc, err, sizeof err)) { stack_fail("%s", err); goto out; }
    if (g.tc.ctx && !(g.dec = g.tc.decoder(g.tc.ctx))) { stack_fail("out of memory"); goto out; }
    if (prompt_ids && parse_ids(prompt_ids, &ids, &n_ids)) { stack_fail("--prompt-ids must be comma-separated ids, got '%s'", prompt_ids); goto out; }
    if (prompt && !g.dec) { stack_fail("%s: no tokenizer.json; use --prompt-ids", model_path); goto out; }
    if (prompt && encode_prompt(&g.tc, prompt, REQ_ID, &ids, &n_ids, err, sizeof err)) { stack_fail("%s", err); goto out; }
    if (n_ids < 1) { stack_fail("the prompt is empty"); goto out; }
    if (n_ids + max_tokens > m.cfg.max_seq_len) {
        stack_fail("prompt (%d tokens) + --max-tokens %ld exceeds the context length %d", n_ids, max_tokens, m.cfg.max_seq_len); goto out;
    }

    int stop_ids[16], n_stop = engine_stop_ids(&m, g.dec ? &g.tc : NULL, stop_ids, 16);

    engine e;
    /* one request: its prompt in one step, its blocks all its own */
    engine_opts eo = { .max_num_batched_tokens = n_ids, .max_num_seqs = 1, .kv_tokens = n_ids + (int)max_tokens,
                       .no_chunked_prefill = 1, .no_prefix_caching = 1, .reserve_worst_case = 1 };
    if (engine_init(&e, &m, &eo, err, sizeof err)) { stack_fail("%s", err); goto out; }
    request r = { .id = REQ_ID, .prompt = ids, .n_prompt = n_ids, .max_tokens = (int)max_tokens,
                  .samp = { .temperature = (float)temperature, .top_p = (float)top_p, .top_k = (int)top_k },
                  .top_logprobs = (int)top_logprobs, .n_stop = ignore_eos ? 0 : n_stop, .stop_ids = stop_ids,
                  .on_token = on_token, .user = &g };
    sampler_seed(&r.samp, seed >= 0 ? (uint64_t)seed : (uint64_t)time(NULL));
    /* host_s: the generation on this host's clock, whatever the device's
     * timeline says (bench/trace_overhead.sh compares it traced and not) */
    double t0 = trace_host_seconds();
    if (engine_generate(&e, &r, err, sizeof err)) { stack_fail("%s", err); engine_free(&e); goto out; }
    double host_s = trace_host_seconds() - t0;
    engine_free(&e);
    size_t n_tail = 0;
    const char *tail = g.dec ? g.tc.flush(g.dec, &n_tail) : NULL;
    if (tail && n_tail > 0) { append(&g, tail, n_tail); if (!json) fwrite(tail, 1, n_tail, stdout); }
    double per_token = r.n_out > 1 ? r.decode_s / (r.n_out - 1) : 0;
    if (json) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddItemToObject(j, "prompt_ids", cJSON_CreateIntArray(ids, n_ids));
        cJSON_AddItemToObject(j, "ids", g.ids);
        cJSON_AddStringToObject(j, "text", g.text ? g.text : "");
        cJSON_AddStringToObject(j, "finish_reason", r.finish);
        cJSON_AddItemToObject(j, "logprobs", g.logprobs);
        cJSON_AddNumberToObject(j, "prefill_s", r.prefill_s);
        cJSON_AddNumberToObject(j, "decode_s_per_token", per_token);
        cJSON_AddNumberToObject(j, "host_s", host_s);
        cJSON_AddStringToObject(j, "cpu_kernel", k_quant_kernel());   /* the block formats' (quant.c) */
        g.ids = g.logprobs = NULL;
        char *s = cJSON_PrintUnformatted(j);
        puts(s);
        free(s);
        cJSON_Delete(j);
    } else {
        printf("\n");
        fflush(stdout);
        fprintf(stderr, "[%d prompt tokens, %d generated, finish %s; prefill %.1f ms, decode %.2f ms/token]\n",
                n_ids, r.n_out, r.finish, r.prefill_s * 1e3, per_token * 1e3);
    }
    rc = 0;
out:
    cJSON_Delete(g.ids);
    cJSON_Delete(g.logprobs);
    free(g.text);
    free(ids);
    if (g.dec) g.tc.decoder_free(g.dec);
    if (g.tc.ctx) g.tc.close(g.tc.ctx);
    model_free(&m);
    if (stack_close(&k, err, sizeof err)) return stack_fail("%s", err);
    return rc;
}
