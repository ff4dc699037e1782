// gates/judge.c: the checks the gate suites share (see judge.h).
#include "judge.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "ref/simulate.h"
#include "strbuf.h"

// ---- workloads ----

int suite_workload_load(const gate_ctx *g, const char *const *names, int n_names,
                        suite_workload *out) {
    memset(out, 0, sizeof *out);
    int V = g->target->cfg.vocab_size, st = SG_OK, total = 0;
    if (g->workload) n_names = 1;
    SG_CHECK(n_names >= 1 && n_names <= 2, "%d workload files", n_names);
    for (int i = 0; i < n_names && st == SG_OK; i++) {
        st = g->workload ? workload_load(g->workload, V, &out->parts[i])
                         : fixture_load_workload(g->fx, names[i], V, &out->parts[i]);
        if (st == SG_OK) total += out->parts[out->n_parts++].n_requests;
    }
    out->reqs = sg_calloc((size_t)(total > 0 ? total : 1), sizeof *out->reqs);
    for (int i = 0; i < out->n_parts; i++)
        for (int k = 0; k < out->parts[i].n_requests; k++) {
            const sg_request *r = &out->parts[i].requests[k];
            if (!g->request || strcmp(r->id, g->request) == 0) out->reqs[out->n++] = *r;
        }
    if (st == SG_OK && g->request && out->n == 0)
        st = sg_fail(SG_EXIT_USAGE, "--request %s: no request of that id in the suite's workload",
                     g->request);
    for (int i = 0; st == SG_OK && i < out->n; i++)
        for (int k = 0; k < i; k++)
            if (strcmp(out->reqs[i].id, out->reqs[k].id) == 0)
                st = sg_fail(SG_EXIT_INPUT, "workloads %s and %s both hold a request \"%s\": the "
                             "ids of a suite's requests must be unique", names[0],
                             n_names > 1 ? names[1] : names[0], out->reqs[i].id);
    if (st != SG_OK) suite_workload_free(out);
    return st;
}

void suite_workload_free(suite_workload *w) {
    for (int i = 0; i < w->n_parts; i++) workload_free(&w->parts[i]);
    free(w->reqs);
    memset(w, 0, sizeof *w);
}

// ---- failure text pieces ----

static void replay_line(const gate_ctx *g, const gate_suite *s, const char *id, strbuf *b) {
    sb_printf(b, "replay: sparkgate gate --suite %s --request ", s->name);
    sb_shell_word(b, id);
    sb_printf(b, " %s\n", g->replay);
}

static void seeds_line(const gate_ctx *g, const sg_request *r, strbuf *b) {
    sb_printf(b, "seeds: request seed %" PRIu64 ", temperature %g (%s); fixture seed %llu\n",
              r->seed, r->temperature, r->temperature > 0 ? "sampled" : "greedy", g->fx->seed);
}

static void origin_text(const run_plan *p, const run_origin *o, strbuf *b) {
    if (o->chain == -2) {
        sb_printf(b, "the prefill (the prompt's last row, position %d)", o->anchor_pos);
    } else if (o->chain == -1) {
        sb_printf(b, "round %d, chain A (anchor position %d)", o->round, o->anchor_pos);
    } else {
        sb_printf(b, "round %d, the ladder branching at draft %d (chain %d; anchor position %d)",
                  o->round, p->o.positions[o->chain], o->chain + 1, o->anchor_pos);
    }
}

static void top_line(const char *label, const verdict_top *t, strbuf *b) {
    sb_printf(b, "%s top-5:", label);
    for (int i = 0; i < VERDICT_TOP && t->ids[i] >= 0; i++)
        sb_printf(b, " %d:%.6g", t->ids[i], (double)t->vals[i]);
    sb_puts(b, "\n");
}

static void failure(gate_suite *s, gate_check check, const char *id, strbuf *b) {
    char *text = sb_take(b);
    suite_fail(s, check, id, "%s", text);
    free(text);
}

// ---- engine runs ----

int suite_run(gate_ctx *g, gate_suite *s, const char *name, const run_plan *p,
              const suite_workload *w, run_result *out) {
    if (run_engine(g->be, g->target, g->draft, p, w->reqs, w->n, out) != SG_OK) {
        suite_fail(s, CHECK_ENGINE, NULL, "%s run: the engine cannot be created: %s", name,
                   sg_error());
        return 0;
    }
    s->runs++;
    s->faults_injected += out->faults_injected;
    if (out->error)
        suite_fail(s, CHECK_ENGINE, NULL, "%s run: the engine stopped on a hard error: %s", name,
                   out->error_msg);
    else if (!out->pools_whole)
        suite_fail(s, CHECK_POOL, NULL, "%s run: the KV pools are not whole after the run: %s",
                   name, out->pool_msg);
    char line[512];
    for (int i = 0; i < w->n; i++) {
        const run_request *q = &out->req[i];
        if (q->status != ENGINE_DONE || counters_check(&q->counters, q->n) == SG_OK) continue;
        counters_format(&q->counters, line, sizeof line);
        suite_fail(s, CHECK_COUNTERS, w->reqs[i].id, "%s run: %s (%d tokens)\ncounters: %s\n",
                   name, sg_error(), q->n, line);
    }
    if (counters_check(&out->total, -1) != SG_OK) {
        counters_format(&out->total, line, sizeof line);
        suite_fail(s, CHECK_COUNTERS, NULL, "%s run, summed over its requests: %s\ncounters: %s\n",
                   name, sg_error(), line);
    }
    return 1;
}

// ---- verdicts ----

static int same_tokens(const int *a, int na, const int *b, int nb) {
    return na == nb && (na == 0 || memcmp(a, b, (size_t)na * sizeof *a) == 0);
}

static void verdict_failure(const gate_ctx *g, gate_suite *s, const char *name, const run_plan *p,
                            const sg_request *r, const run_request *q, const verdict *v) {
    strbuf b = {0};
    sb_printf(&b, "%s run: %s: %s\n", name, verdict_name(v->kind), v->why);
    if (v->kind == VERDICT_REJECTED) sb_printf(&b, "reason: %s\n", q->reason);
    if (v->diff >= 0) {
        sb_printf(&b, "first difference at generated token %d (position %d): reference ", v->diff,
                  r->n_prompt + v->diff);
        if (v->ref_token >= 0) sb_printf(&b, "%d", v->ref_token);
        else sb_puts(&b, "(ended)");
        if (v->eng_token >= 0) sb_printf(&b, ", engine %d\n", v->eng_token);
        else sb_puts(&b, ", engine (ended)\n");
        if (v->ref_token >= 0) {
            sb_printf(&b, "reference top-2: %d (%.6g), %d (%.6g); margin %.6g nat",
                      v->ref_top.ids[0], (double)v->ref_top.vals[0], v->ref_top.ids[1],
                      (double)v->ref_top.vals[1], v->ref_margin);
            if (v->eng_token >= 0)
                sb_printf(&b, "; the engine's token trails the reference's by %.6g nat (tol %g)",
                          v->tie_margin, g->tol);
            if (v->eng_token >= 0 && r->temperature > 0.0)
                sb_printf(&b, "; the reference's sampling margin %.6g (4 tol/T %.6g)",
                          v->sample_margin, v->bound);
            sb_puts(&b, "\n");
            top_line("reference row", &v->ref_top, &b);
        }
        if (v->eng_token >= 0) {
            top_line("engine row   ", &v->eng_top, &b);
            if (r->temperature == 0.0 && v->eng_top.ids[0] != v->eng_token)
                sb_printf(&b, "the engine committed %d although its own row's argmax is %d: the "
                          "token was not chosen by that row (accept or commit, not numerics)\n",
                          v->eng_token, v->eng_top.ids[0]);
            sb_puts(&b, "committed by ");
            origin_text(p, &q->origin[v->diff], &b);
            sb_puts(&b, "\n");
        }
        if (v->tf_fail >= 0 && r->temperature > 0.0)
            sb_printf(&b, "teacher-forced check: engine token %d at generated token %d is not the "
                      "reference sampler's pick, whose sampling margin %.6g is not below 4 tol/T "
                      "%.6g\n", q->tokens[v->tf_fail], v->tf_fail, v->tf_gap, v->bound);
        else if (v->tf_fail >= 0)
            sb_printf(&b, "teacher-forced check: engine token %d at generated token %d trails the "
                      "reference argmax by %.6g nat\n", q->tokens[v->tf_fail], v->tf_fail,
                      v->tf_gap);
        if (v->dlogit_pos >= 0)
            sb_printf(&b, "max |dlogit| over the common prefix: %.6g (generated token %d)\n",
                      v->max_abs_dlogit, v->dlogit_pos);
    }
    seeds_line(g, r, &b);
    replay_line(g, s, r->id, &b);
    failure(s, CHECK_VERDICT, r->id, &b);
}

static void logits_failure(const gate_ctx *g, gate_suite *s, const char *name, const run_plan *p,
                           const sg_request *r, const run_request *q, const verdict *v,
                           const float *ref_row) {
    strbuf b = {0};
    int k = v->dlogit_pos, V = g->target->cfg.vocab_size;
    sb_printf(&b, "%s run: max |dlogit| %.6g at generated token %d (position %d) exceeds the "
              "tolerance %g (verdict %s)\n", name, v->max_abs_dlogit, k, r->n_prompt + k, g->tol,
              verdict_name(v->kind));
    verdict_top t;
    verdict_row_top(ref_row, V, &t);
    top_line("reference row", &t, &b);
    verdict_row_top(q->rows + (size_t)k * V, V, &t);
    top_line("engine row   ", &t, &b);
    sb_printf(&b, "token %d, committed by ", q->tokens[k]);
    origin_text(p, &q->origin[k], &b);
    sb_puts(&b, "\n");
    seeds_line(g, r, &b);
    replay_line(g, s, r->id, &b);
    failure(s, CHECK_LOGITS, r->id, &b);
}

// The verdict of one finished or rejected request; *v filled. Returns 0 when the reference
// cannot decode it (recorded as a verdict failure).
static int judge_request(gate_ctx *g, gate_suite *s, const char *name, const run_plan *p,
                         const sg_request *r, const run_request *q, int identical_only,
                         verdict *v) {
    int V = g->target->cfg.vocab_size, rejected = q->status == ENGINE_REJECTED;
    const ref_output *ref = NULL;
    if (!rejected && !r->expect_rejected && ref_cache_get(&g->refs, r, &ref) != SG_OK) {
        suite_fail(s, CHECK_VERDICT, r->id, "%s run: the reference cannot decode the request: %s\n",
                   name, sg_error());
        return 0;
    }
    verdict_input in = {.V = V, .tol = g->tol, .expect_rejected = r->expect_rejected,
                        .rejected = rejected, .temperature = r->temperature, .seed = r->seed,
                        .n_prompt = r->n_prompt, .identical_only = identical_only,
                        .eng_tokens = q->tokens, .n_eng = q->n, .eng_rows = q->rows};
    float *tf = NULL;
    if (ref) {
        in.ref_tokens = ref->tokens + ref->n_prompt;
        in.n_ref = ref->n_generated;
        in.ref_rows = ref->logits;
        if (q->n > 0 && !same_tokens(in.ref_tokens, in.n_ref, q->tokens, q->n)) {
            tf = sg_calloc((size_t)q->n * V, sizeof *tf);
            if (verdict_teacher_rows(g->target, r->prompt, r->n_prompt, q->tokens, q->n, tf) !=
                SG_OK) {
                free(tf);
                tf = NULL;
            }
        }
        in.tf_rows = tf;
    }
    verdict_judge(&in, v);
    if (!v->passed) verdict_failure(g, s, name, p, r, q, v);
    // The rows with a common prefix must agree within the tolerance, whatever the verdict.
    if (v->dlogit_pos >= 0 && !(v->max_abs_dlogit <= g->tol)) {
        int k = v->dlogit_pos;
        const float *row = (v->diff < 0 || k <= v->diff) ? ref->logits : tf;
        logits_failure(g, s, name, p, r, q, v, row + (size_t)k * V);
    }
    free(tf);
    return 1;
}

void judge_run(gate_ctx *g, gate_suite *s, const char *name, const run_plan *p,
               const suite_workload *w, const run_result *r, int primary, int identical_only) {
    if (primary) {
        s->counters = r->total;
        s->max_abs_dlogit = 0.0;
    }
    for (int i = 0; i < w->n; i++) {
        const sg_request *rq = &w->reqs[i];
        const run_request *q = &r->req[i];
        verdict v;
        memset(&v, 0, sizeof v);
        v.kind = VERDICT_MISMATCH;
        if (q->status != ENGINE_DONE && q->status != ENGINE_REJECTED) {
            suite_fail(s, CHECK_VERDICT, rq->id,
                       "%s run: the request did not finish (the engine stopped)\n", name);
        } else if (!judge_request(g, s, name, p, rq, q, identical_only, &v)) {
            v.kind = VERDICT_MISMATCH;
            v.passed = 0;
        }
        if (!primary) continue;
        gate_request *gr = suite_add_request(s, rq->id);
        gr->verdict = v.kind;
        gr->passed = v.passed;
        gr->n_tokens = q->n;
        gr->tokens = sg_calloc((size_t)(q->n > 0 ? q->n : 1), sizeof *gr->tokens);
        if (q->n) memcpy(gr->tokens, q->tokens, (size_t)q->n * sizeof *gr->tokens);
        gr->counters = q->counters;
        gr->digest = q->digest;
        gr->max_abs_dlogit = v.max_abs_dlogit;
        memcpy(gr->reason, q->reason, sizeof gr->reason);
        s->verdicts[v.kind]++;
        if (!isnan(s->max_abs_dlogit) && !(v.max_abs_dlogit <= s->max_abs_dlogit))
            s->max_abs_dlogit = v.max_abs_dlogit;
    }
}

// ---- within-backend comparisons ----

static const char *status_name(engine_req_status st) {
    static const char *names[] = {"queued", "running", "done", "rejected"};
    return names[st];
}

// First generated index where x and y differ in token or digests (-1: none); *what says which.
static int first_difference(const run_request *x, const run_request *y, const char **what) {
    int n = x->n < y->n ? x->n : y->n;
    for (int k = 0; k < n; k++) {
        *what = x->tokens[k] != y->tokens[k]           ? "the token"
                : x->dig_logits[k] != y->dig_logits[k] ? "the logits digest"
                : x->dig_taps[k] != y->dig_taps[k]     ? "the tap digest"
                                                       : NULL;
        if (*what) return k;
    }
    *what = "the length";
    return x->n != y->n ? n : -1;
}

static void position_line(const char *run, const run_plan *p, const run_request *q, int k,
                          strbuf *b) {
    if (k >= q->n) {
        sb_printf(b, "%s: ended after %d tokens\n", run, q->n);
        return;
    }
    sb_printf(b, "%s: token %d, logits digest %016" PRIx64 ", tap digest %016" PRIx64
              ", committed by ", run, q->tokens[k], q->dig_logits[k], q->dig_taps[k]);
    origin_text(p, &q->origin[k], b);
    sb_puts(b, "\n");
}

// The counter fields (JSON names) where a and b differ, as "name a/b" items.
static void counter_diff(const spec_counters *a, const spec_counters *b, strbuf *out) {
    cJSON *x = counters_to_json(a), *y = counters_to_json(b);
    for (cJSON *i = x->child; i; i = i->next) {
        cJSON *j = cJSON_GetObjectItemCaseSensitive(y, i->string);
        if (j && cJSON_Compare(i, j, 1)) continue;
        char *ta = cJSON_PrintUnformatted(i), *tb = j ? cJSON_PrintUnformatted(j) : NULL;
        sb_printf(out, " %s %s/%s", i->string, ta, tb ? tb : "-");
        free(ta);
        free(tb);
    }
    cJSON_Delete(x);
    cJSON_Delete(y);
}

void compare_runs(gate_ctx *g, gate_suite *s, gate_check check, int with_counters,
                  const char *name_a, const run_plan *pa, const run_result *a, const char *name_b,
                  const run_plan *pb, const run_result *b, const suite_workload *wb,
                  const int *map) {
    for (int i = 0; i < wb->n; i++) {
        const run_request *x = &a->req[map ? map[i] : i], *y = &b->req[i];
        const char *id = wb->reqs[i].id, *what = NULL;
        strbuf t = {0};
        int k = -1;
        if (x->status != y->status) {
            sb_printf(&t, "the %s run differs from the %s run: the request is %s in one, %s in "
                      "the other\n", name_b, name_a, status_name(x->status),
                      status_name(y->status));
        } else if ((k = first_difference(x, y, &what)) >= 0) {
            sb_printf(&t, "the %s run differs from the %s run: %s at generated token %d "
                      "(position %d)\n", name_b, name_a, what, k, wb->reqs[i].n_prompt + k);
            position_line(name_a, pa, x, k, &t);
            position_line(name_b, pb, y, k, &t);
        } else if (with_counters && !counters_equal(&x->counters, &y->counters)) {
            sb_printf(&t, "the %s run differs from the %s run: the counters (%s/%s):", name_b,
                      name_a, name_a, name_b);
            counter_diff(&x->counters, &y->counters, &t);
            sb_puts(&t, "\n");
        }
        if (!t.n) continue;
        replay_line(g, s, id, &t);
        failure(s, check, id, &t);
    }
}

// ---- counters against the simulator ----

void compare_simulator(gate_ctx *g, gate_suite *s, const char *name, const run_plan *p,
                       const suite_workload *w, const run_result *r) {
    ref_sim_options so = {.hedge_cap = p->o.hedge_cap, .n_positions = p->o.n_positions,
                          .chains = p->o.chains < 0 ? p->o.n_positions : p->o.chains,
                          .conf_threshold = p->o.conf_threshold, .layout = p->o.layout};
    memcpy(so.positions, p->o.positions, sizeof(int) * (size_t)p->o.n_positions);
    for (int i = 0; i < w->n; i++) {
        const sg_request *rq = &w->reqs[i];
        const run_request *q = &r->req[i];
        const ref_output *ref;
        ref_sim_result sim;
        if (q->status != ENGINE_DONE) continue;
        if (ref_cache_get(&g->refs, rq, &ref) != SG_OK ||
            ref_simulate(g->target, g->draft, ref, rq->max_new_tokens, rq->temperature, &so,
                         &sim) != SG_OK) {
            suite_fail(s, CHECK_COUNTERS, rq->id, "%s run: the simulator cannot replay it: %s\n",
                       name, sg_error());
            continue;
        }
        if (!counters_equal(&q->counters, &sim.counters)) {
            strbuf t = {0};
            char line[512];
            sb_printf(&t, "%s run: the counters differ from the simulator's (engine/simulator):",
                      name);
            counter_diff(&q->counters, &sim.counters, &t);
            counters_format(&q->counters, line, sizeof line);
            sb_printf(&t, "\nengine:    %s\n", line);
            counters_format(&sim.counters, line, sizeof line);
            sb_printf(&t, "simulator: %s\n", line);
            int k = 0;
            while (k < q->n_rounds && k < sim.n_rounds) {
                const run_round *e = &q->rounds[k];
                const ref_sim_round *m = &sim.rounds[k];
                if (e->anchor_pos != m->anchor_pos || e->drafted != m->drafted ||
                    e->chain != m->winner - 1 || e->n_accepted != m->n_winner ||
                    e->retained != m->retained)
                    break;
                k++;
            }
            if (k < q->n_rounds && k < sim.n_rounds) {
                const run_round *e = &q->rounds[k];
                const ref_sim_round *m = &sim.rounds[k];
                sb_printf(&t, "first different round %d: engine anchor %d, drafted %d, winner %d, "
                          "accepted %d, retained %d; simulator anchor %d, drafted %d, winner %d, "
                          "accepted %d, retained %d (winner -1 is chain A, j >= 0 the ladder "
                          "at the j-th branch position)\n", k + 1, e->anchor_pos, e->drafted, e->chain,
                          e->n_accepted, e->retained, m->anchor_pos, m->drafted, m->winner - 1,
                          m->n_winner, m->retained);
            } else {
                sb_printf(&t, "the engine made %d rounds, the simulator %d; the first %d agree\n",
                          q->n_rounds, sim.n_rounds, k);
            }
            seeds_line(g, rq, &t);
            replay_line(g, s, rq->id, &t);
            failure(s, CHECK_COUNTERS, rq->id, &t);
        }
        ref_sim_result_free(&sim);
    }
}

void check_hedge(gate_suite *s, const char *name, const spec_counters *c) {
    if (c->hedged_rounds > 0 && c->chain_wins > 0 && c->loss_rounds > 0 &&
        c->chains_dropped_capacity == 0)
        return;
    suite_fail(s, CHECK_HEDGE, NULL,
               "%s run: the hedge gate needs hedged rounds, chain wins (copy-back ran) and loss "
               "rounds (discard ran) above zero and no chain dropped for capacity: hedged %lld, "
               "wins %lld, losses %lld, dropped %lld\n",
               name, (long long)c->hedged_rounds, (long long)c->chain_wins,
               (long long)c->loss_rounds, (long long)c->chains_dropped_capacity);
}
