/*
 * jit_cpu.cpp -- --jit on HIP on the CPU (make HIP=cpu), in place of
 * jit.hip: no run-time compiler targets hip_cpu.h, whose kernels are
 * compiled into the binary, so the runtime is told why and keeps them.
 */
#include "layers/runtime/hip/jit.h"
#include <stdio.h>

int jit_build(const jit_program *p, jit_image *im, char *err, int errlen) {
    (void)p; (void)im;
    snprintf(err, errlen, "HIP on the CPU (make HIP=cpu) has no run-time compiler: its kernels are compiled in");
    return -1;
}

void jit_free(jit_image *im) { (void)im; }
