#!/bin/bash
# call 5: the Markov step's selection stage 1 in the bias GEMM's fold (cu_gemm_top2), stage 2 a
# block merging batched partials; against ad207ed (exp/base); then the GPU ctest of this tree
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
mkdir -p $OUT/r; trap 'cd $OUT && tar czf r.tgz r && rm -rf r' EXIT
S=build-gpu/sparkgate
t0=$(date +%s); ts() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
$S fixture make --set qwen3-4b --out /tmp/q4b > $OUT/r/fixture.txt 2>&1 || exit 1
ts fixture
$S ops check > $OUT/r/check_all.txt 2>&1; ts "ops check rc=$? $(tail -1 $OUT/r/check_all.txt)"
grep -E '^(markov_step|top2|argmax) ' $OUT/r/check_all.txt | cut -c1-150
for op in markov_step top2; do SG_CUDA_PDL=0 $S ops check --op $op > $OUT/r/check_${op}_nopdl.txt 2>&1; echo "nopdl $op rc=$? $(tail -1 $OUT/r/check_${op}_nopdl.txt)"; done
B="bench --backend cuda --fixture /tmp/q4b --concurrency 1,4 --modes plain,spec,hedge1,hedge3 --max-new 64 --repeat 3"
run() { local tag=$1 bin=$2; shift 2; env "$@" $bin $B > $OUT/r/$tag.txt 2>&1; ts "$tag rc=$?"; grep -E '^ +[14] (plain|spec|hedge1|hedge3) ' $OUT/r/$tag.txt | awk '{printf "  %s %s tok/s %s verify %s markov %s ladder %s\n", $1, $2, $3, $11, $19, $23}'; grep -E "^sparkgate: " $OUT/r/$tag.txt; }
for i in 1 2; do
  run base_$i exp/base/sparkgate LD_LIBRARY_PATH=$PWD/exp/base:$LD_LIBRARY_PATH
  run new_$i $S
done
CUDA_INJECTION64_PATH=$PWD/build-gpu/libsg_timeline.so $S bench --backend cuda --fixture /tmp/q4b --concurrency 1 --modes spec --max-new 64 --repeat 1 > $OUT/r/timeline_spec_new.txt 2>&1
ts "timeline rc=$?"; grep -E 'markov|top2' $OUT/r/timeline_spec_new.txt | c++filt | cut -c1-150
for tool in memcheck racecheck; do
  timeout 100 compute-sanitizer --tool $tool $S ops check --op markov_step --size qwen3 > $OUT/r/san_${tool}_markov.txt 2>&1; ts "$tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/r/san_${tool}_markov.txt | tail -1)"
done
ctest --test-dir build-gpu -L gpu -j1 --output-on-failure > $OUT/r/ctest_gpu.txt 2>&1; ts "ctest rc=$?"; tail -4 $OUT/r/ctest_gpu.txt
ts done
