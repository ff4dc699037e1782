#!/bin/bash
# Planned (not run: this session's device time ran out): what bounds a one-row attention block's
# phases. Four lanes and 16-byte reads (c27, c28) did not shorten the scores phase, so look at
# the instructions: ncu's warp-state sampling per SASS instruction for one attention launch of a
# plain decode (kernels serialised: no PDL overlap, so read the stalls, not the time).
# Build: the tree as it is (build-gpu, 90a-real); .deps and build-gpu carried.
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
mkdir -p /tmp/r; trap 'tar czf $OUT/c29.tgz -C /tmp r' EXIT
S=build-gpu/sparkgate
$S fixture make --set qwen3-4b --out /tmp/q4b > /tmp/r/fixture.txt 2>&1 || exit 1
ncu --cache-control all --clock-control none -k regex:attention_k --launch-skip 40 --launch-count 1 \
  --section WarpStateStats --section SourceCounters --section LaunchStats --section Occupancy \
  -o /tmp/r/att_m1 $S generate --backend cuda --fixture /tmp/q4b --no-draft --max-new 3 --graphs off \
  > /tmp/r/ncu_run.txt 2>&1
ncu --import /tmp/r/att_m1.ncu-rep --page details > /tmp/r/att_m1_details.txt 2>&1
ncu --import /tmp/r/att_m1.ncu-rep --page source --print-source sass --csv > /tmp/r/att_m1_sass.csv 2>&1
head -c 2000 /tmp/r/att_m1_details.txt
