#!/bin/bash
# c29's attention profile had 91 samples (ncu's default sampling interval): the same, with the
# shortest interval and one decode step's 36 one-row attention launches.
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
mkdir -p /tmp/r; t0=$(date +%s); ts() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
trap 'tar czf $OUT/c31.tgz -C /tmp r' EXIT
S=build-gpu/sparkgate
$S fixture make --set qwen3-4b --out /tmp/q4b > /tmp/r/fixture.txt 2>&1 || exit 1; ts fixture
timeout 300 ncu --cache-control all --clock-control none -k regex:attention_k --launch-skip 72 --launch-count 36 \
  --warp-sampling-interval 0 --section WarpStateStats --section SourceCounters \
  -o /tmp/r/att_m1x36 $S generate --backend cuda --fixture /tmp/q4b --no-draft --max-new 4 --graphs off \
  > /tmp/r/ncu_run.txt 2>&1; ts "ncu rc=$?"
ncu --import /tmp/r/att_m1x36.ncu-rep --page source --print-source sass --csv > /tmp/r/att_sass.csv 2>&1
ncu --import /tmp/r/att_m1x36.ncu-rep --page details > /tmp/r/att_details.txt 2>&1
rm -f /tmp/r/att_m1x36.ncu-rep
ls -la /tmp/r; grep -c '^"Address"' /tmp/r/att_sass.csv
