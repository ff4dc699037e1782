#!/bin/bash
# call 4 (final): markov_step's ops case with a top-2 at the vocabulary's edges and its negative
# control (column_block's from-the-end mapping planted off by one: count - b), GPU ctest, bench,
# HF transformers baseline on the same weights.
# build-gpu: final tree; exp/neg: final ops cases + planted bug; exp/negold: ad2b25c's cases + bug
# Not run (no device was lent for it). To prepare it on the build machine, from the repository root
# (the edge-planted case is in the tree since the thirteenth session's commits):
#   sed -i 's/G.from_end ? count - 1 - b : b/G.from_end ? count - b : b/' gpu/gemm.cu
#   cmake --build build-gpu -j2 && mkdir -p exp/neg && cp build-gpu/libsparkgate.so build-gpu/sparkgate exp/neg/
#   git checkout ad2b25c -- gates/ops_cases.c
#   cmake --build build-gpu -j2 && mkdir -p exp/negold && cp build-gpu/libsparkgate.so build-gpu/sparkgate exp/negold/
#   git checkout HEAD -- gates/ops_cases.c gpu/gemm.cu && cmake --build build-gpu -j2
# then copy this script to exp/c4.sh and `run` it with carry ["build-gpu", ".deps"]. Expected:
# markov_step 0 failed on build-gpu and on negold (ad2b25c's case misses the bug), failures on neg.
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
mkdir -p $OUT/r; trap 'cd $OUT && tar czf r.tgz r && rm -rf r' EXIT
S=build-gpu/sparkgate
t0=$(date +%s); ts() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
bin() { case $1 in new) echo "$S";; *) echo "env LD_LIBRARY_PATH=$PWD/exp/$1:$LD_LIBRARY_PATH exp/$1/sparkgate";; esac; }
for t in new neg negold; do $(bin $t) ops check --op markov_step > $OUT/r/check_markov_step_$t.txt 2>&1; ts "check markov_step $t rc=$? $(tail -1 $OUT/r/check_markov_step_$t.txt)"; done
SG_CUDA_GEMM_FROM_END=1 $(bin neg) ops check --op gemm > $OUT/r/check_fromend_gemm_neg.txt 2>&1; ts "check from_end gemm neg rc=$? $(tail -1 $OUT/r/check_fromend_gemm_neg.txt)"
ctest --test-dir build-gpu -L gpu -j1 --output-on-failure > $OUT/r/ctest_gpu.txt 2>&1; ts "ctest gpu rc=$? $(grep -E 'tests passed|tests failed' $OUT/r/ctest_gpu.txt)"
$S fixture make --set qwen3-4b --out /tmp/q4b > $OUT/r/fixture.txt 2>&1 || exit 1
ts fixture
$S bench --backend cuda --fixture /tmp/q4b --concurrency 1,4 --modes plain,spec,hedge1,hedge2,hedge3 --max-new 64 --repeat 3 --json $OUT/r/final_bench.json > $OUT/r/final_bench.txt 2>&1; ts "bench rc=$?"
grep -E '^ +[14] (plain|spec|hedge1|hedge2|hedge3) ' $OUT/r/final_bench.txt | awk '{printf "  %s %s tok/s %s verify %s drafter %s markov %s ladder %s\n", $1, $2, $3, $11, $15, $19, $23}'
grep -A9 "^goals" $OUT/r/final_bench.txt
python3 -c "import transformers, torch; print('transformers', transformers.__version__, 'torch', torch.__version__)" > $OUT/r/hf_versions.txt 2>&1
timeout 240 python3 bench/hf_baseline.py /tmp/q4b/target --bench-json $OUT/r/final_bench.json --max-new 64 > $OUT/r/hf_baseline.txt 2>&1; ts "hf rc=$?"; cat $OUT/r/hf_versions.txt; tail -6 $OUT/r/hf_baseline.txt
ts done
