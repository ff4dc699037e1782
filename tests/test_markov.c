// tests/test_markov.c: the Markov head, chain A, exact top-2/top-3, ties, ladders, the
// confidence head and the DFlash (no Markov head) path of ref/markov.c.
// ctest-labels: cpu;unit
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/sampler.h"
#include "ref/drafter.h"
#include "ref/markov.h"
#include "testutil.h"

enum { H = 8, V = 64, R = 16, N = 6 };

typedef struct {
    drafter_model d;
    bf16 *w1, *w2, *cw;
} head;

static void head_build(head *m, int with_markov, uint64_t seed) {
    memset(m, 0, sizeof *m);
    m->d.cfg.arch.hidden_size = H;
    m->d.cfg.arch.vocab_size = V;
    m->d.cfg.markov_rank = R;
    m->d.cfg.has_confidence_head = 1;
    m->d.cfg.confidence_with_markov = with_markov;
    m->w1 = tu_random_bf16((size_t)V * R, 1.0, seed);
    m->w2 = tu_random_bf16((size_t)V * R, 0.5, seed + 1);
    m->d.conf_width = H + (with_markov ? R : 0);
    m->cw = tu_random_bf16((size_t)m->d.conf_width, 0.3, seed + 2);
    m->d.markov_w1 = m->w1;
    m->d.markov_w2 = m->w2;
    m->d.conf_w = m->cw;
    m->d.conf_b = 0.25f;
}

static void head_free(head *m) {
    free(m->w1);
    free(m->w2);
    free(m->cw);
}

static float *random_u(int rows, double scale, uint64_t seed) {
    float *u = sg_calloc((size_t)rows * V, sizeof *u);
    for (int i = 0; i < rows * V; i++) u[i] = (float)(scale * tu_normal(&seed));
    return u;
}

// The k-th best id of x (value descending, then id ascending), by brute force.
static int kth_best(const float *x, int k) {
    int used[V] = {0}, id = -1;
    for (int j = 0; j <= k; j++) {
        id = -1;
        for (int v = 0; v < V; v++)
            if (!used[v] && (id < 0 || x[v] > x[id])) id = v;
        used[id] = 1;
    }
    return id;
}

START_TEST(bias_is_fp32_accumulation_rounded_to_bf16) {
    head m;
    head_build(&m, 1, 3);
    int exact = 0;
    for (int prev = 0; prev < V; prev += 7) {
        float bias[V];
        ref_markov_bias(&m.d, prev, bias);
        for (int v = 0; v < V; v++) {
            double dot = 0;
            for (int i = 0; i < R; i++)
                dot += (double)bf16_to_f32(m.w2[v * R + i]) * bf16_to_f32(m.w1[prev * R + i]);
            ck_assert_float_eq(bias[v], bf16_round(bias[v])); // rounded to bf16
            float want = bf16_round((float)dot);
            // fp32 vs exact accumulation may straddle a rounding boundary: at most one bf16 ulp
            double ulp = ldexp(1.0, ilogb(fmax(fabs(dot), 1e-30)) - 7);
            ck_assert_msg(fabs(bias[v] - want) <= ulp, "prev %d v %d: %g vs %g", prev, v,
                          bias[v], want);
            exact += bias[v] == want;
        }
    }
    ck_assert_int_ge(exact, 10 * V * 9 / 10); // 10 prev rows; nearly all exact
    head_free(&m);
}
END_TEST

START_TEST(chain_a_greedy_with_exact_top3) {
    head m;
    head_build(&m, 1, 5);
    float *U = random_u(N, 1.0, 9);
    ref_chain a;
    ref_markov_chain(&m.d, U, N, 11, &a);
    ck_assert_int_eq(a.n, N);
    ck_assert_int_eq(a.branch, -1);
    ck_assert_int_eq(a.anchor, 11);
    int prev = 11;
    for (int k = 0; k < N; k++) {
        float bias[V], score[V];
        ref_markov_bias(&m.d, prev, bias);
        for (int v = 0; v < V; v++) score[v] = U[k * V + v] + bias[v];
        ck_assert_int_eq(a.tokens[k], argmax_f32(score, V)); // top-1 bit-identical to argmax
        for (int j = 0; j < 3; j++) {
            ck_assert_int_eq(a.top_ids[k][j], kth_best(score, j));
            ck_assert_float_eq(a.top_vals[k][j], score[kth_best(score, j)]);
        }
        const int *t = a.top_ids[k];
        ck_assert_float_eq(ref_chain_margin(&a, k, 0), score[t[0]] - score[t[1]]);
        ck_assert_float_eq(ref_chain_margin(&a, k, 1), score[t[1]] - score[t[2]]);
        ck_assert_float_ge(ref_chain_margin(&a, k, 1), 0.0f);
        prev = a.tokens[k];
    }
    // The bias matters: drafts differ from U's own argmax somewhere.
    int differs = 0;
    for (int k = 0; k < N; k++) differs |= a.tokens[k] != argmax_f32(U + k * V, V);
    ck_assert(differs);
    free(U);
    head_free(&m);
}
END_TEST

START_TEST(ties_go_to_the_lowest_id) {
    head m;
    head_build(&m, 1, 7);
    // Rows 4 and 10 of w2 identical and dominant: equal scores, so 4 wins and 10 is runner-up.
    for (int i = 0; i < R; i++) {
        bf16 x = f32_to_bf16(bf16_to_f32(m.w1[2 * R + i]) >= 0 ? 4.0f : -4.0f);
        m.w2[4 * R + i] = m.w2[10 * R + i] = x;
    }
    float U[V] = {0};
    ref_chain a;
    ref_markov_chain(&m.d, U, 1, 2, &a);
    ck_assert_int_eq(a.tokens[0], 4);
    ck_assert_int_eq(a.top_ids[0][1], 10);
    ck_assert_float_eq(a.top_vals[0][0], a.top_vals[0][1]);
    ck_assert_float_eq(ref_chain_margin(&a, 0, 0), 0.0f);
    // The ladder at 0 takes the tied runner-up.
    ref_chain l;
    ref_markov_ladder(&m.d, U, &a, 0, &l);
    ck_assert_int_eq(l.tokens[0], 10);
    // Without a Markov head, two equal U values: the lower id.
    m.d.cfg.markov_rank = 0;
    U[9] = U[2] = 5.0f;
    ref_markov_chain(&m.d, U, 1, 2, &a);
    ck_assert_int_eq(a.tokens[0], 2);
    ck_assert_int_eq(a.top_ids[0][1], 9);
    head_free(&m);
}
END_TEST

START_TEST(ladder_branches_on_the_runner_up_over_the_same_U) {
    head m;
    head_build(&m, 1, 13);
    float *U = random_u(N, 1.0, 17);
    ref_chain a, l;
    ref_markov_chain(&m.d, U, N, 40, &a);
    for (int P = 0; P < N; P++) {
        ref_markov_ladder(&m.d, U, &a, P, &l);
        ck_assert_int_eq(l.branch, P);
        ck_assert_int_eq(l.n, N);
        for (int k = 0; k < P; k++) ck_assert_int_eq(l.tokens[k], a.tokens[k]);
        ck_assert_int_eq(l.tokens[P], a.top_ids[P][1]);
        ck_assert_int_ne(l.tokens[P], a.tokens[P]);
        // greedy continuation from the runner-up over U's own rows, recomputed here
        int prev = l.tokens[P];
        for (int k = P + 1; k < N; k++) {
            float bias[V], score[V];
            ref_markov_bias(&m.d, prev, bias);
            for (int v = 0; v < V; v++) score[v] = U[k * V + v] + bias[v];
            ck_assert_int_eq(l.tokens[k], argmax_f32(score, V));
            ck_assert_int_eq(l.top_ids[k][1], kth_best(score, 1));
            prev = l.tokens[k];
        }
    }
    free(U);
    head_free(&m);
}
END_TEST

static double direct_confidence(const head *m, const float *h, int prev, int with_markov) {
    double z = m->d.conf_b;
    for (int i = 0; i < H; i++) z += (double)bf16_to_f32(m->cw[i]) * h[i];
    if (with_markov)
        for (int i = 0; i < R; i++)
            z += (double)bf16_to_f32(m->cw[H + i]) * bf16_to_f32(m->w1[prev * R + i]);
    return 1.0 / (1.0 + exp(-z));
}

START_TEST(confidence_head_and_threshold_cut) {
    for (int with_markov = 0; with_markov <= 1; with_markov++) {
        head m;
        head_build(&m, with_markov, 21 + (uint64_t)with_markov);
        float *U = random_u(N, 1.0, 23);
        float hidden[N * H];
        uint64_t s = 5;
        for (int i = 0; i < N * H; i++) hidden[i] = bf16_round((float)(2.0 * tu_normal(&s)));
        ref_chain a;
        ref_markov_chain(&m.d, U, N, 33, &a);
        double c[N], lo = 1, hi = 0;
        for (int k = 0; k < N; k++) {
            int prev = k ? a.tokens[k - 1] : 33;
            c[k] = ref_confidence(&m.d, hidden + k * H, prev);
            ck_assert_double_eq_tol(c[k], direct_confidence(&m, hidden + k * H, prev, with_markov),
                                    1e-12);
            lo = fmin(lo, c[k]);
            hi = fmax(hi, c[k]);
        }
        ck_assert_double_lt(lo, hi); // the values vary, so the cuts below differ
        ck_assert_int_eq(ref_confidence_cut(&m.d, hidden, &a, 0.0), N);
        ck_assert_int_eq(ref_confidence_cut(&m.d, hidden, &a, hi + 1e-9), 0);
        for (int t = 0; t < N; t++) {
            int want = N;
            for (int k = N - 1; k >= 0; k--)
                if (c[k] < c[t]) want = k;
            ck_assert_int_eq(ref_confidence_cut(&m.d, hidden, &a, c[t]), want);
        }
        free(U);
        head_free(&m);
    }
}
END_TEST

// The Markov part of the confidence input really is w1[prev]: changing prev changes c.
START_TEST(confidence_reads_w1_of_prev) {
    head m;
    head_build(&m, 1, 31);
    float h[H] = {0};
    ck_assert_double_ne(ref_confidence(&m.d, h, 1), ref_confidence(&m.d, h, 2));
    m.d.cfg.confidence_with_markov = 0;
    m.d.conf_width = H;
    ck_assert_double_eq(ref_confidence(&m.d, h, 1), ref_confidence(&m.d, h, 2));
    ck_assert_double_eq_tol(ref_confidence(&m.d, h, 1), 1.0 / (1.0 + exp(-0.25)), 1e-15);
    head_free(&m);
}
END_TEST

START_TEST(dflash_drafts_are_argmax_of_the_draft_rows) {
    head m;
    head_build(&m, 0, 41);
    m.d.cfg.markov_rank = 0;
    m.d.markov_w1 = m.d.markov_w2 = NULL;
    enum { BS = 5 };
    float *U = random_u(BS, 1.0, 43);
    for (int layout = 0; layout < 2; layout++) {
        int first, nd = ref_draft_rows((block_layout)layout, BS, &first);
        ref_chain a;
        ref_markov_chain(&m.d, U + first * V, nd, 3, &a);
        ck_assert_int_eq(a.n, layout == LAYOUT_ANCHOR_DROP ? BS - 1 : BS);
        for (int k = 0; k < nd; k++) {
            ck_assert_int_eq(a.tokens[k], argmax_f32(U + (first + k) * V, V));
            ck_assert_int_eq(a.top_ids[k][1], kth_best(U + (first + k) * V, 1));
        }
    }
    free(U);
    head_free(&m);
}
END_TEST

int main(void) {
    Suite *s = suite_create("markov");
    TCase *tc = tcase_create("markov");
    tcase_add_test(tc, bias_is_fp32_accumulation_rounded_to_bf16);
    tcase_add_test(tc, chain_a_greedy_with_exact_top3);
    tcase_add_test(tc, ties_go_to_the_lowest_id);
    tcase_add_test(tc, ladder_branches_on_the_runner_up_over_the_same_U);
    tcase_add_test(tc, confidence_head_and_threshold_cut);
    tcase_add_test(tc, confidence_reads_w1_of_prev);
    tcase_add_test(tc, dflash_drafts_are_argmax_of_the_draft_rows);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
