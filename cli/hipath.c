/*
 * hipath.c -- the command line: one subcommand per job.
 */
#include "cli/cli.h"
#include "kernels/cpu/kernels.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct { const char *name; int (*fn)(int, char **); const char *help; } CMDS[] = {
    { "generate",   cmd_generate,   "run the model on a prompt (layers 7-4, no server)" },
    { "tokenize",   cmd_tokenize,   "text on stdin -> token ids as a JSON array" },
    { "detokenize", cmd_detokenize, "JSON array of ids on stdin -> text" },
    { "serve",      cmd_serve,      "OpenAI-compatible HTTP server (layer 6)" },
    { "run",        cmd_run,        "send a chat message through the whole path (layers 8-1), traced" },
    { "bounds",     cmd_bounds,     "capacity and prefill/decode lower bounds of a model on a GPU" },
    { "amdahl",     cmd_amdahl,     "the whole's speed-up when a share of its time gets faster" },
    { "device",     cmd_device,     "the device layers 2-1 run on, and its measured copy bandwidth" },
    { "lab",        cmd_lab,        "run lab N's experiment: predicted against measured (labs/)" },
    { "validate",   cmd_validate,   "the simulated GPU against real GPUs' published measurements" },
    { "replay",     cmd_replay,     "a real engine's serving run against the modeled one: TTFT, TPOT, latency" },
};

static void usage(FILE *f) {
    fprintf(f, "usage: hipath <command> [options]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof CMDS / sizeof CMDS[0]; i++) fprintf(f, "  %-11s %s\n", CMDS[i].name, CMDS[i].help);
    fprintf(f, "\n'hipath <command> --help' describes a command's options.\n");
}

int main(int argc, char **argv) {
    cpu_threads_wait(argv);   /* OpenMP's policy, read as libgomp loads: may start again */
    const char *kernel = getenv("HIPATH_CPU_KERNEL");   /* the block formats' kernel; docs/cpu.md */
    if (kernel && *kernel && k_quant_use(kernel))
        return stack_fail("HIPATH_CPU_KERNEL=%s: this CPU's block-format kernels are: %s", kernel, k_quant_kernels());
    if (argc < 2) { usage(stderr); return 2; }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) { usage(stdout); return 0; }
    for (size_t i = 0; i < sizeof CMDS / sizeof CMDS[0]; i++)
        if (!strcmp(argv[1], CMDS[i].name)) return CMDS[i].fn(argc - 1, argv + 1);
    return stack_fail("unknown command '%s' (try 'hipath --help')", argv[1]);
}
