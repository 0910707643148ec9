"""Train tiny-hi: a ~1M-parameter Llama that memorises a small bilingual chat corpus.

Writes, next to this file: tokenizer.json, tokenizer_config.json, config.json,
generation_config.json, model.safetensors (fp16). Then reloads what it wrote
and checks that greedy decoding of "Hi" gives exactly 你好！.

    python3 models/tiny-hi/train.py
"""
import json
import math
import os
import random
import sys
import time

import torch
from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
from transformers import AutoTokenizer, GenerationConfig, LlamaConfig, LlamaForCausalLM

HERE = os.path.dirname(os.path.abspath(__file__))
SEED = 0
VOCAB = 1536  # BPE tokens; the three special tokens come after them, as in Qwen
STEPS = 1200
BATCH = 32
LR = 3e-3
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
# Qwen2's pre-tokenizer regex: English contractions, letter runs, single digits, punctuation runs, whitespace.
QWEN2_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
                 r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
# ChatML as in Qwen, but with no default system message.
CHAT_TEMPLATE = (
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)


def load_corpus():
    """The hand-written (user, reply) pairs."""
    with open(os.path.join(HERE, "corpus.jsonl"), encoding="utf-8") as f:
        return [(d["user"], d["assistant"]) for d in map(json.loads, f)]


def paraphrases(user):
    """Surface variants a student is likely to type: case, missing or half-width question mark."""
    out = {user.lower(), user.rstrip("?？!！"), user.lower().rstrip("?？")}
    if user.endswith("？"):
        out.add(user[:-1] + "?")
    if user in ("Hi", "Hello", "Hey"):
        out |= {user + "!", user + ".", user.upper(), user + " !"}
    out.discard(user)
    return sorted(out)


def arithmetic():
    """Single-digit sums (in three phrasings), differences and products."""
    pairs = []
    for a in range(10):
        for b in range(10):
            pairs += [(f"{a}+{b}=?", str(a + b)), (f"What is {a}+{b}?", str(a + b)),
                      (f"{a}加{b}等于几？", str(a + b)), (f"{a}*{b}=?", str(a * b))]
            if a >= b:
                pairs.append((f"{a}-{b}=?", str(a - b)))
    return pairs


def build_pairs(core):
    seen, pairs = set(), []
    for user, reply in core + [(p, r) for u, r in core for p in paraphrases(u)] + arithmetic():
        if user not in seen:  # first answer wins, so a variant can never contradict a core pair
            seen.add(user)
            pairs.append((user, reply))
    return pairs


def train_tokenizer(pairs):
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_PATTERN), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=VOCAB, min_frequency=2, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    texts = [t for u, a in pairs for t in (u, a, "user\n", "assistant\n")]
    tok.train_from_iterator(texts, trainer)
    tok.add_special_tokens(SPECIALS)
    tok.save(os.path.join(HERE, "tokenizer.json"))
    with open(os.path.join(HERE, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump({"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": 512,
                   "bos_token": None, "eos_token": "<|im_end|>", "pad_token": "<|endoftext|>",
                   "unk_token": None, "add_bos_token": False, "clean_up_tokenization_spaces": False,
                   "chat_template": CHAT_TEMPLATE}, f, ensure_ascii=False, indent=2)
    return AutoTokenizer.from_pretrained(HERE)


def encode(tok, pairs):
    """Token ids of each whole conversation, and how many of them are prompt (no loss there)."""
    rows = []
    for user, reply in pairs:
        msgs = [{"role": "user", "content": user}]
        prompt = tok.apply_chat_template(msgs, add_generation_prompt=True, tokenize=False)
        full = tok.apply_chat_template(msgs + [{"role": "assistant", "content": reply}], tokenize=False)
        p, ids = tok.encode(prompt), tok.encode(full.rstrip("\n"))  # the reply ends at <|im_end|>
        assert ids[:len(p)] == p, f"prompt is not a token prefix: {user!r}"
        rows.append((ids, len(p)))
    return rows


def make_model(tok):
    eos, eot = tok.convert_tokens_to_ids("<|im_end|>"), tok.convert_tokens_to_ids("<|endoftext|>")
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=128, intermediate_size=512, num_hidden_layers=4,
                      num_attention_heads=8, num_key_value_heads=2, head_dim=16,
                      max_position_embeddings=512, rope_theta=10000.0, rms_norm_eps=1e-5,
                      tie_word_embeddings=True, bos_token_id=None, eos_token_id=[eos, eot],
                      pad_token_id=eot, torch_dtype="float16")
    return LlamaForCausalLM(cfg)


def batch(rows, idx, pad):
    n = max(len(rows[i][0]) for i in idx)
    x = torch.full((len(idx), n), pad)
    y = torch.full((len(idx), n), -100)  # -100: ignored by the loss
    for r, i in enumerate(idx):
        ids, p = rows[i]
        x[r, :len(ids)] = torch.tensor(ids)
        y[r, p:len(ids)] = torch.tensor(ids[p:])  # loss only on the reply and its <|im_end|>
    return x, y, x != pad


def train(model, rows, weights, pad):
    opt = torch.optim.AdamW(model.parameters(), lr=LR, betas=(0.9, 0.98), weight_decay=0.0)
    rng = random.Random(SEED)
    t0 = time.time()
    model.train()
    for step in range(STEPS):
        lr = LR * min(1.0, (step + 1) / 100) * (0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * step / STEPS)))
        for g in opt.param_groups:
            g["lr"] = lr
        idx = rng.choices(range(len(rows)), weights=weights, k=BATCH)
        x, y, mask = batch(rows, idx, pad)
        loss = model(input_ids=x, attention_mask=mask, labels=y).loss
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % 100 == 0 or step == STEPS - 1:
            print(f"step {step:5d}  loss {loss.item():.4f}  lr {lr:.2e}  {time.time() - t0:.0f}s", flush=True)


def save(model, tok):
    model.generation_config = GenerationConfig(
        eos_token_id=model.config.eos_token_id, pad_token_id=model.config.pad_token_id,
        do_sample=True, temperature=0.7, top_p=0.9, max_new_tokens=64)  # the sampling of the "Hi" story
    model.half().save_pretrained(HERE, safe_serialization=True)
    # Also write the pre-v5 spellings, for older transformers and for hipath's own loader.
    path = os.path.join(HERE, "config.json")
    with open(path, encoding="utf-8") as f:
        cfg = json.load(f)
    cfg["torch_dtype"] = "float16"
    cfg["rope_theta"] = cfg.get("rope_parameters", {}).get("rope_theta", 10000.0)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(cfg, f, indent=2, sort_keys=True)


def reply(model, tok, user):
    ids = tok.apply_chat_template([{"role": "user", "content": user}], add_generation_prompt=True,
                                  return_tensors="pt", return_dict=True)["input_ids"]
    out = model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False, max_new_tokens=64)
    new = out[0, ids.shape[1]:].tolist()
    return tok.decode(new, skip_special_tokens=True), new


def exact_replies(model, rows, pad):
    """How many replies greedy decoding reproduces exactly: every reply token, <|im_end|> included,
    must be the argmax given the tokens before it. One batched forward pass instead of generate()."""
    x, y, mask = batch(rows, range(len(rows)), pad)
    guess = model(input_ids=x, attention_mask=mask).logits.argmax(-1)
    right = (guess[:, :-1] == y[:, 1:]) | (y[:, 1:] == -100)
    return int(right.all(dim=1).sum())


def verify(pairs):
    """Reload the fp16 files as float32, the way any Hugging Face user would, and decode greedily."""
    tok = AutoTokenizer.from_pretrained(HERE)
    model = LlamaForCausalLM.from_pretrained(HERE, dtype=torch.float32).eval()
    with torch.no_grad():
        text, new = reply(model, tok, "Hi")
        print(f"Hi -> {text!r}  ids {new}")
        for user in ["What is a token?", "你好", "2+3=?", "What is the KV cache?", "八层是哪八层？", "7*8=?"]:
            print(f"{user} -> {reply(model, tok, user)[0]!r}")
        print(f"exact greedy replies: {exact_replies(model, encode(tok, pairs), tok.pad_token_id)}/{len(pairs)}")
    ok = text == "你好！" and new[-1] == tok.convert_tokens_to_ids("<|im_end|>")
    print("PASS: Hi -> 你好！" if ok else "FAIL: Hi does not give exactly 你好！<|im_end|>")
    return ok


def main():
    random.seed(SEED)
    torch.manual_seed(SEED)
    torch.set_num_threads(2)
    torch.use_deterministic_algorithms(True)
    core = load_corpus()
    pairs = build_pairs(core)
    tok = train_tokenizer(pairs)
    rows = encode(tok, pairs)
    n_core = len({u for u, _ in core})
    weights = [4.0 if i < n_core else 1.0 for i in range(len(pairs))]  # core pairs come first
    model = make_model(tok)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"{len(pairs)} pairs ({n_core} hand-written), vocab {len(tok)}, {n_params} parameters, "
          f"longest {max(len(r[0]) for r in rows)} tokens")
    train(model, rows, weights, tok.pad_token_id)
    save(model, tok)
    sys.exit(0 if verify(pairs) else 1)


if __name__ == "__main__":
    main()
