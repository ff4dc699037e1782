#!/bin/bash
# Call 6: attention's shared-memory reads of q, the scores and the probabilities 16 bytes at a
# time (the same values in the same order: bit-identical). Bits against the CPU twin on every
# attention path, the GPU ctest but test_gpu_backend (its attention cases are the checks here),
# decode A/B against 051e77c alternating, phase stamps of both.
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
mkdir -p /tmp/r; t0=$(date +%s); ts() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
trap 'tar czf $OUT/c28.tgz -C /tmp r' EXIT
S=build-gpu/sparkgate; bin() { echo "env LD_LIBRARY_PATH=$PWD/exp/$1:$LD_LIBRARY_PATH exp/$1/sparkgate"; }
$S ops check --op attention > /tmp/r/check_attention.txt 2>&1; ts "check rc=$? $(tail -n 1 /tmp/r/check_attention.txt)"
SG_CUDA_ATT_STORED_KEYS=0 $S ops check --op attention > /tmp/r/check_attention_keys0.txt 2>&1; ts "check keys0 rc=$? $(tail -n 1 /tmp/r/check_attention_keys0.txt)"
for t in 1 4; do SG_CUDA_ATT_TEAMS=$t $S ops check --op attention > /tmp/r/check_attention_teams$t.txt 2>&1; ts "check teams$t rc=$? $(tail -n 1 /tmp/r/check_attention_teams$t.txt)"; done
$S fixture make --set qwen3-4b --out /tmp/q4b > /tmp/r/fixture.txt 2>&1 || exit 1; ts fixture
A="bench --backend cuda --fixture /tmp/q4b --concurrency 1,4 --modes plain,spec --max-new 64 --repeat 2"
for rep in 1 2; do for v in base vec; do
  if [ $v = base ]; then X=$(bin base); else X=$S; fi
  $X $A > /tmp/r/ab_${v}_$rep.txt 2>&1; ts "ab $v $rep rc=$?"
  grep -E '^ +[14] (plain|spec) ' /tmp/r/ab_${v}_$rep.txt | awk '{printf "  %s %s tok/s %s verify %s drafter %s\n", $1, $2, $3, $11, $15}'
done; done
for v in base_st vec_st; do
  $(bin $v) bench --backend cuda --fixture /tmp/q4b --concurrency 1 --modes plain --max-new 64 --repeat 1 > /tmp/r/stamps_$v.txt 2>&1; ts "stamps $v rc=$?"
  grep -E "attention stamps" /tmp/r/stamps_$v.txt | cut -c1-300
done
ctest --test-dir build-gpu -L gpu -E test_gpu_backend -j1 --output-on-failure > /tmp/r/ctest_gpu.txt 2>&1; ts "ctest rc=$? $(grep -E 'tests passed' /tmp/r/ctest_gpu.txt)"
