#!/bin/bash
# call 6 (final tree): the bench with captures counted in the timed steps; the GPU tests
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
mkdir -p $OUT/r; trap 'cd $OUT && tar czf r.tgz r && rm -rf r' EXIT
S=build-gpu/sparkgate
$S fixture make --set qwen3-4b --out /tmp/q4b > $OUT/r/fixture.txt 2>&1 || exit 1
B="$S bench --backend cuda --fixture /tmp/q4b --concurrency 1,4 --modes plain,spec,hedge1,hedge2,hedge3 --max-new 64"
for t in r1 r3; do
  $B --repeat ${t:1:1} --json $OUT/r/final_bench_$t.json > $OUT/r/final_bench_$t.txt 2>&1; echo "$t rc=$?"
  grep -E '^ +[14] (plain|spec|hedge[123])' $OUT/r/final_bench_$t.txt | cut -c1-40
  grep -A10 "^graph replay:" $OUT/r/final_bench_$t.txt | cut -c1-150
done
ctest --test-dir build-gpu -L gpu -j1 --output-on-failure > $OUT/r/final_ctest_gpu.txt 2>&1; echo "ctest rc=$?"; grep -E "tests passed|Failed" $OUT/r/final_ctest_gpu.txt
