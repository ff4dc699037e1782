#!/bin/bash
# call 5: attention releasing the o projection after its last load lands (SG_EXP_ATT_TRIG=1) vs its first (0)
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
mkdir -p $OUT/r; trap 'cd $OUT && tar czf r.tgz r && rm -rf r' EXIT
S=build-gpu/sparkgate
$S fixture make --set qwen3-4b --out /tmp/q4b > $OUT/r/fixture.txt 2>&1 || exit 1
B="$S bench --backend cuda --fixture /tmp/q4b --concurrency 1,4 --modes plain,spec,hedge3 --max-new 64 --repeat 3"
run() { local tag=$1; shift; env "$@" $B > $OUT/r/$tag.txt 2>&1; echo "$tag rc=$? $(grep -E '^ +[14] (plain|spec|hedge3)' $OUT/r/$tag.txt | cut -c1-30 | tr -s ' ' | tr '\n' ' ')"; grep -E "^sparkgate: " $OUT/r/$tag.txt; }
for i in 1 2; do run trig0_$i SG_EXP_ATT_TRIG=0; run trig1_$i SG_EXP_ATT_TRIG=1; done
SG_EXP_ATT_TRIG=1 CUDA_INJECTION64_PATH=$PWD/build-gpu/libsg_timeline.so $S bench --backend cuda --fixture /tmp/q4b --concurrency 1 --modes plain --max-new 64 --repeat 1 > $OUT/r/timeline_trig1.txt 2>&1
grep -E "^ +[0-9.]+ +[0-9.]+%" $OUT/r/timeline_trig1.txt | head -8 | cut -c1-110
