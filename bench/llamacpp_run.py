"""One llama.cpp run for bench/llamacpp_race.sh (via llama-cpp-python):
prefill the given prompt ids, then greedy-decode N tokens, EOS ignored.
Prints llama.cpp's own timers as JSON:
    {"n_prompt", "prefill_s", "n_decode", "decode_s_per_token", "ids"}

    python llamacpp_run.py MODEL.gguf IDS(comma-separated) N THREADS
"""
import json
import sys

import llama_cpp


def main():
    path, ids, n, threads = sys.argv[1], [int(i) for i in sys.argv[2].split(",")], int(sys.argv[3]), int(sys.argv[4])
    llm = llama_cpp.Llama(model_path=path, n_ctx=len(ids) + n + 8, n_batch=512, n_threads=threads,
                          n_threads_batch=threads, verbose=False)
    llama_cpp.llama_perf_context_reset(llm.ctx)
    out = []
    for tok in llm.generate(ids, temp=0.0, top_k=1, reset=True):
        out.append(int(tok))
        if len(out) == n:
            break
    p = llama_cpp.llama_perf_context(llm.ctx)
    # The last sampled token is never evaluated: n_eval == n - 1 decode steps.
    json.dump({"n_prompt": p.n_p_eval, "prefill_s": p.t_p_eval_ms / 1e3, "n_decode": p.n_eval,
               "decode_s_per_token": p.t_eval_ms / 1e3 / max(p.n_eval, 1), "ids": out}, sys.stdout)


if __name__ == "__main__":
    main()
