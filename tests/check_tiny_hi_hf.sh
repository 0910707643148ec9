#!/bin/sh
# The committed models/tiny-hi files, read by Hugging Face transformers (an independent
# Llama implementation): greedy decoding of "Hi" must give exactly 你好！ then <|im_end|>.
# Skipped (77) where torch or transformers is not installed.
cd "$(dirname "$0")/.." || exit 1
python3 -c "import torch, transformers, safetensors" 2>/dev/null || { echo "torch/transformers missing"; exit 77; }
exec python3 - <<'PY'
import sys
import torch
from safetensors import safe_open
from transformers import AutoTokenizer, LlamaForCausalLM

d = "models/tiny-hi"
with safe_open(f"{d}/model.safetensors", "pt") as f:
    names = list(f.keys())
    bad = [n for n in names if f.get_slice(n).get_dtype() != "F16"]
if bad or "lm_head.weight" in names or "model.embed_tokens.weight" not in names:
    sys.exit(f"model.safetensors: expected fp16 HF names with tied embeddings; not fp16: {bad[:3]}")

tok = AutoTokenizer.from_pretrained(d)
prompt = tok.apply_chat_template([{"role": "user", "content": "Hi"}], add_generation_prompt=True, tokenize=False)
if prompt != "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n":
    sys.exit(f"chat template renders {prompt!r}, not plain ChatML")
ids = torch.tensor([tok.encode(prompt)])
model = LlamaForCausalLM.from_pretrained(d, dtype=torch.float32).eval()
with torch.no_grad():
    out = model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False, max_new_tokens=16)
new = out[0, ids.shape[1]:].tolist()
text = tok.decode(new, skip_special_tokens=True)
end = tok.convert_tokens_to_ids("<|im_end|>")
print(f"Hi -> {text!r} ids {new}")
if text != "\u4f60\u597d\uff01" or new[-1] != end:
    sys.exit("FAIL: expected exactly 你好！ followed by <|im_end|>")
print("ok")
PY
