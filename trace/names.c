/* names.c -- the words a trace uses for layers, directions and clocks: the
 * SQLite columns, the Perfetto annotations and the CLI's tables all say these. */
#include "trace/trace_sink.h"

static const char *layer_names[] = { "?", "gpu", "runtime", "kernels", "ops",
                                     "tensor", "scheduler", "tokenizer", "client" };
const char *trace_layer_name(int layer)
{
    return layer >= L_GPU && layer <= L_CLIENT ? layer_names[layer] : layer_names[0];
}
const char *trace_dir_name(int dir)
{
    return dir == DIR_DOWN ? "down" : dir == DIR_UP ? "up" : "none";
}
const char *trace_clock_name(int clock)
{
    return clock == TRACE_MODELED ? "modeled" : clock == TRACE_MIXED ? "mixed" : "measured";
}
