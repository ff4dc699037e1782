#!/bin/bash
# call 6: compute-sanitizer on the changed kernels (memcheck, racecheck, synccheck of ops check
# --size small) and memcheck of the hedge_sequential gate suite (Markov steps, ladders, selections)
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
export PATH=$PATH:/usr/local/cuda/bin
mkdir -p $OUT/r; trap 'cd $OUT && tar czf r.tgz r && rm -rf r' EXIT
S=build-gpu/sparkgate
t0=$(date +%s); ts() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
for tool in memcheck racecheck synccheck; do for op in markov_step argmax top2 rmsnorm add_rmsnorm; do
  compute-sanitizer --tool $tool $S ops check --size small --op $op > $OUT/r/${tool}_ops_$op.txt 2>&1
  ts "$tool $op rc=$? $(grep -E 'case\(s\)' $OUT/r/${tool}_ops_$op.txt) $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/r/${tool}_ops_$op.txt)"
done; done
timeout 300 compute-sanitizer --tool memcheck $S gate --backend cuda --suite hedge_sequential > $OUT/r/memcheck_gate_hedge_sequential.txt 2>&1
ts "memcheck gate rc=$? $(grep -E 'PASS|FAIL|ERROR SUMMARY' $OUT/r/memcheck_gate_hedge_sequential.txt | tail -3 | tr '\n' ' ')"
