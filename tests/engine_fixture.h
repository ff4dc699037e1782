// tests/engine_fixture.h: shared by the engine round tests: the tiny fixture set's models and
// workloads (the committed fixtures/tiny, or the folder in $SG_TEST_TINY_FIXTURE when set; when
// neither is there, generated into a temporary folder with the deterministic generator), engine
// runs over a workload, and the reference decode of a request.
#ifndef SG_TESTS_ENGINE_FIXTURE_H
#define SG_TESTS_ENGINE_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/counters.h"
#include "common/error.h"
#include "common/model.h"
#include "common/workload.h"
#include "engine/cpu_backend.h"
#include "engine/engine.h"
#include "fixtures/catalog.h"
#include "fixtures/generator.h"
#include "ref/generate.h"
#include "testutil.h"

typedef struct {
    fixture_info fx;
    target_model target;
    drafter_model dspark;
    drafter_model dflash;
} ef_models;

static inline void ef_open_set(ef_models *m, const char *set) {
    memset(m, 0, sizeof *m);
    const char *over = strcmp(set, "tiny") == 0 ? getenv("SG_TEST_TINY_FIXTURE") : NULL;
    if (over && *over) set = over;
    if (fixture_open(set, &m->fx) != SG_OK) {
        static char dir[512];
        tu_tmpdir(dir, sizeof dir);
        ck_assert_msg(fixture_make(set, 1, dir) == SG_OK, "%s", sg_error());
        ck_assert_msg(fixture_open(dir, &m->fx) == SG_OK, "%s", sg_error());
    }
    ck_assert_msg(target_model_load(m->fx.target, &m->target) == SG_OK, "%s", sg_error());
    ck_assert_msg(drafter_model_load(m->fx.draft, &m->target, &m->dspark) == SG_OK, "%s",
                  sg_error());
    char path[FIXTURE_PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/dflash", m->fx.dir);
    ck_assert_msg(drafter_model_load(path, &m->target, &m->dflash) == SG_OK, "%s", sg_error());
}

static inline void ef_close(ef_models *m) {
    drafter_model_free(&m->dflash);
    drafter_model_free(&m->dspark);
    target_model_free(&m->target);
}

// For the tests that run the program: the tiny set's folder and a fresh temporary folder.
static inline void ef_cli_setup(char *fixture_dir, size_t dir_size, char *tmp, size_t tmp_size) {
    ef_models m;
    ef_open_set(&m, "tiny");
    snprintf(fixture_dir, dir_size, "%s", m.fx.dir);
    ef_close(&m);
    tu_tmpdir(tmp, tmp_size);
}

static inline void ef_workload(const ef_models *m, const char *suite, sg_workload *w) {
    ck_assert_msg(fixture_load_workload(&m->fx, suite, m->target.cfg.vocab_size, w) == SG_OK,
                  "%s", sg_error());
}

// Options of the hedge gate: H_cap 8, P = 0,1,2, C = 3.
static inline engine_options ef_hedged(void) {
    engine_options o;
    engine_options_default(&o);
    o.hedge_cap = 8;
    o.positions[0] = 0;
    o.positions[1] = 1;
    o.positions[2] = 2;
    o.n_positions = 3;
    return o;
}

static inline engine_options ef_unhedged(void) {
    engine_options o;
    engine_options_default(&o);
    return o;
}

// Runs requests [from, to) of w (to = -1: all) through a fresh engine on be (a single request of
// a larger workload arrives at step 0); the pools must be whole afterwards. The caller destroys
// the engine.
static inline sg_engine *ef_run_on(const ef_models *m, const sg_backend *be,
                                   const drafter_model *d, const engine_options *o,
                                   const sg_workload *w, int from, int to) {
    sg_engine *e = NULL;
    ck_assert_msg(engine_create(be, &m->target, d, o, &e) == SG_OK, "%s", sg_error());
    if (to < 0) to = w->n_requests;
    for (int i = from; i < to; i++) {
        sg_request r = w->requests[i];
        if (to - from == 1 && w->n_requests > 1) r.arrival_step = 0;
        ck_assert_msg(engine_submit(e, &r, NULL) == SG_OK, "%s", sg_error());
    }
    ck_assert_msg(engine_run(e) == SG_OK, "%s", sg_error());
    ck_assert_msg(engine_check_pools(e) == SG_OK, "%s", sg_error());
    return e;
}

// ef_run_on on a fresh CPU backend (*be); the caller destroys the engine and the backend.
static inline sg_engine *ef_run(const ef_models *m, const drafter_model *d,
                                const engine_options *o, const sg_workload *w, int from, int to,
                                sg_backend **be) {
    *be = cpu_backend_create();
    return ef_run_on(m, *be, d, o, w, from, to);
}

// What ef_same_results compares beyond every request's status and tokens.
enum {
    EF_DIGESTS = 1,  // the logits and tap digests (bitwise numbers: within one backend only)
    EF_COUNTERS = 2, // the speculation counters
};

// Two runs of one workload agree request by request (what: a flag set of the enum above).
static inline void ef_same_results(const sg_engine *a, const sg_engine *b, int what,
                                   const char *label) {
    ck_assert_int_eq(engine_n_requests(a), engine_n_requests(b));
    for (int i = 0; i < engine_n_requests(a); i++) {
        engine_result x, y;
        engine_result_of(a, i, &x);
        engine_result_of(b, i, &y);
        ck_assert_msg(x.status == y.status, "%s: request %d status differs", label, i);
        size_t n = (size_t)x.n_generated;
        ck_assert_msg(x.n_generated == y.n_generated &&
                          memcmp(x.tokens, y.tokens, sizeof(int) * n) == 0,
                      "%s: request %d tokens differ", label, i);
        if (what & EF_DIGESTS) {
            ck_assert_msg(memcmp(x.digest_logits, y.digest_logits, 8 * n) == 0,
                          "%s: request %d logits digests differ", label, i);
            ck_assert_msg(memcmp(x.digest_taps, y.digest_taps, 8 * n) == 0,
                          "%s: request %d tap digests differ", label, i);
        }
        if (what & EF_COUNTERS) {
            char ca[512], cb[512];
            counters_format(&x.counters, ca, sizeof ca);
            counters_format(&y.counters, cb, sizeof cb);
            ck_assert_msg(counters_equal(&x.counters, &y.counters),
                          "%s: request %d counters differ:\n %s\n %s", label, i, ca, cb);
        }
    }
}

static inline void ef_free(sg_engine *e, sg_backend *be) {
    engine_destroy(e);
    be->destroy(be);
}

// The reference decode of a request (taps of the drafter's layers when d is given).
static inline void ef_ref(const ef_models *m, const drafter_model *d, const sg_request *r,
                          ref_output *out) {
    ref_gen_options g = {.max_new_tokens = r->max_new_tokens, .stop = r->stop,
                         .n_stop = r->n_stop, .ignore_eos = r->ignore_eos,
                         .temperature = r->temperature, .seed = r->seed,
                         .tap_ids = d ? d->cfg.target_layer_ids : NULL,
                         .n_taps = d ? d->cfg.n_taps : 0};
    ck_assert_msg(ref_generate(&m->target, r->prompt, r->n_prompt, &g, out) == SG_OK, "%s",
                  sg_error());
}

#endif
