#!/usr/bin/env python3
"""Writes small random-weight MoE checkpoints with transformers' own classes, and
transformers' greedy run of each (the reference).

    make_models.py OUTDIR PROMPT_IDS MAX_TOKENS TOP_LOGPROBS

OUTDIR/<case>/ is what save_pretrained writes (config.json, model.safetensors with
the experts under their HF names) for qwen3_moe (a dense layer among the MoE ones by
mlp_only_layers, and decoder_sparse_step) and mixtral. Every weight is redrawn from
a fixed seed: large enough that the routers' choices are far from ties, norms far
from 1 so a dropped one shows. OUTDIR/<case>.hf.json: the model loaded back from the
folder and run greedily on CPU torch, float32, as tests/ref/hf_ref.py runs one (in this
process: torch imported once, not once a case).
"""
import json
import os
import sys

import torch
import transformers as tf

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ref"))
from numpy_ref import greedy  # noqa: E402

torch.set_num_threads(1)   # make test runs two tests on two cores: a second thread mostly spins (tests/ref/hf_ref.py)

CASES = {
    "qwen3-moe": (tf.Qwen3MoeConfig, tf.Qwen3MoeForCausalLM,
                  dict(vocab_size=211, hidden_size=64, intermediate_size=96, moe_intermediate_size=40,
                       num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                       num_experts=8, num_experts_per_tok=3, norm_topk_prob=False, decoder_sparse_step=1,
                       mlp_only_layers=[1], max_position_embeddings=256, rope_theta=10000.0,
                       tie_word_embeddings=False)),
    "qwen3-moe-norm-step2": (tf.Qwen3MoeConfig, tf.Qwen3MoeForCausalLM,
                             dict(vocab_size=173, hidden_size=48, intermediate_size=80, moe_intermediate_size=24,
                                  num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=4, head_dim=12,
                                  num_experts=6, num_experts_per_tok=2, norm_topk_prob=True, decoder_sparse_step=2,
                                  mlp_only_layers=[], max_position_embeddings=256, rope_theta=1000000.0,
                                  tie_word_embeddings=True)),
    "mixtral": (tf.MixtralConfig, tf.MixtralForCausalLM,
                dict(vocab_size=199, hidden_size=64, intermediate_size=72, num_hidden_layers=2,
                     num_attention_heads=4, num_key_value_heads=2, num_local_experts=4, num_experts_per_tok=2,
                     max_position_embeddings=256, rope_theta=1000000.0, sliding_window=None,
                     tie_word_embeddings=False)),
    # a dense first layer, a shared expert, group-limited sigmoid routing; MLA attention
    "deepseek-v3": (tf.DeepseekV3Config, tf.DeepseekV3ForCausalLM,
                    dict(vocab_size=199, hidden_size=64, intermediate_size=96, moe_intermediate_size=24,
                         num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=4, n_routed_experts=8,
                         num_experts_per_tok=2, n_group=4, topk_group=2, n_shared_experts=1, first_k_dense_replace=1,
                         norm_topk_prob=True, routed_scaling_factor=2.5, q_lora_rank=24, kv_lora_rank=16,
                         qk_nope_head_dim=8, qk_rope_head_dim=8, v_head_dim=8, max_position_embeddings=256,
                         rope_theta=10000.0, rope_scaling=None, tie_word_embeddings=False)),
}


def redraw(model, seed):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 1:   # norm weights
                p.copy_(1 + 0.3 * torch.randn(p.shape, generator=g))
            else:              # 0.5/sqrt(fan-in); routers 3/sqrt(fan-in): clear choices
                gain = 3.0 if name.endswith("gate.weight") and "proj" not in name else 0.5
                p.copy_(torch.randn(p.shape, generator=g) * gain / p.shape[-1] ** 0.5)
        for name, b in model.named_buffers():   # deepseek_v3's bias: it changes the choice, not the weights
            if name.endswith("e_score_correction_bias"):
                b.copy_(0.3 * torch.randn(b.shape, generator=g))


def reference(path, prompt, max_tokens, top):
    model = tf.AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).float().eval()

    @torch.no_grad()
    def next_logprobs(ids):
        return torch.log_softmax(model(torch.tensor([ids])).logits[0, -1].float(), dim=-1).numpy()

    return greedy(next_logprobs, prompt, max_tokens, top)


def main():
    out, prompt, max_tokens, top = sys.argv[1], [int(t) for t in sys.argv[2].split(",")], int(sys.argv[3]), int(sys.argv[4])
    tf.logging.set_verbosity_error()
    tf.logging.disable_progress_bar()
    for i, (case, (Config, Model, kw)) in enumerate(CASES.items()):
        torch.manual_seed(100 + i)
        model = Model(Config(**kw, bos_token_id=1, eos_token_id=2)).float().eval()
        redraw(model, 100 + i)
        path = os.path.join(out, case)
        model.save_pretrained(path)
        with open(path + ".hf.json", "w") as f:
            json.dump(reference(path, prompt, max_tokens, top), f)


if __name__ == "__main__":
    main()
