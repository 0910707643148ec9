/* names.c -- the words a trace uses for layers, directions and clocks: the
 * SQLite columns, the Perfetto annotations, the CLI's tables and the web
 * page (through /api/info) all say these, and read them back here. */
#include "trace/trace_sink.h"
#include <string.h>

static const char *layer_names[] = { "?", "gpu", "runtime", "kernels", "ops",
                                     "tensor", "scheduler", "tokenizer", "client" };
const char *trace_layer_name(int layer) {
    return layer >= L_GPU && layer <= L_CLIENT ? layer_names[layer] : layer_names[0];
}
const char *trace_dir_name(int dir) {
    return dir == DIR_DOWN ? "down" : dir == DIR_UP ? "up" : "none";
}
const char *trace_clock_name(int clock) {
    return clock == TRACE_MODELED ? "modeled" : clock == TRACE_MIXED ? "mixed" : "measured";
}
int trace_dir_of(const char *name) {
    for (int d = DIR_NONE; d <= DIR_UP; d++) if (name && !strcmp(name, trace_dir_name(d))) return d;
    return DIR_NONE;
}
int trace_clock_of(const char *name) {
    for (int c = TRACE_MEASURED; c <= TRACE_MIXED; c++) if (name && !strcmp(name, trace_clock_name(c))) return c;
    return TRACE_MEASURED;
}
