#!/usr/bin/env python3
"""bench/hf_baseline.py: the baseline a user would otherwise reach for: HF transformers' plain greedy
decoding (AutoModelForCausalLM, bf16, cuda, model.generate with default settings) on the same
weights as `sparkgate bench`, timed after a warm-up; and a check that its first tokens equal
sparkgate's plain greedy tokens for the same prompt (read from `sparkgate bench --json`).

usage: python3 bench/hf_baseline.py TARGET_DIR --bench-json BENCH.json [--max-new 64] [--reps 3]
Prints tokens/s of generate(max_new) (prefill included) and of the decode alone
((max_new - 1) / (t(max_new) - t(1))), the median of --reps runs, and the token check.
Exit 0 when the first --check tokens agree, 1 otherwise."""
import argparse
import json
import statistics
import sys
import time

import torch
import transformers
from transformers import AutoModelForCausalLM


def timed_generate(model, ids, n):
    torch.cuda.synchronize()
    t = time.perf_counter()
    out = model.generate(ids, max_new_tokens=n, min_new_tokens=n, do_sample=False,
                         attention_mask=torch.ones_like(ids))
    torch.cuda.synchronize()
    return time.perf_counter() - t, out[0, ids.shape[1]:].tolist()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("target")
    ap.add_argument("--bench-json", required=True)
    ap.add_argument("--max-new", type=int, default=64)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--check", type=int, default=16, help="leading tokens that must agree")
    a = ap.parse_args()
    check = json.load(open(a.bench_json))["check"]
    model = AutoModelForCausalLM.from_pretrained(a.target, torch_dtype=torch.bfloat16).cuda().eval()
    # sparkgate ignores EOS in the bench: no EOS and no pad id stop or steer generate here either.
    model.generation_config.eos_token_id = None
    model.generation_config.pad_token_id = 0
    ids = torch.tensor([check["prompt"]], device="cuda")
    timed_generate(model, ids, 8)  # warm-up
    t1 = statistics.median(timed_generate(model, ids, 1)[0] for _ in range(a.reps))
    runs = [timed_generate(model, ids, a.max_new) for _ in range(a.reps)]
    tn = statistics.median(r[0] for r in runs)
    toks = runs[0][1]
    print(f"HF transformers {transformers.__version__}, torch {torch.__version__}, "
          f"{torch.cuda.get_device_name()}: prompt {len(check['prompt'])} tokens, "
          f"{a.max_new} new, median of {a.reps}")
    print(f"hf generate: {a.max_new / tn:.1f} tok/s ({tn * 1e3:.1f} ms, prefill included); "
          f"decode alone: {(a.max_new - 1) / (tn - t1):.1f} tok/s "
          f"({(tn - t1) / (a.max_new - 1) * 1e3:.2f} ms/token)")
    ours = check["tokens"]
    n = min(len(ours), len(toks))
    same = 0
    while same < n and ours[same] == toks[same]:
        same += 1
    need = min(a.check, n)
    print(f"token check: the first {same} of {n} tokens equal sparkgate's plain greedy tokens "
          f"({'ok' if same >= need else 'MISMATCH'}: {need} required)")
    print("hf first tokens:      ", toks[:16])
    print("sparkgate first tokens:", ours[:16])
    return 0 if same >= need else 1


if __name__ == "__main__":
    sys.exit(main())
