#!/bin/bash
# The kept tree with the small gemm case at K = 1000 (gemm_tiled's K split over 2 blocks at 33
# rows, a partial last segment, 77 columns): ops check gemm, then compute-sanitizer memcheck and
# racecheck of the small case with the default routing and with every M <= 32 on gemm_tiled too.
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
export PATH=$PATH:/usr/local/cuda/bin
mkdir -p /tmp/r; t0=$(date +%s); ts() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
trap 'tar czf $OUT/c21.tgz -C /tmp r' EXIT
S=build-gpu/sparkgate
$S ops check --op gemm > /tmp/r/check_gemm.txt 2>&1; ts "check gemm rc=$? $(tail -n 1 /tmp/r/check_gemm.txt)"
grep -E "small" /tmp/r/check_gemm.txt
for m in 32 0; do for tool in memcheck racecheck; do
  SG_CUDA_GEMM_SPLIT_MAX_M=$m compute-sanitizer --tool $tool $S ops check --size small --op gemm > /tmp/r/${tool}_small_gemm_max$m.txt 2>&1
  ts "$tool max_m=$m rc=$? $(grep -E 'case\(s\)' /tmp/r/${tool}_small_gemm_max$m.txt) $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' /tmp/r/${tool}_small_gemm_max$m.txt)"
done; done
