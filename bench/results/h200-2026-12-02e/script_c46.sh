#!/bin/bash
# Attention's stored scores against its occupancy (c44's timeline: attention is the largest kernel
# of the verify at 16 requests, 134 us a launch). The engine's page tables span Qwen3-4B's 40960
# positions, so the launch keeps the default 8192 scores per head: 32 KB a team, with the two
# 128-key tile buffers one block per SM (2 teams: 256 threads; 4 teams: 512). The bench's rows
# see at most about 576 keys. SG_CUDA_ATT_STORED_KEYS = 8192 (default), 1024, 512 (the last tile
# of the longest rows recomputed): the attention op's check (bitwise against the CPU twin) and
# the bench at 1-64 requests.
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
mkdir -p /tmp/r; t0=$(date +%s); ts() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
trap 'tar czf $OUT/c46.tgz -C /tmp r' EXIT
S=build-gpu/sparkgate
for k in 1024 512; do
  timeout 60 env SG_CUDA_ATT_STORED_KEYS=$k $S ops check --op attention > /tmp/r/check_att_$k.txt 2>&1; ts "check attention stored $k rc=$? $(tail -n 1 /tmp/r/check_att_$k.txt)"
done
$S fixture make --set qwen3-4b --out /tmp/q4b > /tmp/r/fixture.txt 2>&1 || exit 1; ts fixture
A="bench --backend cuda --fixture /tmp/q4b --concurrency 1,4,16,64 --modes plain,spec,hedge3 --max-new 48 --repeat 1"
for k in 8192 1024 512; do
  timeout 100 env SG_CUDA_ATT_STORED_KEYS=$k $S $A > /tmp/r/bench_att_$k.txt 2>&1; ts "bench stored $k rc=$?"
  grep -E '^ +(1|4|16|64) (plain|spec|hedge3) ' /tmp/r/bench_att_$k.txt | awk '{printf "  %s %s %s verify %s\n", $1, $2, $3, $11}'
done
