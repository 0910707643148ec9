#!/usr/bin/env python3
"""guidellm.py -- bench/serve_bench.sh's load through GuideLLM (CLIENT=guidellm):
usage: guidellm.py prompts FILE N MAX_TOKENS [SYSTEM_TEXT]   N of load.py's prompts, in turn,
           as GuideLLM's data file (it sends each row once), each opened by SYSTEM_TEXT
           when given (the shared prefix)
       guidellm.py summary GUIDELLM_JSON CONCURRENCY   its benchmark as load.py's --json summary
           (tokens/s over the run's duration, TTFT and TPOT percentiles as it timed them)"""
import json, sys

sys.path.insert(0, "tests/server")
from load import PROMPTS

if sys.argv[1] == "prompts":
    out, rows, n, system = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), (sys.argv[5] if len(sys.argv) > 5 else "")
    with open(out, "w") as f:
        for i in range(rows):
            f.write(json.dumps({"prompt": (system + "\n\n" if system else "") + PROMPTS[i % len(PROMPTS)], "output_tokens_count": n}) + "\n")
else:
    run = json.load(open(sys.argv[2]))["benchmarks"][0]
    m = lambda k: run["metrics"][k]["successful"]
    tokens = m("output_token_count")["total_sum"]
    json.dump({"concurrency": int(sys.argv[3]), "requests": m("time_to_first_token_ms")["count"], "tokens": tokens,
               "wall_s": run["duration"], "tokens_per_s": tokens / run["duration"], "client_cpu_s": float("nan"),
               "ttft_p50_ms": m("time_to_first_token_ms")["percentiles"]["p50"],
               "ttft_p99_ms": m("time_to_first_token_ms")["percentiles"]["p99"],
               "tpot_p50_ms": m("time_per_output_token_ms")["percentiles"]["p50"]}, sys.stdout)
