#!/bin/bash
# Call 2: clock64 stamps of attention's phases (thread 0 of every block of a one-tile launch).
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
mkdir -p /tmp/r; t0=$(date +%s); ts() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
trap 'tar czf $OUT/c24.tgz -C /tmp r' EXIT
E="env LD_LIBRARY_PATH=$PWD/exp/e1:$LD_LIBRARY_PATH exp/e1/sparkgate"
build-gpu/sparkgate fixture make --set qwen3-4b --out /tmp/q4b > /tmp/r/fixture.txt 2>&1 || exit 1; ts fixture
for m in plain spec; do
  SG_EXP_ATT=4 $E bench --backend cuda --fixture /tmp/q4b --concurrency 1 --modes $m --max-new 64 --repeat 1 > /tmp/r/stamps_$m.txt 2>&1; ts "stamps $m rc=$?"
  grep -E "^ +1 $m |attention stamps" /tmp/r/stamps_$m.txt | cut -c1-300
done
