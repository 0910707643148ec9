#!/usr/bin/env python3
"""Second reference: Hugging Face transformers on CPU torch, float32, greedy.

    hf_ref.py MODEL_DIR --prompt-ids 1,2,3 --max-tokens N --top-logprobs K
    hf_ref.py MODEL_DIR... --out-dir DIR --prompt-ids ...   (DIR/NAME.hf.json each)

Same CLI and JSON as numpy_ref.py. With --out-dir, several models in one
process: torch and transformers are imported once (seconds of CPU each
time). Exits 77 if torch or transformers cannot be imported.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from numpy_ref import check_request, greedy  # noqa: E402

try:
    import torch
    import transformers
except ImportError as e:
    print(f"hf_ref: skipped, cannot import {e.name}", file=sys.stderr)
    sys.exit(77)

# One thread: make test runs two tests at once on two cores, where torch's
# second thread mostly spins (5x the CPU for the same GEMMs, measured).
torch.set_num_threads(1)


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model_dirs", nargs="+", metavar="MODEL_DIR")
    ap.add_argument("--out-dir", help="write DIR/NAME.hf.json for each model (else one model, to stdout)")
    ap.add_argument("--prompt-ids", required=True, type=lambda s: [int(t) for t in s.split(",")])
    ap.add_argument("--max-tokens", type=int, required=True)
    ap.add_argument("--top-logprobs", type=int, default=5)
    a = ap.parse_args()
    if len(a.model_dirs) > 1 and not a.out_dir:
        ap.error("several models need --out-dir")
    return a


def run(model_dir, a):
    model = transformers.AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    model = model.float().eval()  # older transformers spell dtype torch_dtype; be sure anyway
    c = model.config
    check_request(a.prompt_ids, a.max_tokens, c.vocab_size, c.max_position_embeddings)

    @torch.no_grad()
    def next_logprobs(ids):
        logits = model(torch.tensor([ids])).logits[0, -1]
        return torch.log_softmax(logits.float(), dim=-1).numpy()

    return json.dumps(greedy(next_logprobs, a.prompt_ids, a.max_tokens, a.top_logprobs))


def main():
    a = parse_args()
    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()
    if not a.out_dir:
        print(run(a.model_dirs[0], a))
        return
    failed = 0
    for d in a.model_dirs:   # one model's failure is its own: the others still run
        name = os.path.basename(os.path.normpath(d))
        try:
            out = run(d, a)
        except (Exception, SystemExit) as e:
            print(f"hf_ref: {name}: {e}", file=sys.stderr)
            failed += 1
            continue
        with open(os.path.join(a.out_dir, name + ".hf.json"), "w") as f:
            f.write(out + "\n")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
