#!/usr/bin/env python3
"""Write a random-weight model with a real model's shapes (bf16 safetensors),
for benchmarks: the speed depends on the shapes, not on the values.
usage: make_random_model.py OUTDIR [qwen2.5-0.5b|qwen2.5-7b]"""
import json, os, sys
import numpy as np

SHAPES = {
    "qwen2.5-0.5b": dict(hidden_size=896, num_hidden_layers=24, num_attention_heads=14, num_key_value_heads=2,
                         intermediate_size=4864, vocab_size=151936, tie_word_embeddings=True),
}

def bf16(a):
    """float32 -> bf16 bits (as uint16 viewed as the dtype safetensors expects)."""
    u = a.astype(np.float32).view(np.uint32)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)

def save_bf16(tensors, path):
    """safetensors.numpy has no bf16 dtype: write the format directly
    (8-byte header length, JSON header, raw bytes)."""
    header, off = {}, 0
    for name, a in tensors.items():
        header[name] = {"dtype": "BF16", "shape": list(a.shape), "data_offsets": [off, off + a.nbytes]}
        off += a.nbytes
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(len(h).to_bytes(8, "little")); f.write(h)
        for a in tensors.values():
            f.write(a.tobytes())

def main():
    out, name = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "qwen2.5-0.5b"
    s = SHAPES[name]
    os.makedirs(out, exist_ok=True)
    cfg = dict(architectures=["Qwen2ForCausalLM"], model_type="qwen2", max_position_embeddings=4096,
               rope_theta=1000000.0, rms_norm_eps=1e-6, torch_dtype="bfloat16", **s)
    h, f, v = s["hidden_size"], s["intermediate_size"], s["vocab_size"]
    hd = h // s["num_attention_heads"]
    kv = s["num_key_value_heads"] * hd
    rng = np.random.default_rng(0)
    def w(*shape): return bf16(rng.standard_normal(shape, dtype=np.float32) * 0.02)
    t = {"model.embed_tokens.weight": w(v, h), "model.norm.weight": bf16(np.ones(h, np.float32))}
    for l in range(s["num_hidden_layers"]):
        p = f"model.layers.{l}."
        t.update({p + "input_layernorm.weight": bf16(np.ones(h, np.float32)),
                  p + "post_attention_layernorm.weight": bf16(np.ones(h, np.float32)),
                  p + "self_attn.q_proj.weight": w(h, h), p + "self_attn.q_proj.bias": w(h),
                  p + "self_attn.k_proj.weight": w(kv, h), p + "self_attn.k_proj.bias": w(kv),
                  p + "self_attn.v_proj.weight": w(kv, h), p + "self_attn.v_proj.bias": w(kv),
                  p + "self_attn.o_proj.weight": w(h, h),
                  p + "mlp.gate_proj.weight": w(f, h), p + "mlp.up_proj.weight": w(f, h),
                  p + "mlp.down_proj.weight": w(h, f)})
    save_bf16(t, os.path.join(out, "model.safetensors"))
    json.dump(cfg, open(os.path.join(out, "config.json"), "w"), indent=1)
    print(out)

if __name__ == "__main__":
    main()
