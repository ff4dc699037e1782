#!/bin/bash
# The default of attention's stored scores as a rule (att_stored: as many as leave room for two
# blocks an SM, at most 8192; head_dim 128: 2432 a team with 4 teams, 5120 with 2), after c46's
# SG_CUDA_ATT_STORED_KEYS=1024: attention's check (bitwise against the CPU twin) by default, with
# 1, 2 and 4 teams and with 128 stored keys, the GPU gate suites (ctest, without test_gpu_backend
# and the small fixture's), the bench at 1-64 requests. Device time left: about 280 s.
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
mkdir -p /tmp/r; t0=$(date +%s); ts() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
trap 'tar czf $OUT/c47.tgz -C /tmp r' EXIT
S=build-gpu/sparkgate
timeout 30 $S ops check --op attention > /tmp/r/check_att.txt 2>&1; ts "check attention rc=$? $(tail -n 1 /tmp/r/check_att.txt)"
for v in SG_CUDA_ATT_TEAMS=1 SG_CUDA_ATT_TEAMS=2 SG_CUDA_ATT_TEAMS=4 SG_CUDA_ATT_STORED_KEYS=128; do
  timeout 30 env $v $S ops check --op attention > /tmp/r/check_att_$v.txt 2>&1; ts "check attention $v rc=$? $(tail -n 1 /tmp/r/check_att_$v.txt)"
  # (the result files were renamed afterwards: c47_check_att_teams1/2/4.txt, c47_check_att_stored128.txt)
done
timeout 60 ctest --test-dir build-gpu -L gpu -E 'test_gpu_backend|small' -j1 --output-on-failure > /tmp/r/ctest_gates.txt 2>&1
ts "ctest rc=$? $(grep -E 'tests passed' /tmp/r/ctest_gates.txt)"
$S fixture make --set qwen3-4b --out /tmp/q4b > /tmp/r/fixture.txt 2>&1 || exit 1; ts fixture
timeout 60 $S bench --backend cuda --fixture /tmp/q4b --concurrency 1,4,16,64 --modes plain,spec,hedge3 --max-new 48 --repeat 1 > /tmp/r/bench.txt 2>&1; ts "bench rc=$?"
grep -E '^ +(1|4|16|64) (plain|spec|hedge3) ' /tmp/r/bench.txt | awk '{printf "  %s %s %s verify %s\n", $1, $2, $3, $11}'
