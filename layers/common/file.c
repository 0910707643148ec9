/* file.c -- whole files into memory, bounded. */
#include "layers/common/file.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>

char *file_read_stream(FILE *f, const char *name, size_t max, size_t *len, char *err, int errlen) {
    char *buf = NULL;
    size_t n = 0, cap = 0, k;
    do {
        if (n + 65536 > cap) {
            if (cap > max) { free(buf); snprintf(err, errlen, "%s: larger than the limit of %zu bytes", name, max); return NULL; }
            char *p = realloc(buf, cap = 2 * cap + 65536);
            if (!p) { free(buf); snprintf(err, errlen, "%s: out of memory reading it", name); return NULL; }
            buf = p;
        }
        n += k = fread(buf + n, 1, cap - n - 1, f);
    } while (k > 0);
    if (ferror(f)) { free(buf); snprintf(err, errlen, "%s: read error", name); return NULL; }
    if (n > max) { free(buf); snprintf(err, errlen, "%s: larger than the limit of %zu bytes", name, max); return NULL; }
    buf[n] = 0;
    if (len) *len = n;
    return buf;
}

char *file_read(const char *path, size_t max, size_t *len, char *err, int errlen) {
    if (!strcmp(path, "-")) return file_read_stream(stdin, "stdin", max, len, err, errlen);
    FILE *f = fopen(path, "rb");
    if (!f) { snprintf(err, errlen, "%s: cannot open (%s)", path, strerror(errno)); return NULL; }
    char *buf = file_read_stream(f, path, max, len, err, errlen);
    fclose(f);
    return buf;
}

cJSON *json_read(const char *path, size_t max, char *err, int errlen) {
    size_t n;
    char *buf = file_read(path, max, &n, err, errlen);
    if (!buf) return NULL;
    const char *at = NULL;
    cJSON *j = cJSON_ParseWithOpts(buf, &at, 0);
    if (!j) snprintf(err, errlen, "%s: not valid JSON (at byte %ld)", path, at ? (long)(at - buf) : 0L);
    free(buf);
    return j;
}
