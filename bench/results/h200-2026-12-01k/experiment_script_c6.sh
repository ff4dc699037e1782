#!/bin/bash
# call 6: call 5 again with the dynamic shared memory limit less gemm_top2's static merge array
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
mkdir -p $OUT/r; trap 'cd $OUT && tar czf r.tgz r && rm -rf r' EXIT
S=build-gpu/sparkgate
t0=$(date +%s); ts() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
$S fixture make --set qwen3-4b --out /tmp/q4b > $OUT/r/fixture.txt 2>&1 || exit 1
ts fixture
for op in markov_step top2; do $S ops check --op $op > $OUT/r/check_$op.txt 2>&1; echo "check $op rc=$? $(tail -1 $OUT/r/check_$op.txt)"; done
SG_CUDA_PDL=0 $S ops check --op markov_step > $OUT/r/check_markov_step_nopdl.txt 2>&1; echo "nopdl markov_step rc=$? $(tail -1 $OUT/r/check_markov_step_nopdl.txt)"
B="bench --backend cuda --fixture /tmp/q4b --concurrency 1,4 --modes plain,spec,hedge1,hedge3 --max-new 64 --repeat 3"
run() { local tag=$1 bin=$2; shift 2; env "$@" $bin $B > $OUT/r/$tag.txt 2>&1; ts "$tag rc=$?"; grep -E '^ +[14] (plain|spec|hedge1|hedge3) ' $OUT/r/$tag.txt | awk '{printf "  %s %s tok/s %s verify %s markov %s ladder %s\n", $1, $2, $3, $11, $19, $23}'; grep -E "^sparkgate: " $OUT/r/$tag.txt; }
run base_1 exp/base/sparkgate LD_LIBRARY_PATH=$PWD/exp/base:$LD_LIBRARY_PATH
run new_1 $S
timeout 60 compute-sanitizer --tool memcheck $S ops check --op markov_step --size qwen3 > $OUT/r/san_memcheck_markov.txt 2>&1; ts "memcheck rc=$? $(grep -E 'ERROR SUMMARY' $OUT/r/san_memcheck_markov.txt | tail -1)"
ctest --test-dir build-gpu -L gpu -j1 --output-on-failure > $OUT/r/ctest_gpu.txt 2>&1; ts "ctest rc=$?"; tail -3 $OUT/r/ctest_gpu.txt
run base_2 exp/base/sparkgate LD_LIBRARY_PATH=$PWD/exp/base:$LD_LIBRARY_PATH
run new_2 $S
ts done
