# Inserts clock64 phase stamps into gpu/attention.cu (measurement builds only; thread 0 of every
# block of a one-tile launch; means printed at exit). Anchors are lines both trees share.
import re, sys
p = sys.argv[1]; s = open(p).read()
def rep(old, new):
    global s
    assert s.count(old) == 1, old
    s = s.replace(old, new)
rep('#include <stdlib.h>', '#include <stdio.h>\n#include <stdlib.h>')
rep('__global__ void __launch_bounds__(ATT_THREADS * ATT_MAX_TEAMS)', '''__device__ unsigned long long stamp_acc[10];
#define STAMP(n) do { if (threadIdx.x == 0 && T == 1) { const long long now = clock64(); atomicAdd(&stamp_acc[n], (unsigned long long)(now - st_prev)); st_prev = now; } } while (0)
__global__ void __launch_bounds__(ATT_THREADS * ATT_MAX_TEAMS)''')
rep('    const int R = T - Tc, n_stored = min(nk, Tc * ATT_TILE), n_loads = 2 * T + 2 * R;\n',
    '    const int R = T - Tc, n_stored = min(nk, Tc * ATT_TILE), n_loads = 2 * T + 2 * R;\n    long long st_prev = clock64();\n')
rep('    pdl_wait_primary();\n    // The query', '    STAMP(0);\n    pdl_wait_primary();\n    STAMP(1);\n    // The query')
rep('    __syncthreads();\n    copy_tile(k_pages, hd, vec, cnt0, rowoff[0], tiles);\n',
    '    __syncthreads();\n    STAMP(2);\n    copy_tile(k_pages, hd, vec, cnt0, rowoff[0], tiles);\n')
m = re.search(r'\n( +)if \(t == 0\)[^\n]*\n?[^\n]*n_stored[^\n]*\n', s)  # thread 0's sum of the stored keys
assert m
s = s[:m.start()] + '\n' + m.group(1) + 'STAMP(5);' + m.group(0)[:-1] + '\n' + m.group(1) + 'STAMP(6);\n' + s[m.end():]
rep('        __syncthreads(); // load u has landed (everyone\'s copies); pass 3 sees sc and pt\n',
    '        __syncthreads(); // load u has landed (everyone\'s copies); pass 3 sees sc and pt\n        if (u == 0) STAMP(3);\n        if (u == 1) STAMP(7);\n')
rep('                if (l.tile < Tc) sc[j0 + t] = sv;\n            }\n',
    '                if (l.tile < Tc) sc[j0 + t] = sv;\n            }\n            STAMP(4);\n')
rep('    uint16_t *o = out + (size_t)i * qd + (size_t)h * hd;\n',
    '    STAMP(8);\n    if (threadIdx.x == 0 && T == 1) atomicAdd(&stamp_acc[9], 1ull);\n    uint16_t *o = out + (size_t)i * qd + (size_t)h * hd;\n')
rep('// Lets attention_k have all', '''static void stamp_print(void) {
    unsigned long long a[10];
    if (cudaMemcpyFromSymbol(a, stamp_acc, sizeof a) != cudaSuccess) return;
    const char *names[9] = {"pre-wait", "wait", "q", "K tile", "scores", "max+exp", "sum(t0)", "probs+V", "P.V"};
    fprintf(stderr, "attention stamps: %llu blocks (thread 0, T == 1), mean cycles:", a[9]);
    for (int n = 0; n < 9; n++) fprintf(stderr, " %s %.0f", names[n], a[9] ? (double)a[n] / a[9] : 0.0);
    fprintf(stderr, "\\n");
}

// Lets attention_k have all''')
rep('                                    att_smem_max));\n', '                                    att_smem_max));\n    atexit(stamp_print);\n')
open(p, 'w').write(s)
