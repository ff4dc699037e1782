#!/usr/bin/env python3
"""ncu_summary.py NCU_CSV: per kernel and launch shape, the mean of each metric over its launches.

Reads the CSV of `ncu --csv --print-units base --metrics ...` (the metrics of bench/README.md's
verify-profile command; ncu's warnings before the header are skipped), groups the launches by
kernel name, grid and block size, and prints one line per group, most total time first, with its
four largest stall reasons.
"""
import collections
import csv
import io
import sys


def main(path):
    text = open(path).read()
    rows = csv.DictReader(io.StringIO(text[text.index('"ID"'):]))
    launches = collections.OrderedDict()  # (launch id, kernel) -> {metric: value}
    for r in rows:
        key = (r["ID"], r["Kernel Name"][:70])
        launches.setdefault(key, {})[r["Metric Name"]] = r["Metric Value"].replace(",", "")
    print(len(launches), "launches")
    groups = collections.defaultdict(list)
    for (_, name), m in launches.items():
        groups[(name, m["launch__grid_size"], m["launch__block_size"])].append(m)
    stalls = [f for f in next(iter(launches.values())) if "stalled" in f]

    def total_time(item):
        return -sum(float(m["gpu__time_duration.sum"]) for m in item[1])

    for (name, grid, block), ms in sorted(groups.items(), key=total_time):
        def avg(f):
            return sum(float(m[f]) for m in ms) / len(ms)

        print(f"{name[:60]:60s} grid {grid:>6} blk {block:>4} n={len(ms):3d} "
              f"t={avg('gpu__time_duration.sum') / 1e3:7.1f}us "
              f"regs {avg('launch__registers_per_thread'):4.0f} "
              f"smem {avg('launch__shared_mem_per_block_dynamic') / 1024:5.1f}K "
              f"warps {avg('sm__warps_active.avg.pct_of_peak_sustained_active'):5.1f}% "
              f"dram {avg('dram__throughput.avg.pct_of_peak_sustained_elapsed'):5.1f}% "
              f"lts {avg('lts__throughput.avg.pct_of_peak_sustained_elapsed'):5.1f}% "
              f"L2MB {avg('lts__t_bytes.sum') / 1e6:6.1f} "
              f"dramMB {avg('dram__bytes_read.sum') / 1e6:6.1f} "
              f"L1hit {avg('l1tex__t_sector_hit_rate.pct'):5.1f} "
              f"hmma {avg('sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active'):5.1f} "
              f"l1tp {avg('l1tex__throughput.avg.pct_of_peak_sustained_active'):5.1f} "
              f"smemwf {avg('l1tex__data_pipe_lsu_wavefronts_mem_shared.sum') / 1e6:5.2f}M")
        top = sorted(((avg(f), f) for f in stalls), reverse=True)[:4]
        print("    stalls:", ", ".join(
            f"{f.replace('smsp__warp_issue_stalled_', '').replace('_per_warp_active.pct', '')} {v:.0f}"
            for v, f in top))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: ncu_summary.py NCU_CSV")
    main(sys.argv[1])
