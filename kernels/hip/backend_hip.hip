/*
 * backend_hip.hip -- --device hip:N: the HIP kernels' table, on layer 2's
 * HIP driver (layers/runtime/hip/runtime_hip.hip). The launchers are in
 * elementwise.hip, matmul.hip, attention.hip, mla.hip and moe.hip; each kernel file's list
 * goes down to layer 2 for --jit.
 */
#include "kernels/hip/hip_common.h"

extern const rt_kernel_list jit_elementwise, jit_matmul, jit_attention, jit_mla, jit_moe;
static const rt_kernel_list *const JIT[] = { &jit_elementwise, &jit_matmul, &jit_attention, &jit_mla, &jit_moe };

#ifndef __HIP_DEVICE_COMPILE__   /* a host table: clang's device pass must not see host functions */
extern "C" const backend backend_hip = {
    .name = "hip", .driver = &rt_hip, .launches = 1, .jit = JIT, .n_jit = (int)(sizeof JIT / sizeof *JIT),
    .embedding = hip_embedding, .rmsnorm = hip_rmsnorm, .matmul = hip_matmul, .rope = hip_rope,
    .kv_append = hip_kv_append, .attention = hip_attention, .mla_absorb = hip_mla_absorb, .mla_kv_append = hip_mla_kv_append,
    .mla_attention = hip_mla_attention, .mla_up_v = hip_mla_up_v, .silu_mul = hip_silu_mul, .add = hip_add,
    .moe_route = hip_moe_route, .moe_matmul = hip_moe_matmul, .moe_combine = hip_moe_combine,
};
#endif
