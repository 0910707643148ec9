/*
 * paged.h -- the paged KV cache as the attention kernels index it
 * (attention_kernels.h, mla_kernels.h): a token's slot, and the work of a
 * workgroup of one sequence's rows (uploaded by attention.hip).
 */
#ifndef HIPATH_PAGED_H
#define HIPATH_PAGED_H
#include "kernels/hip/device.h"

/* Layer l's row for position pos of the sequence whose block table is blocks. */
__device__ inline size_t slot(const int *blocks, int l, int pos, int n_blocks_pool, int BS, int kv_dim) {
    return (((size_t)l * n_blocks_pool + blocks[pos / BS]) * BS + pos % BS) * kv_dim;
}

/* Workgroup wg's rows of one sequence: work[5 wg ..] = its block table's
 * offset, its first row in the step, that row's position, its row count,
 * and the workgroup's first row among them. */
enum { WORK_TABLE, WORK_ROW0, WORK_POS0, WORK_N, WORK_I0, WORK_INTS };

#endif
