#!/bin/bash
# call 2: ncu of the one-row (plain decode) and 8-row (spec verify) GEMM launches; x of the next
# ring items prefetched into L1 (SG_EXP_XPF=1,2)
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
mkdir -p $OUT/r; trap 'cd $OUT && tar czf r.tgz r && rm -rf r' EXIT
S=build-gpu/sparkgate
t0=$(date +%s); ts() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
$S fixture make --set qwen3-4b --out /tmp/q4b > $OUT/r/fixture.txt 2>&1 || exit 1
ts fixture
for d in 1 2; do for op in gemm gemm_swiglu; do
  SG_EXP_XPF=$d $S ops check --op $op > $OUT/r/check_${op}_$d.txt 2>&1; echo "check $op xpf $d rc=$? $(tail -1 $OUT/r/check_${op}_$d.txt)"
done; done
for d in 0 1 2; do
  SG_EXP_XPF=$d $S ops perf --op gemm > $OUT/r/perf_$d.txt 2>&1
  ts "perf xpf $d"; grep -E '^(q_proj|k_proj|o_proj|gate_proj|down_proj|fc|markov_w2|lm_head) +(1|8) ' $OUT/r/perf_$d.txt | awk '{printf "%s/%s %s  ", $1, $2, $5}'; echo
done
B="$S bench --backend cuda --fixture /tmp/q4b --concurrency 1,4 --modes plain,spec,hedge1 --max-new 64 --repeat 3"
run() { local tag=$1; shift; env "$@" $B > $OUT/r/$tag.txt 2>&1; ts "$tag rc=$?"; grep -E '^ +[14] (plain|spec|hedge1) ' $OUT/r/$tag.txt | awk '{printf "  %s %s tok/s %s verify %s\n", $1, $2, $3, $11}'; grep -E "^sparkgate: " $OUT/r/$tag.txt; }
for i in 1 2; do for d in 0 1 2; do run xpf${d}_$i SG_EXP_XPF=$d; done; done
M=gpu__time_duration.sum,launch__grid_size,launch__block_size,launch__registers_per_thread,launch__shared_mem_per_block_dynamic,sm__warps_active.avg.pct_of_peak_sustained_active,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_bytes.sum,dram__bytes_read.sum,l1tex__t_sector_hit_rate.pct,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__cycles_active.avg,gpc__cycles_elapsed.max,l1tex__throughput.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,regex:smsp__warp_issue_stalled_.*_per_warp_active.pct
ncu --cache-control all --clock-control none --csv --print-units base -k regex:"gemm_" --launch-skip 145 --launch-count 40 --metrics $M \
  $S generate --backend cuda --fixture /tmp/q4b --no-draft --max-new 3 --graphs off > $OUT/r/ncu_plain.csv 2> $OUT/r/ncu_plain.err
ts "ncu plain rc=$?"
python3 bench/results/h200-2026-12-01f/ncu_summary.py $OUT/r/ncu_plain.csv > $OUT/r/ncu_plain_summary.txt 2>&1; cut -c1-400 $OUT/r/ncu_plain_summary.txt | head -30
ncu --cache-control all --clock-control none --csv --print-units base -k regex:"gemm_" --launch-skip 180 --launch-count 120 --metrics $M \
  $S generate --backend cuda --fixture /tmp/q4b --max-new 8 --graphs off > $OUT/r/ncu_spec.csv 2> $OUT/r/ncu_spec.err
ts "ncu spec rc=$?"
python3 bench/results/h200-2026-12-01f/ncu_summary.py $OUT/r/ncu_spec.csv > $OUT/r/ncu_spec_summary.txt 2>&1; cut -c1-400 $OUT/r/ncu_spec_summary.txt | head -30
ts done
