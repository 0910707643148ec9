/*
 * fuzz.h -- what the libFuzzer harnesses share (tests/fuzz/README.md).
 * Each harness is one file, fuzz_NAME.c, defining LLVMFuzzerTestOneInput.
 */
#ifndef HIPATH_FUZZ_H
#define HIPATH_FUZZ_H

#include <dirent.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static char fuzz_dir[64];

static inline void fuzz_cleanup(void) {
    DIR *d = opendir(fuzz_dir);
    char path[160];
    for (struct dirent *e; d && (e = readdir(d));)
        if (*e->d_name != '.') snprintf(path, sizeof path, "%s/%s", fuzz_dir, e->d_name), unlink(path);
    if (d) closedir(d);
    rmdir(fuzz_dir);
}

/* The input as a file named NAME in this process's folder under /dev/shm
 * (loaders take paths; a folder of its own, so a tokenizer.json has no
 * tokenizer_config.json beside it unless the harness writes one), removed
 * at exit. The path is in a static buffer. */
static inline const char *fuzz_file(const char *name, const uint8_t *data, size_t size) {
    static char path[128];
    if (!*fuzz_dir) {
        snprintf(fuzz_dir, sizeof fuzz_dir, "/dev/shm/hipath-fuzz-%d", (int)getpid());
        if (mkdir(fuzz_dir, 0700)) { perror(fuzz_dir); abort(); }
        atexit(fuzz_cleanup);
    }
    const char *dir = fuzz_dir;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, size, f) != size || fclose(f)) { perror(path); abort(); }
    return path;
}

#endif
