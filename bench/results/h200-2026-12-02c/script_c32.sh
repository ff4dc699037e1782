#!/bin/bash
# Do k-steps of 16 consecutive k keep wgmma and mma.sync bitwise equal (the path the goals
# section names for the GEMMs from 16 rows)? wgmma_natural_steps.cu at three exponent spreads.
mkdir -p /tmp/r; trap 'tar czf $OUT/c32.tgz -C /tmp r' EXIT
D=bench/results/h200-2026-12-02c
nvcc -gencode arch=compute_90a,code=sm_90a -std=c++17 -O2 $D/wgmma_natural_steps.cu -o /tmp/wn \
  > /tmp/r/build.txt 2>&1 || { tail -5 /tmp/r/build.txt; exit 1; }
for a in "2000 8" "2000 2" "500 20"; do /tmp/wn $a; done 2>&1 | tee /tmp/r/wgmma_natural_steps.txt
