#!/usr/bin/env python3
"""Per Markov step of a kernel timeline (SG_TIMELINE_CSV=F, gzipped or not): for the chain loop's
steps 1..6, when each of the step's four kernels ended, in us after the previous step's
markov_stage2 ended (medians over every loop in the file), and the w2 GEMM's own duration by step.
The w2 GEMM is the gemm_split launch between markov_gather and markov_stage1 (any grid)."""
import collections, csv, gzip, statistics, sys

def steps(path):
    op = gzip.open if path.endswith('.gz') else open
    rows = sorted(csv.DictReader(op(path, 'rt')), key=lambda r: int(r['start_ns']))
    ends, gemm_us = collections.defaultdict(list), collections.defaultdict(list)
    s, prev_end = -1, None
    for r in rows:
        n, st, en = r['name'], int(r['start_ns']), int(r['end_ns'])
        if 'markov_gather' in n: s, k = s + 1, 'gather'
        elif 'gemm_split' in n and s >= 0: k = 'gemm'
        elif 'markov_stage1' in n: k = 'stage1'
        elif 'markov_stage2' in n: k = 'stage2'
        else:
            s, prev_end = -1, None
            continue
        if k == 'gemm': gemm_us[s].append((en - st) / 1000)
        if 1 <= s <= 6 and prev_end is not None: ends[k].append((en - prev_end) / 1000)
        if k == 'stage2': prev_end = en
    return ends, gemm_us

for path in sys.argv[1:]:
    ends, gemm_us = steps(path)
    print(path)
    print('  ends after the previous step (us):',
          ', '.join(f'{k} {statistics.median(v):.2f}' for k, v in ends.items()),
          f'({len(ends["stage2"])} steps)')
    print('  w2 GEMM duration by step (us):',
          ', '.join(f'{s}: {statistics.median(v):.1f}' for s, v in sorted(gemm_us.items()) if s < 8))
