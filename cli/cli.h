/* cli.h -- the subcommands of build/hipath, one file each; they assemble
 * the stack through stack/ (stack.h). */
#ifndef HIPATH_CLI_H
#define HIPATH_CLI_H

#include "stack/stack.h"

int cmd_generate(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_detokenize(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_bounds(int argc, char **argv);
int cmd_amdahl(int argc, char **argv);
int cmd_device(int argc, char **argv);
int cmd_lab(int argc, char **argv);
int cmd_validate(int argc, char **argv);
int cmd_replay(int argc, char **argv);

/* The options run and serve share (cli/model_opts.c): put MODEL_OPTIONS in
 * the command's getopt_long table and hand each answer to model_option
 * first (1: it was one of them, taken into m; -1: wrong, the reason
 * printed; 0: the command's own); after the options, model_options_done
 * checks --analytic against --config and names its device (0, or 1 with
 * the reason printed). */
enum { OPT_MODEL = 2000, OPT_DEVICE, OPT_JIT, OPT_ANALYTIC, OPT_CONFIG, OPT_DTYPE, OPT_TOKENIZER, OPT_REPLY, OPT_TRACE_DB,
       OPT_PERFETTO, OPT_KV_MB, OPT_TP, OPT_PP, OPT_DP, OPT_DP_LB, OPT_EP, OPT_EXPERT_SKEW };
#define MODEL_OPTIONS \
    { "model", 1, 0, OPT_MODEL }, { "device", 1, 0, OPT_DEVICE }, { "jit", 0, 0, OPT_JIT }, { "analytic", 0, 0, OPT_ANALYTIC }, \
    { "config", 1, 0, OPT_CONFIG }, { "dtype", 1, 0, OPT_DTYPE }, { "tokenizer", 1, 0, OPT_TOKENIZER }, { "reply", 1, 0, OPT_REPLY }, \
    { "trace-db", 1, 0, OPT_TRACE_DB }, { "perfetto", 1, 0, OPT_PERFETTO }, { "kv-cache-mb", 1, 0, OPT_KV_MB }, { "tp", 1, 0, OPT_TP }, \
    { "pp", 1, 0, OPT_PP }, { "dp", 1, 0, OPT_DP }, { "dp-lb", 1, 0, OPT_DP_LB }, \
    { "ep", 1, 0, OPT_EP }, { "expert-skew", 1, 0, OPT_EXPERT_SKEW }
typedef struct {
    const char *model;          /* a model folder or .gguf; with --analytic, the config */
    const char *device, *config, *dtype, *tokenizer, *reply, *db, *perfetto;
    int model_given, analytic, tp, pp, dp, dp_lb, ep;
    double kv_cache_mb;
    char analytic_device[200];
} model_opts;
int model_option(model_opts *m, int c, const char *arg);
int model_options_done(model_opts *m, const char *cmd);

/* --workshop (cli/workshop.c): a random teacher's key (32 hex digits,
 * cap >= 33; 0 or -1), and what the room needs to know, printed: the
 * join URLs (the LAN's addresses when host is 0.0.0.0), the code, the
 * teacher's URL with its key. */
int  cli_workshop_key(char *out, int cap);
void cli_workshop_print(const char *host, int port, const char *code, const char *teacher_key, const web_opts *wo);

#endif
