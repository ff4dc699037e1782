// tests/test_gate_run.c: gates/runner.c and gates/gate.c on the tiny fixture: the engine's test
// hooks (every committed position's logits row is the row its digest names; the rounds tile the
// output; the draft oracles accept everything / nothing; reversed submission keeps the given
// order), gate_run over selected suites (passing, the report's requests and counters, the
// provenance), one request, a workload file, a checkpoint pair without a Markov head (hedge suites
// skipped), a fault, a TIE (the fixture's tolerance widened) passing sequential but failing the
// hedge suites, an engine that stops on NaN logits, and its option and input errors.
// ctest-labels: cpu;unit
#include <cjson/cJSON.h>
#include <dirent.h>
#include <string.h>
#include <unistd.h>

#include "common/file.h"
#include "common/safetensors.h"
#include "engine_fixture.h"
#include "gates/gate.h"
#include "gates/runner.h"

static ef_models M;

static void setup(void) { ef_open_set(&M, "tiny"); }
static void teardown(void) { ef_close(&M); }

static run_plan hedged_plan(void) {
    run_plan p;
    memset(&p, 0, sizeof p);
    p.o = ef_hedged();
    return p;
}

START_TEST(test_hooks_record_rows_and_rounds) {
    sg_workload w;
    ef_workload(&M, "concurrent", &w);
    sg_backend *be = cpu_backend_create();
    run_plan p = hedged_plan();
    run_result r;
    ck_assert_int_eq(run_engine(be, &M.target, &M.dspark, &p, w.requests, w.n_requests, &r), SG_OK);
    int V = M.target.cfg.vocab_size;
    ck_assert_int_eq(r.error, SG_OK);
    ck_assert(r.pools_whole);
    ck_assert_int_eq(r.faults_injected, 0);
    for (int i = 0; i < w.n_requests; i++) {
        const run_request *q = &r.req[i];
        ck_assert_int_eq(q->status, ENGINE_DONE);
        // The commit hook hands over exactly the row whose digest the position records.
        for (int k = 0; k < q->n; k++)
            ck_assert_msg(be_digest(q->rows + (size_t)k * V, V, 4) == q->dig_logits[k],
                          "%s: row %d is not the digested row", w.requests[i].id, k);
        ck_assert_int_eq(q->origin[0].chain, -2); // the prefill chose the first token
        ck_assert_int_eq(q->origin[0].anchor_pos, w.requests[i].n_prompt - 1);
        // The rounds tile the rest of the output, each from the anchor the last one left.
        int at = w.requests[i].n_prompt, k = 1;
        for (int j = 0; j < q->n_rounds; j++) {
            const run_round *d = &q->rounds[j];
            ck_assert_int_eq(d->round, j + 1);
            ck_assert_int_eq(d->anchor_pos, at);
            for (int t = 0; t < d->retained; t++, k++) {
                ck_assert_int_eq(q->origin[k].round, d->round);
                ck_assert_int_eq(q->origin[k].chain, d->chain);
            }
            at += d->retained;
        }
        ck_assert_int_eq(k, q->n);
        ck_assert_int_eq(q->n_rounds, (int)q->counters.rounds);
    }
    ck_assert_int_gt(r.total.chain_wins, 0);
    run_result_free(&r);
    // Submitted in reverse, all at step 0: results still come back in the given order.
    run_plan rev = hedged_plan();
    rev.reverse = rev.all_at_zero = 1;
    run_result b;
    ck_assert_int_eq(run_engine(be, &M.target, &M.dspark, &rev, w.requests, w.n_requests, &b),
                     SG_OK);
    for (int i = 0; i < w.n_requests; i++) {
        ref_output o;
        ef_ref(&M, NULL, &w.requests[i], &o);
        ck_assert_int_eq(b.req[i].n, o.n_generated);
        ck_assert(memcmp(b.req[i].tokens, o.tokens + o.n_prompt, sizeof(int) * o.n_generated) == 0);
        ref_output_free(&o);
    }
    run_result_free(&b);
    be->destroy(be);
    workload_free(&w);
}
END_TEST

START_TEST(test_oracles) {
    sg_workload w;
    ef_workload(&M, "sequential", &w);
    ref_output *outs = calloc((size_t)w.n_requests, sizeof *outs);
    const ref_output **refs = calloc((size_t)w.n_requests, sizeof *refs);
    for (int i = 0; i < w.n_requests; i++) {
        ef_ref(&M, NULL, &w.requests[i], &outs[i]);
        refs[i] = &outs[i];
    }
    sg_backend *be = cpu_backend_create();
    run_plan p;
    memset(&p, 0, sizeof p);
    engine_options_default(&p.o);
    p.refs = refs;
    for (int k = 0; k < 2; k++) {
        p.oracle = k == 0 ? ORACLE_REPLAY : ORACLE_WRONG;
        run_result r;
        ck_assert_int_eq(run_engine(be, &M.target, &M.dspark, &p, w.requests, w.n_requests, &r),
                         SG_OK);
        ck_assert_int_gt(r.total.drafted, 0);
        if (p.oracle == ORACLE_REPLAY) ck_assert_int_eq(r.total.accepted, r.total.drafted);
        else ck_assert_int_eq(r.total.accepted, 0);
        for (int i = 0; i < w.n_requests; i++)
            ck_assert(memcmp(r.req[i].tokens, outs[i].tokens + outs[i].n_prompt,
                             sizeof(int) * outs[i].n_generated) == 0);
        run_result_free(&r);
    }
    be->destroy(be);
    for (int i = 0; i < w.n_requests; i++) ref_output_free(&outs[i]);
    free(outs);
    free(refs);
    workload_free(&w);
}
END_TEST

static gate_options options(sg_backend *be) {
    gate_options o = {.be = be, .fixture = M.fx.dir};
    return o;
}

START_TEST(test_gate_run_suites) {
    sg_backend *be = cpu_backend_create();
    gate_options o = options(be);
    o.suites[0] = "hedge_concurrent";
    o.suites[1] = "sequential"; // run in the table's order, not the given one
    o.n_suites = 2;
    gate_report r;
    ck_assert_msg(gate_run(&o, &r) == SG_OK, "%s", sg_error());
    ck_assert(r.passed);
    ck_assert_int_eq(r.n_suites, 2);
    ck_assert_str_eq(r.suites[0].name, "sequential");
    ck_assert_str_eq(r.suites[1].name, "hedge_concurrent");
    ck_assert_int_eq(r.suites[0].n_requests, 6);
    ck_assert_int_eq(r.suites[0].verdicts[VERDICT_IDENTICAL], 6);
    ck_assert_int_eq(r.suites[0].counters.hedged_rounds, 0);
    ck_assert_int_gt(r.suites[0].counters.accepted, 0);
    const gate_suite *h = &r.suites[1];
    ck_assert_int_gt(h->counters.chain_wins, 0);
    ck_assert_int_gt(h->counters.loss_rounds, 0);
    ck_assert(h->max_abs_dlogit <= r.tol);
    ck_assert_int_eq(h->faults_injected, 0);
    ck_assert_int_eq((int)strlen(r.provenance.fixture_sha256), 64);
    ck_assert_int_eq((int)strlen(r.provenance.target_sha256), 64);
    ck_assert_str_eq(r.provenance.backend, "cpu");
    ck_assert_str_eq(r.provenance.gpu, "none");
    ck_assert_str_eq(r.fault, "");
    gate_report_free(&r);
    // One request of one suite (a replay).
    o.n_suites = 1;
    o.suites[0] = "counters";
    o.request = "s3";
    ck_assert_int_eq(gate_run(&o, &r), SG_OK);
    ck_assert(r.passed);
    ck_assert_int_eq(r.suites[0].n_requests, 1);
    ck_assert_str_eq(r.suites[0].requests[0].id, "s3");
    ck_assert_int_eq(r.suites[0].runs, 3); // hedged, rerun, unhedged
    gate_report_free(&r);
    // A workload file for the suite instead of the fixture's.
    char path[FIXTURE_PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/capture_shape.json", M.fx.workloads);
    o.request = NULL;
    o.suites[0] = "sequential";
    o.workload = path;
    ck_assert_int_eq(gate_run(&o, &r), SG_OK);
    ck_assert(r.passed);
    ck_assert_int_eq(r.suites[0].n_requests, 2);
    ck_assert_str_eq(r.suites[0].requests[0].id, "k1");
    gate_report_free(&r);
    be->destroy(be);
}
END_TEST

START_TEST(test_gate_run_pair_without_markov) {
    sg_backend *be = cpu_backend_create();
    gate_options o = options(be);
    char dflash[FIXTURE_PATH_MAX + 16];
    snprintf(dflash, sizeof dflash, "%s/dflash", M.fx.dir);
    o.target = M.fx.target;
    o.draft = dflash;
    o.suites[0] = "sequential";
    o.suites[1] = "hedge_sequential";
    o.suites[2] = "counters";
    o.n_suites = 3;
    gate_report r;
    ck_assert_msg(gate_run(&o, &r) == SG_OK, "%s", sg_error());
    ck_assert(r.passed);
    ck_assert(!r.suites[0].skipped && r.suites[0].verdicts[VERDICT_IDENTICAL] == 6);
    ck_assert(r.suites[1].skipped);
    ck_assert_ptr_nonnull(strstr(r.suites[1].skip_reason, "Markov"));
    ck_assert(!r.suites[2].skipped && r.suites[2].passed); // unhedged against the simulator
    gate_report_free(&r);
    be->destroy(be);
}
END_TEST

START_TEST(test_gate_run_fault) {
    sg_backend *be = cpu_backend_create();
    gate_options o = options(be);
    o.suites[0] = "sequential";
    o.n_suites = 1;
    o.fault = "flip-draft";
    gate_report r;
    ck_assert_int_eq(gate_run(&o, &r), SG_OK);
    ck_assert(!r.passed);
    ck_assert_str_eq(r.fault, "flip-draft");
    ck_assert_int_eq(r.suites[0].faults_injected, 1);
    ck_assert(suite_check_failed(&r.suites[0], CHECK_VERDICT));
    ck_assert_int_eq(r.suites[0].verdicts[VERDICT_MISMATCH], 1);
    const gate_failure *f = &r.suites[0].failures[0];
    // The failure report of design.md §4.
    static const char *parts[] = {"MISMATCH", "first difference at generated token",
                                  "reference top-2:", "reference row top-5:",
                                  "engine row    top-5:", "although its own row's argmax is",
                                  "committed by round", "seeds:",
                                  "replay: sparkgate gate --suite sequential --request "};
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++)
        ck_assert_msg(strstr(f->text, parts[i]), "lacks \"%s\":\n%s", parts[i], f->text);
    ck_assert_ptr_nonnull(strstr(f->text, "--fault flip-draft"));
    gate_report_free(&r);
    be->destroy(be);
}
END_TEST

// The fixture with its declared tolerance raised to 1000 nat (fixture.json rewritten, the rest
// linked): the flip-draft fault's one changed token is then within tolerance, a TIE.
static void wide_tol_fixture(char *dir, size_t size) {
    tu_tmpdir(dir, size);
    DIR *d = opendir(M.fx.dir);
    ck_assert_ptr_nonnull(d);
    char from[FIXTURE_PATH_MAX + 300], to[900];
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.' || strcmp(e->d_name, "fixture.json") == 0) continue;
        snprintf(from, sizeof from, "%s/%s", M.fx.dir, e->d_name);
        snprintf(to, sizeof to, "%s/%s", dir, e->d_name);
        ck_assert_int_eq(symlink(from, to), 0);
    }
    closedir(d);
    char *text;
    size_t len;
    snprintf(from, sizeof from, "%s/fixture.json", M.fx.dir);
    ck_assert_int_eq(file_read_all(from, &text, &len), SG_OK);
    cJSON *j = cJSON_ParseWithLength(text, len);
    free(text);
    ck_assert_ptr_nonnull(j);
    cJSON_ReplaceItemInObject(j, "tol", cJSON_CreateNumber(1000.0));
    text = cJSON_Print(j);
    snprintf(to, sizeof to, "%s/fixture.json", dir);
    tu_write_file(to, text, strlen(text));
    free(text);
    cJSON_Delete(j);
}

// A TIE passes sequential (design.md §4) but fails the hedge suites, which require every request
// IDENTICAL; the failure says why and still gives the report of a verdict failure.
START_TEST(test_gate_run_tie_fails_hedge_suites) {
    char dir[512];
    wide_tol_fixture(dir, sizeof dir);
    sg_backend *be = cpu_backend_create();
    gate_options o = options(be);
    o.fixture = dir;
    o.suites[0] = "sequential";
    o.suites[1] = "hedge_sequential";
    o.suites[2] = "hedge_concurrent";
    o.n_suites = 3;
    o.fault = "flip-draft";
    gate_report r;
    ck_assert_msg(gate_run(&o, &r) == SG_OK, "%s", sg_error());
    ck_assert(r.tol == 1000.0);
    ck_assert(!r.passed);
    const gate_suite *seq = &r.suites[0];
    ck_assert_int_eq(seq->faults_injected, 1);
    ck_assert_int_eq(seq->verdicts[VERDICT_TIE], 1);
    ck_assert_int_eq(seq->verdicts[VERDICT_IDENTICAL], 5);
    ck_assert_msg(seq->passed, "%s", seq->n_failures ? seq->failures[0].text : "");
    for (int k = 1; k < 3; k++) {
        const gate_suite *h = &r.suites[k];
        ck_assert_int_eq(h->faults_injected, 1);
        ck_assert_int_eq(h->verdicts[VERDICT_TIE], 1);
        ck_assert_int_eq(h->verdicts[VERDICT_MISMATCH], 0);
        ck_assert(!h->passed);
        ck_assert_int_eq(h->n_failures, 1);
        const gate_failure *f = &h->failures[0];
        ck_assert_int_eq(f->check, CHECK_VERDICT);
        static const char *parts[] = {"TIE: a TIE", "requires every request IDENTICAL",
                                      "first difference at generated token", "reference top-2:",
                                      "replay: sparkgate gate --suite hedge_"};
        for (size_t i = 0; i < sizeof parts / sizeof *parts; i++)
            ck_assert_msg(strstr(f->text, parts[i]), "lacks \"%s\":\n%s", parts[i], f->text);
        int tie_requests = 0;
        for (int i = 0; i < h->n_requests; i++)
            if (h->requests[i].verdict == VERDICT_TIE) {
                tie_requests++;
                ck_assert(!h->requests[i].passed);
                ck_assert_str_eq(f->request, h->requests[i].id);
            }
        ck_assert_int_eq(tie_requests, 1);
    }
    gate_report_free(&r);
    be->destroy(be);
}
END_TEST

// A copy of the target whose final norm weight starts with a NaN: every logits row is NaN.
static void nan_target(char *dir, size_t size) {
    tu_tmpdir(dir, size);
    static const char *files[2] = {"config.json", "model.safetensors"};
    for (int i = 0; i < 2; i++) {
        char from[FIXTURE_PATH_MAX + 32], to[600], *data;
        size_t len;
        snprintf(from, sizeof from, "%s/%s", M.fx.target, files[i]);
        snprintf(to, sizeof to, "%s/%s", dir, files[i]);
        ck_assert_int_eq(file_read_all(from, &data, &len), SG_OK);
        if (i == 1) {
            st_archive a;
            ck_assert_int_eq(st_open_file(from, &a), SG_OK);
            const st_tensor *t = st_find(&a, "model.norm.weight");
            ck_assert(t && t->dtype == ST_BF16);
            size_t at = (size_t)(t->data - a.files[t->file].map);
            st_close(&a);
            data[at] = (char)0xc0; // bf16 0x7fc0, little-endian: a quiet NaN
            data[at + 1] = 0x7f;
        }
        tu_write_file(to, data, len);
        free(data);
    }
}

START_TEST(test_gate_run_engine_error) {
    sg_backend *be = cpu_backend_create();
    gate_options o = options(be);
    char dir[512];
    nan_target(dir, sizeof dir);
    o.target = dir;
    o.draft = M.fx.draft;
    o.suites[0] = "capture_shape";
    o.n_suites = 1;
    gate_report r;
    ck_assert_msg(gate_run(&o, &r) == SG_OK, "%s", sg_error());
    ck_assert(!r.passed);
    const gate_suite *s = &r.suites[0];
    ck_assert(suite_check_failed(s, CHECK_ENGINE));
    ck_assert(suite_check_failed(s, CHECK_VERDICT)); // the requests did not finish
    ck_assert_msg(strstr(s->failures[0].text, "NaN"), "%s", s->failures[0].text);
    ck_assert_int_eq(s->verdicts[VERDICT_MISMATCH], 2);
    gate_report_free(&r);
    be->destroy(be);
}
END_TEST

static void expect_error(gate_options o, int status, const char *needle) {
    gate_report r;
    int st = gate_run(&o, &r);
    ck_assert_msg(st == status && strstr(sg_error(), needle), "status %d (want %d): %s", st,
                  status, sg_error());
}

START_TEST(test_gate_run_errors) {
    sg_backend *be = cpu_backend_create();
    gate_options o = options(be);
    o.suites[0] = "nonsense";
    o.n_suites = 1;
    expect_error(o, SG_EXIT_USAGE, "the suites: sequential, concurrent");
    o.suites[0] = "sequential";
    o.suites[1] = "sequential";
    o.n_suites = 2;
    expect_error(o, SG_EXIT_USAGE, "given twice");
    o.suites[1] = "concurrent";
    o.request = "s1";
    expect_error(o, SG_EXIT_USAGE, "exactly one --suite");
    o.n_suites = 1;
    o.request = "nobody";
    expect_error(o, SG_EXIT_USAGE, "--request nobody");
    o.request = NULL;
    o.fault = "gremlins";
    expect_error(o, SG_EXIT_USAGE, "flip-draft, corrupt-kv");
    o.fault = NULL;
    o.target = M.fx.target;
    expect_error(o, SG_EXIT_USAGE, "give --draft");
    o.target = NULL;
    o.draft = M.fx.draft;
    expect_error(o, SG_EXIT_USAGE, "--target");
    o.draft = NULL;
    o.fixture = "/nonexistent/fixture";
    expect_error(o, SG_EXIT_INPUT, "/nonexistent/fixture");
    o.fixture = M.fx.dir;
    char dir[512], path[600];
    tu_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/bad.json", dir);
    tu_write_file(path, "{\"schema\": 1}", 13);
    o.workload = path;
    expect_error(o, SG_EXIT_INPUT, "bad.json");
    be->destroy(be);
}
END_TEST

int main(void) {
    Suite *s = suite_create("gate_run");
    TCase *tc = tcase_create("tiny");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_hooks_record_rows_and_rounds);
    tcase_add_test(tc, test_oracles);
    tcase_add_test(tc, test_gate_run_suites);
    tcase_add_test(tc, test_gate_run_pair_without_markov);
    tcase_add_test(tc, test_gate_run_fault);
    tcase_add_test(tc, test_gate_run_tie_fails_hedge_suites);
    tcase_add_test(tc, test_gate_run_engine_error);
    tcase_add_test(tc, test_gate_run_errors);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
