#!/bin/bash
# The K split's effect on decoding, firmer than c42/c43's single runs: the bench at 4, 16 and 64
# requests, plain, spec and hedge3, three repeats (medians), with SG_CUDA_GEMM_WGMMA_KS=0 and 1,
# 0 first, then 1.
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
mkdir -p /tmp/r; t0=$(date +%s); ts() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
trap 'tar czf $OUT/c45.tgz -C /tmp r' EXIT
S=build-gpu/sparkgate
$S fixture make --set qwen3-4b --out /tmp/q4b > /tmp/r/fixture.txt 2>&1 || exit 1; ts fixture
A="bench --backend cuda --fixture /tmp/q4b --concurrency 4,16,64 --modes plain,spec,hedge3 --max-new 48 --repeat 3"
for ks in 0 1; do
  timeout 250 env SG_CUDA_GEMM_WGMMA_KS=$ks $S $A > /tmp/r/bench_ks$ks.txt 2>&1; ts "bench ks=$ks rc=$?"
  grep -E '^ +(4|16|64) (plain|spec|hedge3) ' /tmp/r/bench_ks$ks.txt | awk '{printf "  %s %s %s %s verify %s\n", $1, $2, $3, $4, $11}'
done
