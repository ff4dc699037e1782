#!/bin/bash
# call 3: the bench's warm-up until no capture: --repeat 1 against --repeat 3; the GPU tests
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
mkdir -p $OUT/r; trap 'cd $OUT && tar czf r.tgz r && rm -rf r' EXIT
S=build-gpu/sparkgate
$S fixture make --set qwen3-4b --out /tmp/q4b > $OUT/r/fixture.txt 2>&1 || exit 1
B="$S bench --backend cuda --fixture /tmp/q4b --concurrency 1,4 --modes plain,spec,hedge3 --max-new 64"
for t in r1a r3 r1b; do
  rep=${t:1:1}
  $B --repeat $rep --json $OUT/r/warmup_$t.json > $OUT/r/warmup_$t.txt 2>&1; echo "$t rc=$?"
  grep -E '^ +[14] (plain|spec|hedge3)' $OUT/r/warmup_$t.txt | cut -c1-40
  grep -A7 "^graph replay:" $OUT/r/warmup_$t.txt | cut -c1-160
done
ctest --test-dir build-gpu -L gpu -j1 --output-on-failure > $OUT/r/ctest_gpu.txt 2>&1; echo "ctest rc=$?"; tail -4 $OUT/r/ctest_gpu.txt
