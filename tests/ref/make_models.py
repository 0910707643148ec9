#!/usr/bin/env python3
"""Writes small random-weight Hugging Face model folders for the reference check.

    make_models.py OUTDIR

OUTDIR/<case>/ is a real HF folder (config.json, generation_config.json, safetensors
written by the `safetensors` package) for each case in CASES; OUTDIR/bad-<what>/ are
broken copies the engine must refuse. Seeds are fixed, so every run writes the same bytes.
A seed is kept only if greedy decoding of PROMPT is unambiguous (top-1 beats top-2 by
more than MIN_GAP logits at every step, and never emits EOS), so a 1e-3 check means something.
"""
import json
import os
import shutil
import struct
import sys

import numpy as np
from safetensors import TensorSpec, serialize_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy_ref  # noqa: E402

PROMPT, MAX_TOKENS = [3, 17, 42, 5, 9, 100, 7], 12
MIN_GAP = 1e-2
BOS, EOS = 1, 2
MISSING = "model.layers.1.mlp.up_proj.weight"  # dropped from bad-missing-tensor

CASES = {
    "llama-gqa-untied": dict(arch="LlamaForCausalLM", model_type="llama", dtype="bfloat16",
                             hidden=72, layers=3, heads=6, kv_heads=2, inter=100, vocab=301,
                             theta=10000.0, eps=1e-5, tied=False),
    "llama-tied-f16": dict(arch="LlamaForCausalLM", model_type="llama", dtype="float16",
                           hidden=48, layers=2, heads=4, kv_heads=4, inter=80, vocab=257,
                           theta=10000.0, eps=1e-5, tied=True),
    "qwen2-bias": dict(arch="Qwen2ForCausalLM", model_type="qwen2", dtype="bfloat16",
                       hidden=80, layers=2, heads=5, kv_heads=1, inter=112, vocab=293,
                       theta=1000000.0, eps=1e-6, tied=True),
    "qwen3-qknorm": dict(arch="Qwen3ForCausalLM", model_type="qwen3", dtype="float32",
                         hidden=64, layers=2, heads=4, kv_heads=2, head_dim=24, inter=96,
                         vocab=311, theta=1000000.0, eps=1e-6, tied=False),
    "llama-sharded": dict(arch="LlamaForCausalLM", model_type="llama", dtype="bfloat16",
                          hidden=72, layers=3, heads=6, kv_heads=2, inter=100, vocab=301,
                          theta=10000.0, eps=1e-5, tied=False, shards=2),
    # DeepSeek-V3's MLA, every layer dense (first_k_dense_replace = layers):
    # the query through q_lora_rank, and direct (q_lora_rank null) with
    # RoPE on halves (rope_interleave false)
    "deepseek-mla-qlora": dict(arch="DeepseekV3ForCausalLM", model_type="deepseek_v3", dtype="bfloat16",
                               hidden=64, layers=2, heads=4, kv_heads=4, inter=96, vocab=301,
                               theta=10000.0, eps=1e-6, tied=False,
                               mla=dict(q_lora_rank=40, kv_lora_rank=32, qk_nope_head_dim=16,
                                        qk_rope_head_dim=8, v_head_dim=12, rope_interleave=True)),
    "deepseek-mla-direct": dict(arch="DeepseekV3ForCausalLM", model_type="deepseek_v3", dtype="float32",
                                hidden=48, layers=2, heads=3, kv_heads=3, inter=80, vocab=257,
                                theta=10000.0, eps=1e-6, tied=False,
                                mla=dict(q_lora_rank=None, kv_lora_rank=24, qk_nope_head_dim=8,
                                         qk_rope_head_dim=16, v_head_dim=20, rope_interleave=False)),
    # DeepSeek-V3's YaRN RoPE (its config's rope_scaling, scaled down): the
    # frequencies blended over a 16-token original context, the softmax
    # scale times mscale(4, 0.707)^2
    "deepseek-mla-yarn": dict(arch="DeepseekV3ForCausalLM", model_type="deepseek_v3", dtype="float32",
                              hidden=48, layers=2, heads=3, kv_heads=3, inter=80, vocab=257,
                              theta=10000.0, eps=1e-6, tied=False,
                              mla=dict(q_lora_rank=24, kv_lora_rank=32, qk_nope_head_dim=8, qk_rope_head_dim=32,
                                       v_head_dim=8, rope_interleave=True,
                                       rope_scaling=dict(type="yarn", factor=4.0, original_max_position_embeddings=16,
                                                         beta_fast=32, beta_slow=1, mscale=0.707,
                                                         mscale_all_dim=0.707))),
}


def config_json(c):
    cfg = {
        "architectures": [c["arch"]], "model_type": c["model_type"],
        "hidden_size": c["hidden"], "intermediate_size": c["inter"],
        "num_hidden_layers": c["layers"], "num_attention_heads": c["heads"],
        "num_key_value_heads": c["kv_heads"], "vocab_size": c["vocab"],
        "max_position_embeddings": 64, "rms_norm_eps": c["eps"], "rope_theta": c["theta"],
        "hidden_act": "silu", "tie_word_embeddings": c["tied"], "torch_dtype": c["dtype"],
        "bos_token_id": BOS, "eos_token_id": EOS, "attention_bias": False,
    }
    if "head_dim" in c:
        cfg["head_dim"] = c["head_dim"]
    if "mla" in c:
        cfg.update(c["mla"], first_k_dense_replace=c["layers"], n_routed_experts=4, num_experts_per_tok=2,
                   n_group=1, topk_group=1, moe_intermediate_size=32)
        return cfg
    if c["model_type"] != "llama":
        cfg["use_sliding_window"] = False
    return cfg


def draw_weights(c, rng):
    """float32 master weights. Scales: unit-RMS activations, logits with std ~4 (peaked)."""
    H, d = c["hidden"], c.get("head_dim", c["hidden"] // c["heads"])
    nq, nkv, I, V = c["heads"] * d, c["kv_heads"] * d, c["inter"], c["vocab"]

    def mat(out, inp, gain=1.0):
        return rng.standard_normal((out, inp)) * gain / np.sqrt(inp)

    def norm(n):  # far from 1, so a norm weight that is dropped or misapplied shows
        return 1.0 + 0.3 * rng.standard_normal(n)

    w = {"model.embed_tokens.weight": rng.standard_normal((V, H)) * 0.6}
    for l in range(c["layers"]):
        p = f"model.layers.{l}."
        w[p + "input_layernorm.weight"] = norm(H)
        if "mla" in c:
            w.update(mla_weights(c, p, mat, norm))
        else:
            w.update(attention_weights(c, p, rng, mat, norm, nq, nkv, d))
        w[p + "post_attention_layernorm.weight"] = norm(H)
        w[p + "mlp.gate_proj.weight"] = mat(I, H)
        w[p + "mlp.up_proj.weight"] = mat(I, H)
        w[p + "mlp.down_proj.weight"] = mat(H, I, 3.0)
    w["model.norm.weight"] = norm(H)
    if not c["tied"]:
        w["lm_head.weight"] = rng.standard_normal((V, H)) * 0.6
    return w


def mla_weights(c, p, mat, norm):
    m, H, heads = c["mla"], c["hidden"], c["heads"]
    r, qr, dn, dr, dv = (m["kv_lora_rank"], m["q_lora_rank"], m["qk_nope_head_dim"], m["qk_rope_head_dim"],
                         m["v_head_dim"])
    a, w = p + "self_attn.", {}
    if qr:
        w[a + "q_a_proj.weight"] = mat(qr, H)
        w[a + "q_a_layernorm.weight"] = norm(qr)
        w[a + "q_b_proj.weight"] = mat(heads * (dn + dr), qr, 1.5)
    else:
        w[a + "q_proj.weight"] = mat(heads * (dn + dr), H, 1.5)
    w[a + "kv_a_proj_with_mqa.weight"] = mat(r + dr, H, 1.5)
    w[a + "kv_a_layernorm.weight"] = norm(r)
    w[a + "kv_b_proj.weight"] = mat(heads * (dn + dv), r, 1.5)
    w[a + "o_proj.weight"] = mat(H, heads * dv, 2.0)
    return w


def attention_weights(c, p, rng, mat, norm, nq, nkv, d):
    H, w = c["hidden"], {}
    w[p + "self_attn.q_proj.weight"] = mat(nq, H, 1.5)
    w[p + "self_attn.k_proj.weight"] = mat(nkv, H, 1.5)
    w[p + "self_attn.v_proj.weight"] = mat(nkv, H)
    w[p + "self_attn.o_proj.weight"] = mat(H, nq, 2.0)
    if c["model_type"] == "qwen2":
        for n, size in (("q", nq), ("k", nkv), ("v", nkv)):
            w[p + f"self_attn.{n}_proj.bias"] = 0.5 * rng.standard_normal(size)
    if c["model_type"] == "qwen3":
        w[p + "self_attn.q_norm.weight"] = norm(d)
        w[p + "self_attn.k_norm.weight"] = norm(d)
    return w


def stored(x, dtype):
    """The array whose bytes are written: bf16 is f32 rounded to nearest-even, top 16 bits."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    if dtype == "bfloat16":
        u = x.view(np.uint32)
        return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return x.astype({"float16": np.float16, "float32": np.float32}[dtype])


def save(tensors, dtype, path):
    arrays = {k: stored(v, dtype) for k, v in tensors.items()}
    specs = {k: TensorSpec(dtype=dtype, shape=v.shape, data_ptr=v.ctypes.data, data_len=v.nbytes)
             for k, v in arrays.items()}
    serialize_file(specs, path, metadata={"format": "pt"})


def write_model(path, c, w):
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "config.json"), "w") as f:
        json.dump(config_json(c), f, indent=2)
    with open(os.path.join(path, "generation_config.json"), "w") as f:
        json.dump({"bos_token_id": BOS, "eos_token_id": EOS, "do_sample": False}, f, indent=2)
    n = c.get("shards", 1)
    if n == 1:
        save(w, c["dtype"], os.path.join(path, "model.safetensors"))
        return
    names = list(w)
    parts = [names[i * len(names) // n:(i + 1) * len(names) // n] for i in range(n)]
    weight_map = {}
    for i, part in enumerate(parts):
        fname = f"model-{i + 1:05d}-of-{n:05d}.safetensors"
        save({k: w[k] for k in part}, c["dtype"], os.path.join(path, fname))
        weight_map.update({k: fname for k in part})
    total = sum(stored(v, c["dtype"]).nbytes for v in w.values())
    with open(os.path.join(path, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)


def unambiguous(path):
    m = numpy_ref.Model(path)
    ids = list(PROMPT)
    for _ in range(MAX_TOKENS):
        z = m.forward(np.array(ids))[-1]
        top2 = np.sort(z)[-2:]
        if top2[1] - top2[0] <= MIN_GAP or int(np.argmax(z)) == EOS:
            return False
        ids.append(int(np.argmax(z)))
    return True


def make_case(path, c, seed):
    while True:
        w = draw_weights(c, np.random.default_rng(seed))
        write_model(path, c, w)
        if unambiguous(path):
            return w
        seed += 1000


# ---- broken models: each breaks exactly one thing the loader must check ----

def read_raw(path):
    with open(path, "rb") as f:
        b = f.read()
    n = struct.unpack("<Q", b[:8])[0]
    return json.loads(b[8:8 + n]), b[8 + n:]


def write_raw(path, header, data, skew=0):
    """skew: spaces past the 8-byte padding, which shift every tensor's data."""
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8 + skew)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + data)


def write_bad_models(outdir, good, c, w):
    """`good` is a single-file model folder drawn from config `c` with weights `w`."""
    st = os.path.join(good, "model.safetensors")
    header, data = read_raw(st)
    victim, big = "model.norm.weight", "model.embed_tokens.weight"
    size = header[victim]["data_offsets"][1] - header[victim]["data_offsets"][0]

    def clone(name):
        path = os.path.join(outdir, "bad-" + name)
        shutil.copytree(good, path)
        return path

    path = clone("truncated")
    with open(os.path.join(path, "model.safetensors"), "r+b") as f:
        f.truncate(os.path.getsize(st) - len(data) // 2)

    path = clone("header-length")
    with open(os.path.join(path, "model.safetensors"), "r+b") as f:
        f.write(struct.pack("<Q", os.path.getsize(st) + 1000))

    h = json.loads(json.dumps(header))
    h[victim]["data_offsets"] = [len(data), len(data) + size]
    write_raw(os.path.join(clone("offsets-past-end"), "model.safetensors"), h, data)

    h = json.loads(json.dumps(header))
    start = h[big]["data_offsets"][0]
    h[victim]["data_offsets"] = [start, start + size]
    write_raw(os.path.join(clone("overlap"), "model.safetensors"), h, data)

    h = json.loads(json.dumps(header))
    h[victim]["dtype"] = "F32"
    write_raw(os.path.join(clone("dtype-size"), "model.safetensors"), h, data)

    path = clone("config-hidden")
    cfg = config_json(dict(c, hidden=c["hidden"] + 16))
    with open(os.path.join(path, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)

    path = clone("missing-tensor")
    save({k: v for k, v in w.items() if k != MISSING}, c["dtype"],
         os.path.join(path, "model.safetensors"))

    path = clone("arch")
    cfg = dict(config_json(c), architectures=["GPT2LMHeadModel"], model_type="gpt2")
    with open(os.path.join(path, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)

    # Issue 15: f16 data at odd addresses; a layer count the file does not
    # hold (1e9 asked for 112 GB first; 1 of the file's 2 ran on half the
    # model); norm epsilon and RoPE base that make every logit NaN.
    write_raw(os.path.join(clone("misaligned"), "model.safetensors"), header, data, skew=1)
    for name, change in [("layers-huge", dict(num_hidden_layers=10**9)), ("layers-fewer", dict(num_hidden_layers=1)),
                         ("eps", dict(rms_norm_eps=-1e30)), ("theta", dict(rope_theta=0))]:
        with open(os.path.join(clone(name), "config.json"), "w") as f:
            json.dump(dict(config_json(c), **change), f, indent=2)



def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_models.py OUTDIR")
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    weights = {}
    for i, (name, c) in enumerate(CASES.items()):
        path = os.path.join(outdir, name)
        shutil.rmtree(path, ignore_errors=True)
        weights[name] = make_case(path, c, seed=1234 + i)
    for old in os.listdir(outdir):
        if old.startswith("bad-"):
            shutil.rmtree(os.path.join(outdir, old))
    base = "llama-tied-f16"
    write_bad_models(outdir, os.path.join(outdir, base), CASES[base], weights[base])


if __name__ == "__main__":
    main()
