/*
 * cmd_lab.c -- `hipath lab N`: the arguments; lab N itself is labs/labN.c,
 * beside its sheet (labs/README.md).
 */
#include "cli/cli.h"
#include "labs/lab.h"
#include <getopt.h>
#include <stdio.h>

static const char USAGE[] =
    "usage: hipath lab N [options]      N = 1..10 (labs/README.md; 8, 9 and 10 run their own analytic models)\n"
    "  --device D    auto (default: hip:0 if present, else sim:w7900), cpu, sim:PROFILE, hip:N\n"
    "  --model DIR   the real model (default models/tiny-hi)\n"
    "  --out DIR     where labN.db, .pftrace, .csv, .json, .png, .svg go (default labs/out/labN/)\n"
    "  --json        the rows as JSON on stdout (labN.json), not the table\n";

int cmd_lab(int argc, char **argv) {
    static const struct option OPTS[] = { { "device", 1, 0, 'D' }, { "model", 1, 0, 'm' }, { "out", 1, 0, 'o' }, { "json", 0, 0, 'j' }, { "help", 0, 0, 'h' }, { 0, 0, 0, 0 } };
    const char *device = "auto", *model = "models/tiny-hi", *out = NULL;
    int c, json = 0;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", OPTS, NULL)) != -1) {
        switch (c) {
        case 'D': device = optarg; break;
        case 'm': model = optarg; break;
        case 'o': out = optarg; break;
        case 'j': json = 1; break;
        case 'h': fputs(USAGE, stdout); return 0;
        default: return stack_fail("lab: unknown or incomplete option '%s' (see --help)", argv[optind - 1]);
        }
    }
    long n;
    if (optind != argc - 1 || parse_int(argv[optind], 1, LAB_COUNT, &n)) return stack_fail("lab: give the lab's number, 1 to %d (hipath lab --help)", LAB_COUNT);
    return lab_run((int)n, device, model, out, json);
}
