#!/bin/bash
# 16-64 rows: gemm_split's warps per block forced (2, 3, 4, 6, 8), gemm_tiled from 17 or 33 rows, the band off or on every width
# Outputs kept as sweep_*.txt (p_ renamed).
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
mkdir -p $OUT/r; trap 'cd $OUT && tar czf r.tgz r && rm -rf r' EXIT
S=build-gpu/sparkgate
t0=$(date +%s); ts() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
P="ops perf --op gemm --rows 16,24,32,48,64"
$S $P > $OUT/r/p_base_1.txt 2>&1; ts base
for w in 2 3 4 6 8; do SG_CUDA_GEMM_SPLIT_WARPS=$w $S $P > $OUT/r/p_w${w}.txt 2>&1; ts "w $w"; done
for m in 16 32; do SG_CUDA_GEMM_SPLIT_MAX_M=$m $S $P > $OUT/r/p_maxm${m}.txt 2>&1; ts "maxm $m"; done
SG_CUDA_GEMM_BAND=0 $S $P > $OUT/r/p_band0.txt 2>&1; ts band0
SG_CUDA_GEMM_BAND=2 $S $P > $OUT/r/p_band2.txt 2>&1; ts band2
$S $P > $OUT/r/p_base_2.txt 2>&1; ts base2
