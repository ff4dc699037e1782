#!/bin/bash
# spec at 1 request, base vs a1eac2a (wb1c): the kernel timeline of each, alternating, to find
# where c14's +0.5 % verify comes from (the 8-row kernels are the same instantiation).
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
mkdir -p /tmp/r; t0=$(date +%s); ts() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
bin() { echo "env LD_LIBRARY_PATH=$PWD/exp/$1:$LD_LIBRARY_PATH exp/$1/sparkgate"; }
trap 'tar czf $OUT/c15.tgz -C /tmp r' EXIT
build-gpu/sparkgate fixture make --set qwen3-4b --out /tmp/q4b > /tmp/r/fixture.txt 2>&1 || exit 1; ts fixture
for rep in 1 2; do for v in base wb1c; do
  SG_TIMELINE_ALL=1 CUDA_INJECTION64_PATH=$PWD/build-gpu/libsg_timeline.so $(bin $v) bench --backend cuda --fixture /tmp/q4b \
    --concurrency 1 --modes spec --max-new 64 --repeat 1 > /tmp/r/tl_${v}_$rep.txt 2>&1; ts "tl $v $rep rc=$?"
done; done
