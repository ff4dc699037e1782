#!/bin/bash
# The natural k-step order by two 8-byte loads per lane instead of shuffles
# (natural_steps_8byte_00a9046.patch: global loads in the register paths, two 8-byte
# shared-memory reads in the ring, band and tiled kernels): bits (ops check gemm) and ops perf at
# 1-64 rows against the tree. Planned, not run: the session's device time was spent (the call was
# refused). Build: the patch applied to 00a9046's gpu/gemm.cu (it compiles, ptxas clean), its
# libsparkgate.so and sparkgate copied to exp/nat8, the tree's to exp/base; carry .deps.
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
mkdir -p /tmp/r; trap 'tar czf $OUT/c38.tgz -C /tmp r' EXIT
bin() { echo "env LD_LIBRARY_PATH=$PWD/exp/$1:$LD_LIBRARY_PATH exp/$1/sparkgate"; }
timeout 30 $(bin nat8) ops check --op gemm > /tmp/r/check_gemm.txt 2>&1; echo "check rc=$? $(tail -n 1 /tmp/r/check_gemm.txt)"
P="ops perf --op gemm --rows 1,8,16,32,64"
for v in base nat8; do timeout 20 $(bin $v) $P > /tmp/r/perf_$v.txt 2>&1; echo "perf $v rc=$?"; done
paste <(awk 'NF == 9 && $2 ~ /^[0-9]+$/ {print $1, $2, $5}' /tmp/r/perf_base.txt) \
      <(awk 'NF == 9 && $2 ~ /^[0-9]+$/ {print $5}' /tmp/r/perf_nat8.txt)
