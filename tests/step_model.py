"""step_model.py -- lab 9's step-time model (labs/lab9-scheduler.md, "The
step-time model"), written apart from the C, for the checks that predict
an analytic engine's steps (check_lab9.py, check_replay.py): a step of a
dense model with bf16 weights and KV on a GPU profile is
max(weights / beta, ids x 2 x linear params / Pi) + every launch's latency
+ prefill attention's query-key pairs at the fp32 peak (hipath's kernel has
no matrix cores) + the cached positions decodes read + per sampled sequence
the LM head and its logits' copy back."""


def step_model(cfg, gpu):
    """The model's terms (s): weights, launches, per_id, per_pair, per_position, per_sample."""
    d, L, V, f = cfg["hidden_size"], cfg["num_hidden_layers"], cfg["vocab_size"], cfg["intermediate_size"]
    hd = cfg.get("head_dim") or d // cfg["num_attention_heads"]
    q_dim, kv_dim = cfg["num_attention_heads"] * hd, cfg["num_key_value_heads"] * hd
    beta, pi, pi32 = gpu["memory_bandwidth_bytes_per_s"], gpu["peak_flops"]["bf16"], gpu["peak_flops"]["fp32"]
    linear = d * q_dim + 2 * d * kv_dim + q_dim * d + 3 * d * f             # a layer's q k v o gate up down
    weights = 2 * (L * linear + d * V + d + L * 2 * d + d)                  # + LM head, one embedding row, the norms
    return dict(weights=weights / beta, launches=(3 + 16 * L + 4) * gpu["launch_latency_s"], per_id=2 * L * linear / pi,
                per_pair=4 * q_dim * L / pi32, per_position=2 * 2 * L * kv_dim / beta,
                per_sample=2 * d * V / pi + 4 * V / gpu["host_link_bytes_per_s"])


def t_step(M, n, pairs, positions, sampled):
    """A step computing n ids, `pairs` prefill query-key pairs, decodes reading `positions` cached tokens, `sampled` sequences sampled."""
    return max(M["weights"], n * M["per_id"]) + M["launches"] + pairs * M["per_pair"] + positions * M["per_position"] + sampled * M["per_sample"]


def pairs_of(a, b):
    """Query-key pairs of a chunk [a, b) of a prompt: each id attends to itself and what precedes it."""
    return (b - a) * a + (b - a) * (b - a + 1) / 2
