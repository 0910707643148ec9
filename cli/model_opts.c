/* model_opts.c -- the options `run` and `serve` share (cli.h): the model,
 * the device it runs on, the trace it records. */
#include "cli/cli.h"
#include "layers/runtime/runtime.h"
#include "layers/scheduler/served.h"
#include "layers/ops/ops.h"
#include <stdio.h>
#include <string.h>

/* A parallelism's degree, 1 to 64 (flag: its name, what: of what), into
 * *n and the device's setting: 1, or -1 with the reason printed. */
static int ways(const char *arg, const char *flag, const char *what, int *n, void (*set)(int)) {
    long v;
    if (parse_int(arg, 1, 64, &v)) return -stack_fail("%s must be 1 to 64 %s, got '%s'", flag, what, arg);
    set(*n = (int)v);
    return 1;
}

int model_option(model_opts *m, int c, const char *arg) {
    switch (c) {
    case OPT_MODEL: m->model = arg; m->model_given = 1; return 1;
    case OPT_DEVICE: m->device = arg; return 1;
    case OPT_JIT: rt_jit(1); return 1;
    case OPT_ANALYTIC: m->analytic = 1; return 1;
    case OPT_CONFIG: m->config = arg; return 1;
    case OPT_DTYPE: m->dtype = arg; return 1;
    case OPT_TOKENIZER: m->tokenizer = arg; return 1;
    case OPT_REPLY: m->reply = arg; return 1;
    case OPT_TRACE_DB: m->db = arg; return 1;
    case OPT_PERFETTO: m->perfetto = arg; return 1;
    case OPT_KV_MB:
        if (parse_float(arg, 1e-3, 1 << 20, &m->kv_cache_mb)) return -stack_fail("--kv-cache-mb must be a positive number, got '%s'", arg);
        return 1;
    case OPT_TP: return ways(arg, "--tp", "GPUs", &m->tp, rt_gpus);
    case OPT_PP: return ways(arg, "--pp", "stages", &m->pp, rt_stages);
    case OPT_DP: return ways(arg, "--dp", "replicas", &m->dp, rt_replicas);
    case OPT_EP: return ways(arg, "--ep", "GPUs", &m->ep, rt_expert_parallel);
    case OPT_EXPERT_SKEW: {
        double s;
        if (parse_float(arg, 0, 10, &s)) return -stack_fail("--expert-skew must be a Zipf exponent from 0 to 10, got '%s'", arg);
        op_moe_skew(s);
        return 1;
    }
    case OPT_DP_LB:
        for (m->dp_lb = 0; m->dp_lb < 2 && strcmp(arg, DP_LB_NAME[m->dp_lb]); m->dp_lb++) {}
        if (m->dp_lb == 2) return -stack_fail("--dp-lb must be round_robin or shortest_queue, got '%s'", arg);
        return 1;
    }
    return 0;
}

int model_options_done(model_opts *m, const char *cmd) {
    if (m->analytic != !!m->config) return stack_fail("%s: --analytic and --config CONFIG.json go together (a real model takes --model)", cmd);
    if (!m->analytic) return 0;
    if (m->model_given) return stack_fail("%s --analytic: a config (--config), not a model (--model)", cmd);
    stack_analytic_device(m->device, m->analytic_device, sizeof m->analytic_device);
    m->device = m->analytic_device;
    m->model = m->config;
    return 0;
}
