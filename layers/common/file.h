/*
 * file.h -- the one way hipath reads a whole file (or stdin) into memory,
 * with a size limit, and a JSON file into cJSON. Errors are one line that
 * names the file.
 */
#ifndef HIPATH_FILE_H
#define HIPATH_FILE_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdio.h>

/* Limits callers use: a config or profile, a tokenizer.json. */
#define FILE_SMALL (16u << 20)
#define FILE_LARGE (1u << 30)

/* The bytes of path ("-": stdin), NUL-terminated, at most max bytes; *len
 * gets the count (len may be NULL). NULL with a reason in err: cannot
 * open, read error, larger than max, out of memory. The caller frees. */
char *file_read(const char *path, size_t max, size_t *len, char *err, int errlen);
/* The same from an open stream; name is what err calls it. */
char *file_read_stream(FILE *f, const char *name, size_t max, size_t *len, char *err, int errlen);
/* path parsed as JSON (at most max bytes); NULL with a reason. */
cJSON *json_read(const char *path, size_t max, char *err, int errlen);

#endif
