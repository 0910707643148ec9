#!/usr/bin/env python3
"""Reference forward pass and greedy decode in float64 numpy, written from the math.

    numpy_ref.py MODEL_DIR --prompt-ids 1,2,3 --max-tokens N --top-logprobs K

Prints one JSON object shaped like `hipath generate --json`:
{"prompt_ids": [...], "ids": [...], "logprobs": [{"id", "logprob", "top": [[id, lp], ...]}]}.
Shares no code with the engine: weights come through the `safetensors` package,
every operator is a line of numpy on float64.
"""
import argparse
import json
import os
import sys

import numpy as np
from safetensors import deserialize

# Which optional pieces each architecture has (what HF's modeling files hard-code).
ARCHS = {
    "LlamaForCausalLM": dict(qkv_bias=False, qk_norm=False),
    "Qwen2ForCausalLM": dict(qkv_bias=True, qk_norm=False),
    "Qwen3ForCausalLM": dict(qkv_bias=False, qk_norm=True),
    "DeepseekV3ForCausalLM": dict(qkv_bias=False, qk_norm=False, mla=True),
}


def to_f64(info):
    """A stored tensor, upcast exactly to float64 (bf16 is the top half of an f32)."""
    raw, dtype = info["data"], info["dtype"]
    if dtype == "BF16":
        x = (np.frombuffer(raw, "<u2").astype(np.uint32) << 16).view("<f4")
    else:
        x = np.frombuffer(raw, {"F16": "<f2", "F32": "<f4", "F64": "<f8"}[dtype])
    return x.astype(np.float64).reshape(info["shape"])


def load_weights(model_dir):
    index = os.path.join(model_dir, "model.safetensors.index.json")
    if os.path.exists(index):
        with open(index) as f:
            files = sorted(set(json.load(f)["weight_map"].values()))
    else:
        files = ["model.safetensors"]
    w = {}
    for name in files:
        with open(os.path.join(model_dir, name), "rb") as f:
            for key, info in deserialize(f.read()):
                w[key] = to_f64(info)
    return w


class Model:
    def __init__(self, model_dir):
        with open(os.path.join(model_dir, "config.json")) as f:
            c = json.load(f)
        arch = ARCHS[c["architectures"][0]]
        self.n_layers = c["num_hidden_layers"]
        self.n_heads = c["num_attention_heads"]
        self.n_kv_heads = c.get("num_key_value_heads", self.n_heads)
        self.head_dim = c.get("head_dim") or c["hidden_size"] // self.n_heads
        self.eps = c["rms_norm_eps"]
        self.theta = c.get("rope_theta", 10000.0)
        self.vocab = c["vocab_size"]
        self.max_pos = c["max_position_embeddings"]
        self.qkv_bias = arch["qkv_bias"]
        self.qk_norm = arch["qk_norm"]
        self.mla = arch.get("mla", False)
        if self.mla:  # DeepSeek-V2/V3 multi-head latent attention; dense MLPs only here
            assert c.get("first_k_dense_replace", 3) >= self.n_layers, "MoE layers are not in this reference"
            self.q_lora = c.get("q_lora_rank")
            self.rank, self.nope = c["kv_lora_rank"], c["qk_nope_head_dim"]
            self.rope_dim, self.v_dim = c["qk_rope_head_dim"], c["v_head_dim"]
            self.head_dim = self.rope_dim  # the rotary dims
            self.interleave = c.get("rope_interleave", True)
            self.theta = c.get("rope_theta", c.get("rope_parameters", {}).get("rope_theta", 10000.0))
            self.yarn = c.get("rope_scaling") or {}
            self.softmax_scale = 1 / np.sqrt(self.nope + self.rope_dim)
            if self.yarn.get("type") == "yarn" and self.yarn.get("mscale_all_dim"):
                self.softmax_scale *= self.mscale(self.yarn["factor"], self.yarn["mscale_all_dim"]) ** 2
        self.w = load_weights(model_dir)
        tied = c.get("tie_word_embeddings", False)
        self.lm_head = self.w["model.embed_tokens.weight" if tied else "lm_head.weight"]

    @staticmethod
    def mscale(s, m):
        return 0.1 * m * np.log(s) + 1.0 if s > 1 else 1.0

    def inv_freq(self, d):
        """theta^(-2i/d); with YaRN (Peng et al. 2023, as DeepSeek-V2/V3 use it) each pair blends that
        frequency (extrapolated) with it over `factor` (interpolated), by a ramp over the dimensions that
        turn between beta_fast and beta_slow times in the original context."""
        plain = self.theta ** (-np.arange(0, d, 2, dtype=np.float64) / d)
        y = getattr(self, "yarn", {})
        if y.get("type") != "yarn":
            return plain
        orig, base = y["original_max_position_embeddings"], self.theta
        dim_of = lambda rot: d * np.log(orig / (rot * 2 * np.pi)) / (2 * np.log(base))
        lo, hi = max(np.floor(dim_of(y.get("beta_fast", 32))), 0), min(np.ceil(dim_of(y.get("beta_slow", 1))), d - 1)
        ramp = np.clip((np.arange(d // 2) - lo) / (hi - lo if hi > lo else 0.001), 0, 1)
        return plain / y["factor"] * ramp + plain * (1 - ramp)

    def rmsnorm(self, x, weight):
        return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + self.eps) * weight

    def rope(self, x, pos):
        """x: [T, heads, d]. HF layout: rotate the first half against the second half."""
        d = self.head_dim
        angle = np.outer(pos, self.inv_freq(d))
        angle = np.concatenate([angle, angle], axis=-1)[:, None, :]
        rotate_half = np.concatenate([-x[..., d // 2:], x[..., : d // 2]], axis=-1)
        return x * np.cos(angle) + rotate_half * np.sin(angle)

    def rope_pairs(self, x, pos):
        """DeepSeek's interleaved layout: pairs (x0, x1), (x2, x3), ... each rotated by one frequency."""
        d = x.shape[-1]
        angle = np.outer(pos, self.inv_freq(d))[:, None, :]
        even, odd = x[..., 0::2], x[..., 1::2]
        out = np.empty_like(x)
        out[..., 0::2] = even * np.cos(angle) - odd * np.sin(angle)
        out[..., 1::2] = odd * np.cos(angle) + even * np.sin(angle)
        return out

    def mla_attention(self, h, p):
        """MLA as the DeepSeek-V2 paper writes it, every head's K and V expanded from the latent."""
        T, H, w = h.shape[0], self.n_heads, self.w
        a = p + "self_attn."
        if self.q_lora:
            q = self.rmsnorm(h @ w[a + "q_a_proj.weight"].T, w[a + "q_a_layernorm.weight"]) @ w[a + "q_b_proj.weight"].T
        else:
            q = h @ w[a + "q_proj.weight"].T
        q = q.reshape(T, H, self.nope + self.rope_dim)
        ckv = h @ w[a + "kv_a_proj_with_mqa.weight"].T
        c, k_pe = self.rmsnorm(ckv[:, :self.rank], w[a + "kv_a_layernorm.weight"]), ckv[:, None, self.rank:]
        kv = (c @ w[a + "kv_b_proj.weight"].T).reshape(T, H, self.nope + self.v_dim)
        k_nope, v = kv[..., :self.nope], kv[..., self.nope:]
        pos = np.arange(T)
        rot = self.rope_pairs if self.interleave else self.rope
        q_pe, k_pe = rot(q[..., self.nope:], pos), rot(k_pe, pos)
        k = np.concatenate([k_nope, np.broadcast_to(k_pe, (T, H, self.rope_dim))], axis=-1)
        q = np.concatenate([q[..., :self.nope], q_pe], axis=-1)
        causal = np.triu(np.full((T, T), -np.inf), k=1)
        out = np.empty((T, H, self.v_dim))
        for hd in range(H):
            scores = q[:, hd] @ k[:, hd].T * self.softmax_scale + causal
            att = np.exp(scores - scores.max(axis=-1, keepdims=True))
            out[:, hd] = att / att.sum(axis=-1, keepdims=True) @ v[:, hd]
        return out.reshape(T, -1) @ w[a + "o_proj.weight"].T

    def attention(self, h, p):
        if self.mla:
            return self.mla_attention(h, p)
        T, d = h.shape[0], self.head_dim
        w = self.w
        q, k, v = (h @ w[p + f"self_attn.{n}_proj.weight"].T for n in "qkv")
        if self.qkv_bias:
            q, k, v = (x + w[p + f"self_attn.{n}_proj.bias"] for x, n in zip((q, k, v), "qkv"))
        q = q.reshape(T, self.n_heads, d)
        k = k.reshape(T, self.n_kv_heads, d)
        v = v.reshape(T, self.n_kv_heads, d)
        if self.qk_norm:
            q = self.rmsnorm(q, w[p + "self_attn.q_norm.weight"])
            k = self.rmsnorm(k, w[p + "self_attn.k_norm.weight"])
        pos = np.arange(T)
        q, k = self.rope(q, pos), self.rope(k, pos)
        causal = np.triu(np.full((T, T), -np.inf), k=1)
        group = self.n_heads // self.n_kv_heads
        out = np.empty((T, self.n_heads, d))
        for hd in range(self.n_heads):
            kv = hd // group
            scores = q[:, hd] @ k[:, kv].T / np.sqrt(d) + causal
            att = np.exp(scores - scores.max(axis=-1, keepdims=True))
            att /= att.sum(axis=-1, keepdims=True)
            out[:, hd] = att @ v[:, kv]
        return out.reshape(T, -1) @ w[p + "self_attn.o_proj.weight"].T

    def mlp(self, h, p):
        w = self.w
        gate = h @ w[p + "mlp.gate_proj.weight"].T
        up = h @ w[p + "mlp.up_proj.weight"].T
        silu = gate / (1.0 + np.exp(-gate))
        return (silu * up) @ w[p + "mlp.down_proj.weight"].T

    def forward(self, tokens):
        """Logits [T, vocab] for every position of the whole sequence (no KV cache)."""
        x = self.w["model.embed_tokens.weight"][tokens]
        for l in range(self.n_layers):
            p = f"model.layers.{l}."
            x = x + self.attention(self.rmsnorm(x, self.w[p + "input_layernorm.weight"]), p)
            x = x + self.mlp(self.rmsnorm(x, self.w[p + "post_attention_layernorm.weight"]), p)
        return self.rmsnorm(x, self.w["model.norm.weight"]) @ self.lm_head.T

    def next_logprobs(self, ids):
        z = self.forward(np.array(ids))[-1]
        z = z - z.max()
        return z - np.log(np.exp(z).sum())


def greedy(next_logprobs, prompt_ids, max_tokens, k):
    """Greedy decode; the record every reference and the engine print."""
    ids, steps = list(prompt_ids), []
    for _ in range(max_tokens):
        lp = np.asarray(next_logprobs(ids), dtype=np.float64)
        order = np.argsort(-lp, kind="stable")
        top = [[int(i), float(lp[i])] for i in order[:k]]
        steps.append({"id": top[0][0], "logprob": top[0][1], "top": top})
        ids.append(top[0][0])
    return {"prompt_ids": list(prompt_ids), "ids": ids[len(prompt_ids):], "logprobs": steps}


def parse_args(description):
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("model_dir")
    ap.add_argument("--prompt-ids", required=True,
                    type=lambda s: [int(t) for t in s.split(",")])
    ap.add_argument("--max-tokens", type=int, required=True)
    ap.add_argument("--top-logprobs", type=int, default=5)
    return ap.parse_args()


def check_request(prompt_ids, max_tokens, vocab, max_pos):
    bad = [i for i in prompt_ids if not 0 <= i < vocab]
    if bad:
        sys.exit(f"prompt id {bad[0]} outside vocab [0, {vocab})")
    if len(prompt_ids) + max_tokens > max_pos:
        sys.exit(f"{len(prompt_ids)} prompt + {max_tokens} new tokens > max_position_embeddings {max_pos}")


def main():
    a = parse_args(__doc__.splitlines()[0])
    m = Model(a.model_dir)
    check_request(a.prompt_ids, a.max_tokens, m.vocab, m.max_pos)
    print(json.dumps(greedy(m.next_logprobs, a.prompt_ids, a.max_tokens, a.top_logprobs)))


if __name__ == "__main__":
    main()
