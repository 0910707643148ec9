/*
 * jit.h -- --jit: layer 2 compiles the kernels at run time. hiprtc (AMD)
 * or nvrtc (NVIDIA, with HIPATH_CUDA) compiles the device headers
 * (the kernels/hip/NAME_kernels.h: no C library), embedded in the binary at build
 * time, for the device's arch: a code object, or PTX that the driver
 * finishes when it loads it. The result is cached on disk, one file per
 * (source hash, arch, compiler version). Host code only, no HIP runtime:
 * tests/check_hip_jit.sh builds it into a CPU program.
 */
#ifndef HIPATH_JIT_H
#define HIPATH_JIT_H

#include <stddef.h>

enum { JIT_MAX_KERNELS = 64 };

typedef struct {
    const char *arch;                  /* "gfx90a", "gfx1100", "sm_90" */
    const char *const *header;         /* the device headers the program includes */
    int n_header;
    const char *const *name;           /* the kernels, as name expressions */
    int n_name;
} jit_program;

typedef struct {
    char *blob;                        /* the cache file: the symbols, then the code */
    const char *code;                  /* code object (AMD) or PTX, NUL-terminated (NVIDIA) */
    size_t code_bytes;
    const char *symbol[JIT_MAX_KERNELS];   /* name i's symbol in the code (mangled) */
    int hit;                           /* read from the cache: no compiler call */
    double seconds;                    /* the compiler's time; 0 on a hit */
    size_t source_bytes;               /* prelude and headers: what the hash covers */
    char compiler[32];                 /* "nvrtc 13.2", "hiprtc 9.0" */
    char path[1024];                   /* the cache file; "" when it could not be written */
} jit_image;

/* 0, or -1 with a one-line reason: the compiler's first error, or the
 * kernel whose name it did not know. Never exits. */
int  jit_build(const jit_program *p, jit_image *im, char *err, int errlen);
void jit_free(jit_image *im);
/* $HIPATH_JIT_CACHE, else $XDG_CACHE_HOME/hipath/jit, else ~/.cache/hipath/jit. */
const char *jit_cache_dir(char *buf, size_t n);

#endif
