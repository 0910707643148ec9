/* util.c -- what every command and lab shares (stack.h): one-line
 * failures, numbers from the command line, folders for output. */
#include "stack/stack.h"
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int stack_fail(const char *fmt, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    for (char *p = buf; *p; p++) if (*p == '\n') *p = ' ';   /* one line, always */
    fprintf(stderr, "hipath: %s\n", buf);
    return 1;
}

int parse_int(const char *s, long lo, long hi, long *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

int parse_float(const char *s, double lo, double hi, double *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= lo && v <= hi)) return -1;
    *out = v;
    return 0;
}

int stack_make_parent(const char *path) {
    char d[1024];
    snprintf(d, sizeof d, "%s", path);
    for (char *p = d + 1; *p; p++)
        if (*p == '/') { *p = 0; mkdir(d, 0755); *p = '/'; }
    char *last = strrchr(d, '/');
    if (!last || last == d) return 0;
    *last = 0;
    struct stat st;
    return stat(d, &st) == 0 && S_ISDIR(st.st_mode) ? 0 : -1;
}
