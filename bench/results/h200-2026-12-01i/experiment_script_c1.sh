#!/bin/bash
# call 1: ops checks of the fused op (and the ops it was split from), then the bench A/B
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
mkdir -p $OUT/r; trap 'cd $OUT && tar czf r.tgz r && rm -rf r' EXIT
S=build-gpu/sparkgate
$S ops check --op qk_norm_rope_attention > $OUT/r/check_fused.txt 2>&1; echo "fused rc=$?"; grep -E "^qk_norm|failed" $OUT/r/check_fused.txt | cut -c1-150
for e in SG_CUDA_ATT_STORED_KEYS=0 SG_CUDA_ATT_TEAMS=1 SG_CUDA_ATT_TEAMS=4 SG_CUDA_PDL=0; do
  env $e $S ops check --op qk_norm_rope_attention > $OUT/r/check_fused_$e.txt 2>&1; echo "$e rc=$? $(grep failed $OUT/r/check_fused_$e.txt)"
done
for op in attention qk_norm_rope_store rmsnorm add_rmsnorm; do
  $S ops check --op $op > $OUT/r/check_$op.txt 2>&1 || { echo "$op FAILED"; grep -E "FAIL|first bad" $OUT/r/check_$op.txt | head; exit 1; }
  echo "$op $(grep failed $OUT/r/check_$op.txt)"
done
$S fixture make --set qwen3-4b --out /tmp/q4b > $OUT/r/fixture.txt 2>&1 || exit 1
B="$S bench --backend cuda --fixture /tmp/q4b --concurrency 1,4 --modes plain,spec,hedge3 --max-new 64 --repeat 3"
run() { local tag=$1; shift; env "$@" $B > $OUT/r/$tag.txt 2>&1; echo "$tag rc=$?"; grep -E '^ +[14] (plain|spec|hedge3)' $OUT/r/$tag.txt | cut -c1-50; grep -E "^sparkgate: " $OUT/r/$tag.txt; }
for i in 1 2; do
  run off_$i SG_CUDA_ROPE_ATTENTION=0
  run on_$i SG_CUDA_ROPE_ATTENTION=1
done
CUDA_INJECTION64_PATH=$PWD/build-gpu/libsg_timeline.so SG_TIMELINE_ROWS=0 $S bench --backend cuda --fixture /tmp/q4b --concurrency 1 --modes plain --max-new 64 --repeat 1 > $OUT/r/timeline_plain.txt 2>&1
grep -E "attention|qk_norm" $OUT/r/timeline_plain.txt | cut -c1-160 | head
