#!/usr/bin/env python3
"""Seed corpora for the fuzzers, made from the repository's own files:
    seeds.py OUTDIR      -> OUTDIR/<harness>/<seed>
models/tiny-hi (config, tokenizer, the safetensors header), tests/data's
configs, the labs' configs, the tokenizer corpora, requests and a stream as
the server and its tests send them, and small GGUF files written here the
way tests/check_gguf.sh writes them (the real ones are 90 MB). Seeds are
kept small: libFuzzer mutates them many times a second."""
import glob, json, os, struct, sys

out = sys.argv[1]


def seed(harness, name, data):
    os.makedirs(os.path.join(out, harness), exist_ok=True)
    with open(os.path.join(out, harness, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


# config.json: the models' and the labs'
for path in ["models/tiny-hi/config.json"] + sorted(glob.glob("tests/data/*.json")) + sorted(glob.glob("labs/configs/*.json")):
    seed("fuzz_config", os.path.basename(os.path.dirname(path)) + "-" + os.path.basename(path), open(path, "rb").read())

# safetensors: tiny-hi's header with three of its small tensors' bytes, and
# the whole header with no data at all
raw = open("models/tiny-hi/model.safetensors", "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
header, data = json.loads(raw[8:8 + n]), raw[8 + n:]
small, blob = {}, b""
for name, t in header.items():
    if name != "__metadata__" and len(t["shape"]) == 1 and len(small) < 3:
        a, b = t["data_offsets"]
        small[name] = dict(t, data_offsets=[len(blob), len(blob) + b - a])
        blob += data[a:b]
def safetensors(h, d):
    j = json.dumps(h).encode()
    j += b" " * (-len(j) % 8)
    return struct.pack("<Q", len(j)) + j + d
seed("fuzz_safetensors", "tiny-hi-norms", safetensors(small, blob))
seed("fuzz_safetensors", "tiny-hi-header", safetensors(header, b""))

# GGUF: a one-layer llama of f32 tensors with a byte-level tokenizer, as
# tests/check_gguf.sh crafts them
def s(x): x = x.encode(); return struct.pack("<Q", len(x)) + x
def kv_str(k, v): return s(k) + struct.pack("<I", 8) + s(v)
def kv_u32(k, v): return s(k) + struct.pack("<I", 4) + struct.pack("<I", v)
def kv_f32(k, v): return s(k) + struct.pack("<I", 6) + struct.pack("<f", v)
def arr_str(k, xs): return s(k) + struct.pack("<IIQ", 9, 8, len(xs)) + b"".join(s(x) for x in xs)
def tensor(name, dims, off): return s(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", x) for x in dims) + struct.pack("<IQ", 0, off)
def gguf(kvs, tensors):
    infos, off = [], 0
    for name, dims in tensors:
        infos.append(tensor(name, dims, off))
        size = 4
        for d in dims: size *= d
        off += size + (-size % 32)
    h = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs)) + b"".join(kvs) + b"".join(infos)
    return h + b"\0" * (-len(h) % 32) + bytes((i * 37) % 251 for i in range(off))
byte_chars = [chr(c) for c in range(33, 127)] + [chr(c) for c in range(161, 173)] + [chr(c) for c in range(174, 256)]
byte_chars += [chr(256 + i) for i in range(256 - len(byte_chars))] + ["hi"]
d, f, V = 8, 16, len(byte_chars)
config = [kv_str("general.architecture", "llama"), kv_u32("llama.embedding_length", d), kv_u32("llama.feed_forward_length", f),
          kv_u32("llama.block_count", 1), kv_u32("llama.attention.head_count", 2), kv_u32("llama.attention.head_count_kv", 1),
          kv_u32("llama.context_length", 64), kv_f32("llama.rope.freq_base", 10000.0), kv_f32("llama.attention.layer_norm_rms_epsilon", 1e-5)]
vocab = [kv_str("tokenizer.ggml.model", "gpt2"), kv_str("tokenizer.ggml.pre", "smollm"), arr_str("tokenizer.ggml.tokens", byte_chars),
         arr_str("tokenizer.ggml.merges", ["h i"])]
layer = [("blk.0.attn_norm.weight", [d]), ("blk.0.attn_q.weight", [d, d]), ("blk.0.attn_k.weight", [d, d // 2]),
         ("blk.0.attn_v.weight", [d, d // 2]), ("blk.0.attn_output.weight", [d, d]), ("blk.0.ffn_norm.weight", [d]),
         ("blk.0.ffn_gate.weight", [d, f]), ("blk.0.ffn_up.weight", [d, f]), ("blk.0.ffn_down.weight", [f, d])]
seed("fuzz_gguf", "llama-1-layer", gguf(config + vocab, [("token_embd.weight", [d, V]), ("output_norm.weight", [d])] + layer))
seed("fuzz_gguf", "tokenizer-only", gguf(vocab, []))

# tokenizer.json: tiny-hi's, cut to its first 300 tokens and the merges among
# them (the whole file loads in milliseconds: too slow to mutate), and with
# the pre-tokenizer and normalizer kinds load.c knows
tok = json.load(open("models/tiny-hi/tokenizer.json"))
keep = {k: v for k, v in tok["model"]["vocab"].items() if v < 300}
merges = [m for m in tok["model"]["merges"] if all(p in keep for p in (m.split(" ") if isinstance(m, str) else m))
          and "".join(m.split(" ") if isinstance(m, str) else m) in keep]
small_tok = dict(tok, model=dict(tok["model"], vocab=keep, merges=merges[:200]))
seed("fuzz_tokenizer_json", "tiny-hi-300", json.dumps(small_tok))
seed("fuzz_tokenizer_json", "tiny-hi-300-digits-nfc", json.dumps(dict(small_tok, normalizer={"type": "NFC"}, pre_tokenizer={
    "type": "Sequence", "pretokenizers": [{"type": "Digits", "individual_digits": True},
                                          {"type": "Split", "pattern": {"String": " "}, "behavior": "Isolated", "invert": False},
                                          {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}]})))

# text for tiny-hi's tokenizer: the first byte picks encode (0), encode with
# a plain span (1), a chat message (2), ids to decode (3)
texts = [v for l in open("models/tiny-hi/corpus.jsonl", encoding="utf-8") for v in json.loads(l).values()][:40]
texts += json.load(open("tests/tokenizer/corpus.json", encoding="utf-8"))[:40]
texts += ["<|im_start|>user\nHi<|im_end|>", "a\u0344b" * 5, "emoji 🤖🎉", "\t\n  x"]
for i, t in enumerate(texts):
    seed("fuzz_tokenizer", "text-%02d" % i, bytes([i % 3]) + t.encode("utf-8"))
seed("fuzz_tokenizer", "ids-hi", bytes([3]) + struct.pack("<4H", 469, 475, 1538, 1537))

# request bodies, as chat apps and the server's tests send them
hi = [{"role": "user", "content": "Hi"}]
bodies = [(1, {"model": "tiny-hi", "messages": hi, "max_tokens": 64, "temperature": 0, "stream": True,
               "stream_options": {"include_usage": True}}),
          (1, {"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": [{"type": "text", "text": "Hi"}]}],
               "logprobs": True, "top_logprobs": 3, "stop": ["\n", "!"], "seed": 7, "top_p": 0.9, "split_special_tokens": True}),
          (1, {"messages": hi, "max_completion_tokens": 5, "ignore_eos": True, "n": 1}),
          (0, {"prompt": ["Once upon a time"], "max_tokens": 16, "logprobs": 2, "stream": False}),
          (1, {"messages": hi, "temperature": 1e-45, "top_p": 0.5})]
for i, (chat, b) in enumerate(bodies):
    seed("fuzz_request", "body-%d" % i, bytes([chat]) + json.dumps(b).encode())

# a stream as the server sends it (with the virtual clock's comments), and a
# keep-alive; the first bytes are the harness's cuts and line cap
chunk = lambda delta, finish=None: "data: " + json.dumps({"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [
    {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}]}) + "\n\n"
stream = (": hipath-clock 1:2:3\n" + chunk({"role": "assistant", "content": ""}) + ": keepalive\n\n" + chunk({"content": "你好"})
          + chunk({"content": "！"}) + chunk({}, "stop") + 'data: {"choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 3}}\n\n'
          + 'data: {"error": {"message": "generation failed"}}\r\n\r\ndata: [DONE]\n\n')
seed("fuzz_sse", "stream", bytes([3, 200, 5, 17, 64]) + stream.encode())
seed("fuzz_sse", "stream-whole", bytes([0, 255]) + stream.encode())

# What the fuzzers found, reduced by hand: tests/fuzz/found/<harness>/<name>,
# run again at every run (a finding fixed stays fixed)
for path in sorted(glob.glob("tests/fuzz/found/*/*")):
    seed(os.path.basename(os.path.dirname(path)), "found-" + os.path.basename(path), open(path, "rb").read())
