/*
 * cmd_amdahl.c -- `hipath amdahl`: how much faster the whole gets when a
 * share of its time does (labs/amdahl.h), for every fraction and speed-up
 * given, and the range they span.
 */
#include "cli/cli.h"
#include "labs/amdahl.h"
#include <cjson/cJSON.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_VALUES 16

static const char USAGE[] =
    "usage: hipath amdahl --fraction F [--fraction F ...] --speedup S [--speedup S ...] [options]\n"
    "  --fraction F   the share of the time that gets faster, 0 to 1: 0.2, 20% or 1/201\n"
    "  --speedup S    how many times faster that share runs (above 0; inf: it vanishes)\n"
    "  --time T       the whole's time before, in any unit: prints the time after too\n"
    "  --json         one JSON object\n"
    "Both options repeat (up to 16 each): every fraction meets every speed-up, a row\n"
    "each, and the overall speed-ups' range ends the output (the chapter's 1.19-1.32x\n"
    "is --fraction 0.2 --fraction 0.3 --speedup 5).\n"
    "overall = 1 / ((1 - f) + f / s), at most 1 / (1 - f). Details: docs/bounds.md.\n";

/* A share: a decimal (0.2), a percentage (20%) or a ratio (1/201). 0, or -1. */
static int parse_fraction(const char *s, double *out) {
    char *end, *den_end;
    double v = strtod(s, &end);
    if (end == s) return -1;
    if (!strcmp(end, "%")) v /= 100;
    else if (*end == '/') {
        double den = strtod(end + 1, &den_end);
        if (den_end == end + 1 || *den_end || !(den > 0)) return -1;
        v /= den;
    } else if (*end) return -1;
    *out = v;
    return 0;
}

/* JSON has no infinity: an endless speed-up is the string "Infinity",
 * which JavaScript's Number() and Python's float() read back. */
static void add_number(cJSON *j, const char *key, double v) {
    if (isinf(v)) cJSON_AddStringToObject(j, key, "Infinity");
    else cJSON_AddNumberToObject(j, key, v);
}

static void print_json(const amdahl_result *r, int n, double time, double lo, double hi) {
    cJSON *j = cJSON_CreateObject(), *rows = cJSON_AddArrayToObject(j, "rows");
    for (int i = 0; i < n; i++) {
        cJSON *o = cJSON_CreateObject();
        add_number(o, "fraction", r[i].fraction);
        add_number(o, "speedup", r[i].speedup);
        add_number(o, "overall_speedup", r[i].overall);
        add_number(o, "limit", r[i].limit);
        add_number(o, "saved_share", r[i].saved_share);
        if (time > 0) {
            add_number(o, "time_before", time);
            add_number(o, "time_after", time / r[i].overall);
        }
        cJSON_AddItemToArray(rows, o);
    }
    add_number(j, "overall_min", lo);
    add_number(j, "overall_max", hi);
    char *s = cJSON_Print(j);
    puts(s);
    free(s);
    cJSON_Delete(j);
}

static void print_text(const amdahl_result *r, int n, double time, double lo, double hi) {
    printf("%12s %10s %10s %14s %8s%s\n", "fraction f", "speed-up s", "overall", "limit 1/(1-f)", "saved", time > 0 ? "   time before -> after" : "");
    for (int i = 0; i < n; i++) {
        printf("%12.6g %10.4g %9.3fx %13.3fx %7.2f%%", r[i].fraction, r[i].speedup, r[i].overall, r[i].limit, 100 * r[i].saved_share);
        if (time > 0) printf("   %g -> %.6g", time, time / r[i].overall);
        printf("\n");
    }
    if (n > 1) printf("overall speed-up %.3fx to %.3fx\n", lo, hi);
}

int cmd_amdahl(int argc, char **argv) {
    static const struct option OPTS[] = {
        { "fraction", 1, 0, 'f' }, { "speedup", 1, 0, 's' }, { "time", 1, 0, 't' }, { "json", 0, 0, 'j' },
        { "help", 0, 0, 'h' }, { 0, 0, 0, 0 } };
    double f[MAX_VALUES], s[MAX_VALUES], time = 0;
    int nf = 0, ns = 0, json = 0, o;
    optind = 1;
    opterr = 0;
    while ((o = getopt_long(argc, argv, "", OPTS, NULL)) != -1) {
        switch (o) {
        case 'f':
            if (nf == MAX_VALUES) return stack_fail("amdahl: at most %d fractions", MAX_VALUES);
            if (parse_fraction(optarg, &f[nf++])) return stack_fail("--fraction must be a share like 0.2, 20%% or 1/201, got '%s'", optarg);
            break;
        case 's':
            if (ns == MAX_VALUES) return stack_fail("amdahl: at most %d speed-ups", MAX_VALUES);
            if (parse_float(optarg, 0, INFINITY, &s[ns++])) return stack_fail("--speedup must be a number above 0 (or inf), got '%s'", optarg);
            break;
        case 't': if (parse_float(optarg, 0, HUGE_VAL, &time) || !(time > 0) || isinf(time)) return stack_fail("--time must be a positive number, got '%s'", optarg); break;
        case 'j': json = 1; break;
        case 'h': fputs(USAGE, stdout); return 0;
        default: return stack_fail("amdahl: unknown or incomplete option '%s' (see --help)", argv[optind - 1]);
        }
    }
    if (optind < argc) return stack_fail("amdahl: unexpected argument '%s' (see --help)", argv[optind]);
    if (!nf || !ns) return stack_fail("amdahl: --fraction and --speedup are required");

    amdahl_result r[MAX_VALUES * MAX_VALUES];
    char err[256];
    int n = 0;
    double lo = INFINITY, hi = 0;
    for (int i = 0; i < nf; i++)
        for (int k = 0; k < ns; k++, n++) {
            if (amdahl(f[i], s[k], &r[n], err, sizeof err)) return stack_fail("amdahl: %s", err);
            lo = fmin(lo, r[n].overall);
            hi = fmax(hi, r[n].overall);
        }
    if (json) print_json(r, n, time, lo, hi);
    else print_text(r, n, time, lo, hi);
    return 0;
}
