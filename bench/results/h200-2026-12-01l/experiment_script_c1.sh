#!/bin/bash
# call 1: GPU ctest and ops perf selection on 370df75 (build-gpu); w2 read in alternating directions / persisting L2 window (exp/new)
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
mkdir -p $OUT/r; trap 'cd $OUT && tar czf r.tgz r && rm -rf r' EXIT
S=build-gpu/sparkgate; N=exp/new/sparkgate; NL=LD_LIBRARY_PATH=$PWD/exp/new:$LD_LIBRARY_PATH
t0=$(date +%s); ts() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv > $OUT/r/smi.txt 2>&1
$S fixture make --set qwen3-4b --out /tmp/q4b > $OUT/r/fixture.txt 2>&1 || exit 1
ts fixture
$S ops perf --op gemm --size tiny --weight down_proj,lm_head --rows 1,7,30 --json $OUT/r/sel.json > $OUT/r/ops_perf_sel.txt 2>&1; ts "ops perf sel rc=$?"; cat $OUT/r/ops_perf_sel.txt | tail -12
for v in 0 1; do env $NL SG_EXP_W2_REVERSE=$v $N ops check --op markov_step > $OUT/r/check_markov_rev$v.txt 2>&1; ts "check markov rev$v rc=$? $(tail -1 $OUT/r/check_markov_rev$v.txt)"; done
env $NL SG_EXP_W2_PERSIST_MB=1024 $N ops check --op markov_step > $OUT/r/check_markov_persist.txt 2>&1; ts "check markov persist rc=$? $(tail -1 $OUT/r/check_markov_persist.txt)"
B="bench --backend cuda --fixture /tmp/q4b --concurrency 1,4 --modes plain,spec,hedge1,hedge3 --max-new 64 --repeat 3"
run() { local tag=$1 bin=$2; shift 2; env "$@" $bin $B > $OUT/r/$tag.txt 2>&1; ts "$tag rc=$?"; grep -E '^ +[14] (plain|spec|hedge1|hedge3) ' $OUT/r/$tag.txt | awk '{printf "  %s %s tok/s %s verify %s drafter %s markov %s ladder %s\n", $1, $2, $3, $11, $15, $19, $23}'; grep -E "^sparkgate: |EXP" $OUT/r/$tag.txt | head -3; }
run base_1 $S
run rev_1 $N $NL SG_EXP_W2_REVERSE=1
run persist_1 $N $NL SG_EXP_W2_PERSIST_MB=1024
run off_1 $N $NL
run both_1 $N $NL SG_EXP_W2_PERSIST_MB=1024 SG_EXP_W2_REVERSE=1
run rev_2 $N $NL SG_EXP_W2_REVERSE=1
run base_2 $S
ctest --test-dir build-gpu -L gpu -j1 --output-on-failure > $OUT/r/ctest_gpu.txt 2>&1; ts "ctest rc=$?"; tail -3 $OUT/r/ctest_gpu.txt
ts done
