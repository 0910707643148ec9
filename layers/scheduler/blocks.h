/*
 * blocks.h -- layer 6: the KV block manager (vLLM V1's BlockPool and
 * KVCacheManager): which sequence holds which of the pool's blocks, and
 * the prefix cache.
 *
 * Every block has a reference count: the sequences whose block tables
 * hold it. A full block of a sequence is *cached* under a hash of its
 * token ids and of the block before it (so a hash names a whole prefix),
 * and another request whose prompt starts with the same tokens takes the
 * same block instead of computing it again. A block no sequence holds
 * goes on the free queue, in the order it was freed; a cached one keeps
 * its hash there until it is taken for new tokens (least recently freed
 * first): it is still a hit until then.
 *
 * A salt (vLLM's cache_salt) starts a prefix's chain of hashes: prompts
 * of different salts never share blocks (a workshop's students, whose
 * cached_tokens and TTFT would otherwise tell one whether another sent the
 * same words; the salt is in the hash alone, so only a collision of 64-bit
 * hashes could join them, and a hit's ids are still confirmed). A hash
 * only finds a candidate. A hit is confirmed against the block's
 * token ids and the block before it (its id, and that block's generation,
 * which changes each time the block is reused; or a copy of that block,
 * confirmed the same way): no hash collision can put another prompt's K
 * and V into a sequence.
 */
#ifndef HIPATH_BLOCKS_H
#define HIPATH_BLOCKS_H

#include "layers/common/kv.h"
#include <stdint.h>

typedef struct {
    int ref;                 /* sequences holding it */
    uint64_t hash;           /* 0: not cached */
    int parent, parent_gen;  /* cached: the block before it in its prefix (-1: first), and its generation then */
    int gen;                 /* times it was taken for new tokens */
    int prev, next;          /* free queue (-1 ends) */
    int hnext;               /* next block in its hash bucket (-1 ends) */
} kv_block;

typedef struct {
    int n_blocks, block_size;
    int caching;             /* prefix caching on */
    kv_block *b;             /* [n_blocks] */
    int *ids;                /* [n_blocks][block_size]: a cached block's token ids */
    int head, tail, n_free;  /* the free queue: taken from the head, freed to the tail */
    int *bucket, mask;       /* hash table: bucket[hash & mask] -> first block */
    uint64_t evictions;      /* cached blocks taken for new tokens */
} block_manager;

int  blocks_init(block_manager *bm, int n_blocks, int block_size, int caching);
void blocks_free(block_manager *bm);
/* The prefix cache's hit for a sequence of tokens[0..n): the longest run
 * of cached full blocks from its start, at most max_tokens tokens of it
 * (the caller keeps the last prompt token to compute: it gives the
 * logits). Their ids into hit[] (cap of them); returns how many. Takes
 * nothing. */
int  blocks_lookup(const block_manager *bm, uint64_t salt, const int *tokens, int max_tokens, int *hit, int cap);
/* Blocks s needs, from the free queue, to hold len tokens after taking the
 * n_hit blocks of a lookup (held by no one, they are on the free queue too). */
int  blocks_needed(const block_manager *bm, const kv_seq *s, const int *hit, int n_hit, int len);
/* Give s the n_hit blocks (s is empty then; s->len becomes their tokens),
 * then enough new ones to hold len tokens. All or nothing: 0, or -1 if
 * the free queue is short. */
int  blocks_allocate(block_manager *bm, kv_seq *s, const int *hit, int n_hit, int len);
/* Cache s's full blocks among tokens[0..n) not cached yet (prefix caching
 * on; n <= s->len: their K and V are stored). */
void blocks_commit(block_manager *bm, kv_seq *s, uint64_t salt, const int *tokens, int n);
/* s lets go of its blocks, last first, so that a prefix's tail is taken
 * for new tokens before its head. s is empty after. */
void blocks_release(block_manager *bm, kv_seq *s);

#endif
