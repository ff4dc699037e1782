#!/bin/bash
# call 6 (final tree): memcheck of the changed kernels, GEMM table, bench vs 370df75 (exp/base), GPU ctest
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
mkdir -p $OUT/r; trap 'cd $OUT && tar czf r.tgz r && rm -rf r' EXIT
S=build-gpu/sparkgate
t0=$(date +%s); ts() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
bin() { case $1 in final) echo "$S";; *) echo "env LD_LIBRARY_PATH=$PWD/exp/$1:$LD_LIBRARY_PATH exp/$1/sparkgate";; esac; }
timeout 100 compute-sanitizer --tool memcheck $S ops check --op markov_step --size qwen3 > $OUT/r/san_memcheck_markov.txt 2>&1; ts "memcheck markov rc=$? $(grep -E 'ERROR SUMMARY' $OUT/r/san_memcheck_markov.txt | tail -1)"
SG_CUDA_GEMM_FROM_END=1 timeout 100 compute-sanitizer --tool memcheck $S ops check --op gemm --size small > $OUT/r/san_memcheck_gemm.txt 2>&1; ts "memcheck gemm from_end rc=$? $(grep -E 'ERROR SUMMARY' $OUT/r/san_memcheck_gemm.txt | tail -1)"
$S fixture make --set qwen3-4b --out /tmp/q4b > $OUT/r/fixture.txt 2>&1 || exit 1
ts fixture
B="bench --backend cuda --fixture /tmp/q4b --concurrency 1,4 --modes plain,spec,hedge1,hedge2,hedge3 --max-new 64 --repeat 3"
run() { local tag=$1; $(bin ${tag%_*}) $B --json $OUT/r/$tag.json > $OUT/r/$tag.txt 2>&1; ts "$tag rc=$?"; grep -E '^ +[14] (plain|spec|hedge1|hedge2|hedge3) ' $OUT/r/$tag.txt | awk '{printf "  %s %s tok/s %s verify %s drafter %s markov %s ladder %s\n", $1, $2, $3, $11, $15, $19, $23}'; grep -E "^sparkgate: |^bandwidth" $OUT/r/$tag.txt | head -3; }
run final_1; run base_1; run final_2
$S ops perf --op gemm > $OUT/r/final_ops_gemm.txt 2>&1; ts "ops perf gemm rc=$?"
ctest --test-dir build-gpu -L gpu -j1 --output-on-failure > $OUT/r/ctest_gpu.txt 2>&1; ts "ctest rc=$?"; tail -3 $OUT/r/ctest_gpu.txt
ts done
