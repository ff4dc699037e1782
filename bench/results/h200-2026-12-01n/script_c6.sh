#!/bin/bash
# 16-column tiles (NT = 2, ring) for 2-8-row products: SG_CUDA_GEMM_NT2_MIN_M=m (0 off = base)
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
mkdir -p $OUT/r; trap 'cd $OUT && tar czf r.tgz r && rm -rf r' EXIT
S=build-gpu/sparkgate
t0=$(date +%s); ts() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
for op in gemm gemm_swiglu gemm_logits markov_step; do
  SG_CUDA_GEMM_NT2_MIN_M=2 $S ops check --op $op > $OUT/r/check_nt2_$op.txt 2>&1; ts "check nt2 $op rc=$? $(tail -1 $OUT/r/check_nt2_$op.txt)"
done
for rep in 1 2; do for m in 0 2; do
  SG_CUDA_GEMM_NT2_MIN_M=$m $S ops perf --op gemm --rows 1,2,3,4,6,8 > $OUT/r/perf_nt2_${m}_$rep.txt 2>&1; ts "perf $m $rep rc=$?"
done; done
$S fixture make --set qwen3-4b --out /tmp/q4b > $OUT/r/fixture.txt 2>&1 || exit 1
ts fixture
for rep in 1 2; do for m in 0 2; do
  SG_CUDA_GEMM_NT2_MIN_M=$m $S bench --backend cuda --fixture /tmp/q4b --concurrency 1,4 --modes plain,spec,hedge1 --max-new 64 --repeat 3 > $OUT/r/bench_nt2_${m}_$rep.txt 2>&1; ts "bench $m $rep rc=$?"
  grep -E '^ +[14] (plain|spec|hedge1) ' $OUT/r/bench_nt2_${m}_$rep.txt | awk '{printf "  %s %s tok/s %s verify %s drafter %s\n", $1, $2, $3, $11, $15}'
done; done
ts done
