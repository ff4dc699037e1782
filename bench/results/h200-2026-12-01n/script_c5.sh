#!/bin/bash
# bounds: what x (or the weights) cost the GEMM kernels at 1-64 rows. Timing only, wrong bits:
# xfree: every segment reads segment 0's x (split: L1-resident; band: x copied for the first
# stages only); wfree: every segment reads segment 0's weights (L2-resident). exp/xfree and
# exp/wfree: build-gpu's libsparkgate.so and sparkgate with the x hunks (load_a_batch's two
# calls, the band's x copies) or the weight hunks (split_load, split_issue, the band's weight
# copies) of bound_x_w_free.patch applied; both (script_c8.sh) has all of them. Outputs kept
# as bound_perf_xfree_*, bound_perf_wfree_* and c5_bound_perf_base_* (script_c8.sh: bound_perf_base_*).
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
mkdir -p $OUT/r; trap 'cd $OUT && tar czf r.tgz r && rm -rf r' EXIT
S=build-gpu/sparkgate
t0=$(date +%s); ts() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
bin() { case $1 in base) echo "$S";; *) echo "env LD_LIBRARY_PATH=$PWD/exp/$1:$LD_LIBRARY_PATH exp/$1/sparkgate";; esac; }
for rep in 1 2; do for t in base xfree wfree; do
  $(bin $t) ops perf --op gemm --rows 1,8,16,24,32,48,64 > $OUT/r/perf_${t}_$rep.txt 2>&1; ts "perf $t $rep rc=$?"
done; done
ts done
