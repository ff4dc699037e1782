#!/bin/bash
# call 1: gemm_split items segment-major (SG_CUDA_SPLIT_SEGMAJOR=1), tiles per ring block at 2-8
# rows (SG_CUDA_SPLIT_XTB=2,4): x read by the warps of one segment together
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
mkdir -p $OUT/r; trap 'cd $OUT && tar czf r.tgz r && rm -rf r' EXIT
S=build-gpu/sparkgate
t0=$(date +%s); ts() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
$S fixture make --set qwen3-4b --out /tmp/q4b > $OUT/r/fixture.txt 2>&1 || exit 1
ts fixture
for cfg in "1 2" "1 4"; do set -- $cfg
  for op in gemm gemm_logits gemm_swiglu; do
    SG_CUDA_SPLIT_SEGMAJOR=$1 SG_CUDA_SPLIT_XTB=$2 $S ops check --op $op > $OUT/r/check_${op}_$1_$2.txt 2>&1; echo "check $op $1 $2 rc=$? $(tail -1 $OUT/r/check_${op}_$1_$2.txt)"
  done
done
ts checks
for cfg in "0 1" "1 1" "1 2" "1 4"; do set -- $cfg
  SG_CUDA_SPLIT_SEGMAJOR=$1 SG_CUDA_SPLIT_XTB=$2 $S ops perf --op gemm > $OUT/r/perf_$1_$2.txt 2>&1
  ts "perf $1 $2"; grep -E '^(q_proj|k_proj|o_proj|gate_proj|down_proj|fc|markov_w2|lm_head) +(1|8) ' $OUT/r/perf_$1_$2.txt | awk '{printf "%s/%s %s  ", $1, $2, $5}'; echo
done
B="$S bench --backend cuda --fixture /tmp/q4b --concurrency 1,4 --modes plain,spec,hedge1 --max-new 64 --repeat 3"
run() { local tag=$1; shift; env "$@" $B > $OUT/r/$tag.txt 2>&1; ts "$tag rc=$?"; grep -E '^ +[14] (plain|spec|hedge1) ' $OUT/r/$tag.txt | awk '{printf "  %s %s tok/s %s verify %s\n", $1, $2, $3, $11}'; grep -E "^sparkgate: " $OUT/r/$tag.txt; }
for i in 1 2; do
  run base_$i SG_CUDA_SPLIT_SEGMAJOR=0 SG_CUDA_SPLIT_XTB=1
  run sm_$i SG_CUDA_SPLIT_SEGMAJOR=1 SG_CUDA_SPLIT_XTB=1
  run sm2_$i SG_CUDA_SPLIT_SEGMAJOR=1 SG_CUDA_SPLIT_XTB=2
  run sm4_$i SG_CUDA_SPLIT_SEGMAJOR=1 SG_CUDA_SPLIT_XTB=4
done
ts done
