#!/bin/bash
# After c32 the two wgmma bit tests were refactored to share wgmma_test.cuh: rerun both, c32's
# arguments for wgmma_natural_steps and the sixth 2026-12-01 session's for wgmma_bits, whose
# outputs must equal that session's records (the same generator, the same comparisons).
mkdir -p /tmp/r; trap 'tar czf $OUT/c33.tgz -C /tmp r' EXIT
A=bench/results/h200-2026-12-01f B=bench/results/h200-2026-12-02c
F="-gencode arch=compute_90a,code=sm_90a -std=c++17 -O2"
nvcc $F $B/wgmma_natural_steps.cu -o /tmp/wn > /tmp/r/build_wn.txt 2>&1 || { tail -5 /tmp/r/build_wn.txt; exit 1; }
nvcc $F $A/wgmma_bits.cu -o /tmp/wb > /tmp/r/build_wb.txt 2>&1 || { tail -5 /tmp/r/build_wb.txt; exit 1; }
for a in "2000 8" "2000 2" "500 20"; do /tmp/wn $a; done > /tmp/r/wgmma_natural_steps.txt 2>&1
cat /tmp/r/wgmma_natural_steps.txt
for a in "2000 8" "2000 2" "500 20" "500 8 256 128"; do /tmp/wb $a; done > /tmp/r/wgmma_bits.txt 2>&1
{ for p in 0 1 2 3; do /tmp/wb 1000 8 128 256 $p; done; /tmp/wb 1000 2 128 256 1; } > /tmp/r/wgmma_bits_perm.txt 2>&1
# The records' header lines predate a wording change of the printf: compare the counts lines and
# each header's element count and worst error.
key() { sed -E 's/^trials .*: ([0-9]+) elements; .*worst .* ([0-9.e+-]+)$/elements \1 worst \2/' "$1"; }
for f in wgmma_bits wgmma_bits_perm; do
  diff <(key $A/$f.txt) <(key /tmp/r/$f.txt) && echo "$f: equal to the sixth 2026-12-01 session's record"
done
