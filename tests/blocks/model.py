"""A model of the KV block manager, written from its specification
(layers/scheduler/blocks.h) and vLLM V1's BlockPool, not from blocks.c: no
hashes here, a cached block is known by the whole prefix it ends.

- A pool of blocks 0..n-1, each with a reference count (the sequences that
  hold it). The free queue holds those no one holds: new blocks are taken
  from its head, released ones go to its tail, a sequence's last block
  first; at the start it is 0, 1, ..., n-1.
- A block taken for new ids gets a new generation, and if it was cached it
  is evicted: it stops being a hit.
- Committing a sequence's full blocks caches each under the prefix it ends
  (every id from the sequence's start to its own last), with the block
  before it, in the generation that block had then.
- A cached block is a hit for its prefix while the block before it still
  has that generation and is itself a hit (a chain of blocks taken by no
  one else since). Among several hits for one prefix (two sequences that
  computed the same ids at once each cached its own copy; vLLM keeps both
  too), lookup takes the one cached last.
- A lookup takes whole blocks from the start while they are hits, up to
  max_tokens ids. A free hit leaves the free queue when a sequence takes it.
"""


class Block:
    def __init__(self):
        self.ref = 0
        self.gen = 0
        self.prefix = None      # the ids it ends, while cached
        self.parent = None      # (block, its generation then), or None: the first block
        self.cached_at = 0


class Seq:
    def __init__(self):
        self.blocks, self.len, self.hashed = [], 0, 0


class Pool:
    def __init__(self, n_blocks, block_size, caching):
        self.bs, self.caching = block_size, caching
        self.b = [Block() for _ in range(n_blocks)]
        self.free = list(range(n_blocks))
        self.evictions = 0
        self.commits = 0

    def is_hit(self, i):
        k = self.b[i]
        if k.prefix is None:
            return False
        if k.parent is None:
            return True
        p, gen = k.parent
        return self.b[p].gen == gen and self.is_hit(p)

    def lookup(self, ids, max_tokens):
        if not self.caching:
            return []
        hit = []
        while (len(hit) + 1) * self.bs <= max_tokens:
            prefix = tuple(ids[:(len(hit) + 1) * self.bs])
            found = [i for i, k in enumerate(self.b) if k.prefix == prefix and self.is_hit(i)]
            if not found:
                break
            hit.append(max(found, key=lambda i: self.b[i].cached_at))
        return hit

    def needed(self, seq, hit, length):
        idle = sum(self.b[i].ref == 0 for i in hit)
        fresh = -(-length // self.bs) - len(seq.blocks) - len(hit)
        return idle + max(fresh, 0)

    def allocate(self, seq, hit, length):
        """True, or False (and nothing changed) if the free queue is short."""
        if self.needed(seq, hit, length) > len(self.free):
            return False
        for i in hit:
            if self.b[i].ref == 0:
                self.free.remove(i)
            self.b[i].ref += 1
            seq.blocks.append(i)
        if hit:
            seq.hashed, seq.len = len(hit), len(hit) * self.bs
        while len(seq.blocks) * self.bs < length:
            i = self.free.pop(0)
            k = self.b[i]
            if k.prefix is not None:
                self.evictions += 1
            k.prefix, k.parent, k.gen, k.ref = None, None, k.gen + 1, 1
            seq.blocks.append(i)
        return True

    def commit(self, seq, ids, n):
        if not self.caching:
            return
        for j in range(seq.hashed, n // self.bs):
            k = self.b[seq.blocks[j]]
            k.prefix = tuple(ids[:(j + 1) * self.bs])
            k.parent = (seq.blocks[j - 1], self.b[seq.blocks[j - 1]].gen) if j else None
            self.commits += 1
            k.cached_at = self.commits
            seq.hashed = j + 1

    def release(self, seq):
        for i in reversed(seq.blocks):
            self.b[i].ref -= 1
            if self.b[i].ref == 0:
                self.free.append(i)
        seq.blocks, seq.len, seq.hashed = [], 0, 0
