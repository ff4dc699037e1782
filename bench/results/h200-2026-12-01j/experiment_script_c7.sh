#!/bin/bash
# call 7: attention's first K tile copied right after the wait, before the query's loads
# (SG_EXP_ATT=1), and (2) the first tile's K and V rows prefetched into L2 before the wait
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
mkdir -p $OUT/r; trap 'cd $OUT && tar czf r.tgz r && rm -rf r' EXIT
S=build-gpu/sparkgate
t0=$(date +%s); ts() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
$S fixture make --set qwen3-4b --out /tmp/q4b > $OUT/r/fixture.txt 2>&1 || exit 1
ts fixture
for a in 1 2; do SG_EXP_ATT=$a $S ops check --op attention > $OUT/r/check_attention_att$a.txt 2>&1; echo "check attention att$a rc=$? $(tail -1 $OUT/r/check_attention_att$a.txt)"; done
SG_EXP_ATT=2 SG_CUDA_ATT_STORED_KEYS=0 $S ops check --op attention > $OUT/r/check_attention_att2_stored0.txt 2>&1; echo "check att2 stored0 rc=$? $(tail -1 $OUT/r/check_attention_att2_stored0.txt)"
B="$S bench --backend cuda --fixture /tmp/q4b --concurrency 1,4 --modes plain,spec,hedge1 --max-new 64 --repeat 3"
run() { local tag=$1; shift; env "$@" $B > $OUT/r/$tag.txt 2>&1; ts "$tag rc=$? $(grep -E '^ +[14] (plain|spec|hedge1) ' $OUT/r/$tag.txt | awk '{printf "%s%s %s v %s | ", $1, $2, $3, $11}')"; grep -E "^sparkgate: " $OUT/r/$tag.txt; }
for i in 1 2; do run att0_$i SG_EXP_ATT=0; run att1_$i SG_EXP_ATT=1; run att2_$i SG_EXP_ATT=2; done
for a in 0 2; do
SG_EXP_ATT=$a CUDA_INJECTION64_PATH=$PWD/build-gpu/libsg_timeline.so $S bench --backend cuda --fixture /tmp/q4b --concurrency 1 --modes plain --max-new 64 --repeat 1 > $OUT/r/timeline_plain_att$a.txt 2>&1
echo "timeline att$a"; grep -E "^ +[0-9.]+ +[0-9.]+%" $OUT/r/timeline_plain_att$a.txt | head -8 | cut -c1-120
done
ts done
