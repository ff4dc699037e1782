#!/bin/bash
# One weight register set for gemm_split's 16-column tiles where a launch has a tile per SM or
# more: wb1_32x16_tiles.patch (the 32 x 16 tile only, 17-32 rows) and wb1_16col_tiles.patch (also
# the 16 x 16 tiles of 9-16 rows and of row tiles, 33-64 rows with long K) against the tree: bits,
# ops perf, then a decode A/B, alternating.
# Not run (the fourteenth session's device time ran out). To prepare it, from the repository root
# at the commit that added this file (its gpu/ is 6b8a2af's): build build-gpu (bench/README
# recipe), then
#   mkdir -p exp/base exp/wb1a exp/wb1b && cp build-gpu/libsparkgate.so build-gpu/sparkgate exp/base/
#   for v in wb1a:wb1_32x16_tiles wb1b:wb1_16col_tiles; do git apply bench/results/h200-2026-12-01n/${v#*:}.patch &&
#     cmake --build build-gpu -j2 && cp build-gpu/libsparkgate.so build-gpu/sparkgate exp/${v%%:*}/ && git checkout gpu/gemm.cu; done
#   cmake --build build-gpu -j2 && cp bench/results/h200-2026-12-01n/planned_script_c11.sh exp/c11.sh
# and run `bash exp/c11.sh` with carry ["build-gpu", ".deps"] (about 150 s plus the start).
# Expected: every check 0 failed; keep a patch only if spec and hedge3 (and hedge1 for wb1b) at
# 1 and 4 requests are faster than base in both pairs, then run the GPU ctest on it.
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
mkdir -p $OUT/r
t0=$(date +%s); ts() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
bin() { echo "env LD_LIBRARY_PATH=$PWD/exp/$1:$LD_LIBRARY_PATH exp/$1/sparkgate"; }
for v in wb1a wb1b; do for op in gemm gemm_swiglu gemm_logits; do
  $(bin $v) ops check --op $op > $OUT/r/check_${v}_$op.txt 2>&1; ts "check $v $op rc=$? $(tail -1 $OUT/r/check_${v}_$op.txt)"
done; done
SG_CUDA_GEMM_FROM_END=1 $(bin wb1b) ops check --op gemm > $OUT/r/check_wb1b_fromend.txt 2>&1; ts "check wb1b from_end rc=$?"
for v in base wb1a wb1b; do
  $(bin $v) ops perf --op gemm --weight q_proj,k_proj,o_proj,down_proj,fc --rows 9,16,24,32,48,64 > $OUT/r/perf_$v.txt 2>&1; ts "perf $v"
done
build-gpu/sparkgate fixture make --set qwen3-4b --out /tmp/q4b > $OUT/r/fixture.txt 2>&1 || exit 1; ts fixture
A="bench --backend cuda --fixture /tmp/q4b --concurrency 1,4 --modes spec,hedge1,hedge3 --max-new 48 --repeat 2"
for rep in 1 2; do for v in base wb1a wb1b; do
  $(bin $v) $A > $OUT/r/bench_${v}_$rep.txt 2>&1; ts "bench $v $rep rc=$?"
  grep -E '^ +[14] (spec|hedge1|hedge3) ' $OUT/r/bench_${v}_$rep.txt | awk '{printf "  %s %s %s verify %s\n", $1, $2, $3, $11}'
done; done
# Decision (this session's addition): a variant is kept only if every spec/hedge1/hedge3 row at
# 1 and 4 requests is faster than base's in both pairs; the GPU ctest then runs on its library.
rate() { grep -E "^ +$2 $3 " $OUT/r/bench_$1_$4.txt | awk '{print $3}'; }
keep=none
for v in wb1b wb1a; do ok=1
  for rep in 1 2; do for n in 1 4; do for m in spec hedge1 hedge3; do
    awk -v a="$(rate $v $n $m $rep)" -v b="$(rate base $n $m $rep)" 'BEGIN{exit !(a>b)}' || ok=0
  done; done; done
  [ $ok = 1 ] && { keep=$v; break; }
done
ts "keep=$keep"
if [ $keep != none ]; then
  cp exp/$keep/libsparkgate.so build-gpu/libsparkgate.so
  ctest --test-dir build-gpu -L gpu -j1 --output-on-failure > $OUT/r/ctest_gpu_$keep.txt 2>&1; ts "ctest $keep rc=$? $(grep -E 'tests passed' $OUT/r/ctest_gpu_$keep.txt)"
fi
