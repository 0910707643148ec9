#!/usr/bin/env python3
"""Second reference: Hugging Face transformers on CPU torch, float32, greedy.

    hf_ref.py MODEL_DIR --prompt-ids 1,2,3 --max-tokens N --top-logprobs K

Same CLI and JSON as numpy_ref.py. Exits 77 if torch or transformers cannot be imported.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from numpy_ref import check_request, greedy, parse_args  # noqa: E402

try:
    import torch
    import transformers
except ImportError as e:
    print(f"hf_ref: skipped, cannot import {e.name}", file=sys.stderr)
    sys.exit(77)


def main():
    a = parse_args(__doc__.splitlines()[0])
    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()
    model = transformers.AutoModelForCausalLM.from_pretrained(a.model_dir, dtype=torch.float32)
    model = model.float().eval()  # older transformers spell dtype torch_dtype; be sure anyway
    c = model.config
    check_request(a.prompt_ids, a.max_tokens, c.vocab_size, c.max_position_embeddings)

    @torch.no_grad()
    def next_logprobs(ids):
        logits = model(torch.tensor([ids])).logits[0, -1]
        return torch.log_softmax(logits.float(), dim=-1).numpy()

    print(json.dumps(greedy(next_logprobs, a.prompt_ids, a.max_tokens, a.top_logprobs)))


if __name__ == "__main__":
    main()
