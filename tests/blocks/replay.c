/*
 * replay.c -- the block manager (layers/scheduler/blocks.h) driven by a
 * script on stdin, its state printed after each line, for
 * tests/check_blocks_fuzz.sh to compare with tests/blocks/model.py.
 *
 *   init N_BLOCKS BLOCK_SIZE CACHING     a fresh pool; every sequence empty
 *   admit S CHUNK T...    sequence S (empty) with ids T...: the prefix
 *                         cache's hit (up to all ids but the last, as the
 *                         scheduler asks), then blocks for CHUNK ids more
 *   grow S LEN T...       S's ids gain T..., its blocks grow to hold LEN
 *   compute S N           S's first N ids are stored (its len), then committed
 *   release S             S lets go of its blocks
 *   lookup T...           the hit for ids T..., taking nothing
 *
 * After each line: what it did, then "free F: QUEUE | evictions E", then
 * one line per non-empty sequence: "S: BLOCKS | len L".
 */
#include "layers/scheduler/blocks.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SEQS 8
#define MAX_IDS 4096

static block_manager bm;
static kv_seq seq[SEQS];
static int ids[SEQS][MAX_IDS], n_ids[SEQS];
static int hit[MAX_IDS];

/* The numbers after the command: their count (-1 if more than cap, or not numbers). */
static int numbers(char *s, int *v, int cap) {
    int n = 0;
    for (char *t = strtok(s, " \t\n"); t; t = strtok(NULL, " \t\n")) {
        char *end;
        long x = strtol(t, &end, 10);
        if (*end || n == cap) return -1;
        v[n++] = (int)x;
    }
    return n;
}

static void print_hit(const char *what, int n) {
    printf("%s [", what);
    for (int i = 0; i < n; i++) printf(i ? " %d" : "%d", hit[i]);
    printf("]");
}

static void print_state(void) {
    printf("free %d:", bm.n_free);
    for (int i = bm.head; i >= 0; i = bm.b[i].next) printf(" %d", i);
    printf(" | evictions %llu\n", (unsigned long long)bm.evictions);
    for (int s = 0; s < SEQS; s++) {
        if (!seq[s].n_blocks) continue;
        printf("%d:", s);
        for (int j = 0; j < seq[s].n_blocks; j++) printf(" %d", seq[s].blocks[j]);
        printf(" | len %d\n", seq[s].len);
    }
}

static void reset(void) {
    for (int s = 0; s < SEQS; s++) blocks_release(&bm, &seq[s]);
    blocks_free(&bm);
    memset(n_ids, 0, sizeof n_ids);
}

int main(void) {
    static char line[1 << 16];
    static int v[MAX_IDS + 3];
    int ok = 1, ready = 0;
    for (int no = 1; ok && fgets(line, sizeof line, stdin); no++) {
        char cmd[16];
        int at;
        if (sscanf(line, "%15s %n", cmd, &at) < 1) continue;
        int n = numbers(line + at, v, MAX_IDS + 3), s = n > 0 ? v[0] : -1;
        int seq_ok = s >= 0 && s < SEQS;
        if (!strcmp(cmd, "init") && n == 3 && v[0] > 0 && v[1] > 0) {
            if (ready) reset();
            if (blocks_init(&bm, v[0], v[1], v[2])) { fprintf(stderr, "replay: out of memory\n"); return 1; }
            ready = 1;
            printf("init\n");
        } else if (!ready) {
            ok = 0;
        } else if (!strcmp(cmd, "admit") && n >= 3 && seq_ok && !seq[s].n_blocks && v[1] > 0) {
            n_ids[s] = n - 2;
            memcpy(ids[s], v + 2, n_ids[s] * sizeof *v);
            int n_hit = blocks_lookup(&bm, 0, ids[s], n_ids[s] - 1, hit, MAX_IDS), cached = n_hit * bm.block_size;
            int len = cached + v[1] < n_ids[s] ? cached + v[1] : n_ids[s];
            print_hit("admit: hit", n_hit);
            printf(" needed %d", blocks_needed(&bm, &seq[s], hit, n_hit, len));
            printf(blocks_allocate(&bm, &seq[s], hit, n_hit, len) ? " short\n" : " ok\n");
        } else if (!strcmp(cmd, "grow") && n >= 2 && seq_ok && n_ids[s] + n - 2 <= MAX_IDS && v[1] <= n_ids[s] + n - 2) {
            memcpy(ids[s] + n_ids[s], v + 2, (n - 2) * sizeof *v);
            n_ids[s] += n - 2;
            printf("grow: needed %d", blocks_needed(&bm, &seq[s], NULL, 0, v[1]));
            printf(blocks_allocate(&bm, &seq[s], NULL, 0, v[1]) ? " short\n" : " ok\n");
        } else if (!strcmp(cmd, "compute") && n == 2 && seq_ok && v[1] >= seq[s].len && v[1] <= n_ids[s] &&
                   v[1] <= seq[s].n_blocks * bm.block_size) {
            seq[s].len = v[1];
            blocks_commit(&bm, &seq[s], 0, ids[s], v[1]);
            printf("compute: hashed %d\n", seq[s].n_hashed);
        } else if (!strcmp(cmd, "release") && n == 1 && seq_ok) {
            blocks_release(&bm, &seq[s]);
            n_ids[s] = 0;
            printf("release\n");
        } else if (!strcmp(cmd, "lookup") && n >= 1) {
            print_hit("lookup: hit", blocks_lookup(&bm, 0, v, n, hit, MAX_IDS));
            printf("\n");
        } else {
            ok = 0;
        }
        if (!ok) fprintf(stderr, "replay: line %d: bad command: %s", no, line);
        else print_state();
    }
    if (ready) reset();
    return ok ? 0 : 1;
}
