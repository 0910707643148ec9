"""Reference for tests/check_gguf.sh: Hugging Face transformers reading the
same .gguf file (it converts the tokenizer from the GGUF metadata and
dequantizes every tensor to float32, undoing llama.cpp's Q/K permutation).

    python3 gguf_ref.py MODEL.gguf CASES.json > REF.json

CASES.json: {"corpus": [text, ...], "chats": [user message, ...],
             "max_tokens": N, "top": K}
REF.json:   {"corpus": [{"text", "ids"}],
             "chats": [{"prompt", "prompt_text", "prompt_ids", "ids",
                        "logprobs": [{"id", "logprob", "top": [[id, lp], ...]}]}]}
Greedy decoding stops after max_tokens or at an end-of-turn / EOS id; each
step's "top" lists 2*K ids so a caller can look up near-boundary ones.
"""
import json
import os
import sys

import torch
from gguf import GGUFReader
from tokenizers import pre_tokenizers
from transformers import AutoModelForCausalLM, AutoTokenizer

# One thread: make test runs two tests at once on two cores, where torch's
# second thread mostly spins (5x the CPU for the same GEMMs, measured).
torch.set_num_threads(1)


def main():
    path, cases_path = sys.argv[1], sys.argv[2]
    cases = json.load(open(cases_path, encoding="utf-8"))
    d, f = os.path.split(os.path.abspath(path))
    tok = AutoTokenizer.from_pretrained(d, gguf_file=f)
    # transformers' GGUF loader knows no pre-tokenizer called "smollm" and
    # falls back to GPT-2's regex alone; SmolLM's own tokenizer.json (and
    # llama.cpp's "smollm" entry) first splits off every digit.
    pre = GGUFReader(path).fields.get("tokenizer.ggml.pre")
    if pre is not None and bytes(pre.parts[pre.data[0]]).decode() == "smollm":
        tok.backend_tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
            [pre_tokenizers.Digits(individual_digits=True),
             pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
    out = {"corpus": [{"text": t, "ids": tok.encode(t, add_special_tokens=False)} for t in cases["corpus"]], "chats": []}

    model = AutoModelForCausalLM.from_pretrained(d, gguf_file=f, dtype=torch.float32).eval()
    stop = {i for i in (tok.eos_token_id, tok.convert_tokens_to_ids("<|im_end|>"), tok.convert_tokens_to_ids("<|endoftext|>")) if i is not None and i >= 0}
    n_max, k = cases["max_tokens"], 2 * cases["top"]
    for msg in cases["chats"]:
        text = tok.apply_chat_template([{"role": "user", "content": msg}], tokenize=False, add_generation_prompt=True)
        ids = tok.encode(text, add_special_tokens=False)
        rec = {"prompt": msg, "prompt_text": text, "prompt_ids": ids, "ids": [], "logprobs": []}
        x, past = torch.tensor([ids]), None
        with torch.no_grad():
            for _ in range(n_max):
                o = model(x, past_key_values=past, use_cache=True)
                past = o.past_key_values
                lp = torch.log_softmax(o.logits[0, -1].double(), -1)
                v, i = torch.topk(lp, k)
                nxt = int(i[0])
                rec["ids"].append(nxt)
                rec["logprobs"].append({"id": nxt, "logprob": float(v[0]),
                                        "top": [[int(a), float(b)] for a, b in zip(i, v)]})
                if nxt in stop:
                    break
                x = torch.tensor([[nxt]])
        out["chats"].append(rec)
    json.dump(out, sys.stdout, ensure_ascii=False)


if __name__ == "__main__":
    main()
