// cli/run.c: `sparkgate run WORKLOAD`: decodes every request of a workload with the hedged
// speculative decoder (engine/) on a backend and prints, per request, its status (ok or rejected
// with the reason; no verdict: the gates compare), tokens, counters and a digest summary; --json
// writes everything, with the per-position digests. Also owns the mapping of the shared flags
// (cli_options) onto engine options and the engine backend, used by `generate --backend cpu|cuda`
// and `gate` too. Graph replay (--graphs, engine_options.graphs) is on unless --graphs off; it
// changes no bit, only launch overhead, and works where the backend can capture (cuda); --json
// records its statistics under "graphs".
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/options.h"
#include "common/error.h"
#include "common/model.h"
#include "common/workload.h"
#include "engine/cpu_backend.h"
#include "engine/engine.h"
#include "fixtures/catalog.h"
#ifdef SG_HAVE_CUDA
#include "gpu/cuda_backend.h"
#endif

static const char *run_flags =
    "--fixture --target --draft --no-draft --backend --hedge-cap --hedge-positions --chains "
    "--conf-threshold --block-layout --page-size --pool-pages --max-spans --max-rows --hedge-auto "
    "--graphs --json";

int cli_engine_options(const cli_options *c, const drafter_config *draft, engine_options *o) {
    SG_TRY(cli_check_hedge(c, draft));
    if (c->n_hedge_positions > ENGINE_MAX_POSITIONS)
        return sg_fail(SG_EXIT_USAGE, "--hedge-positions: at most %d positions",
                       ENGINE_MAX_POSITIONS);
    o->hedge_cap = c->hedge_cap;
    o->n_positions = c->n_hedge_positions;
    memcpy(o->positions, c->hedge_positions, sizeof(int) * (size_t)c->n_hedge_positions);
    o->chains = c->chains;
    o->conf_threshold = c->conf_threshold;
    o->layout = c->has_block_layout ? (int)c->layout : -1;
    o->page_size = c->page_size;
    o->pool_pages = c->pool_pages;
    o->max_spans = c->max_spans;
    o->max_rows = c->max_rows;
    o->hedge_auto = c->hedge_auto;
    o->graphs = c->graphs;
    return SG_OK;
}

int cli_engine_backend(const char *name, sg_backend **out) {
    *out = NULL;
    if (!name || strcmp(name, "cpu") == 0) {
        *out = cpu_backend_create();
        return SG_OK;
    }
    if (strcmp(name, "cuda") == 0) {
#ifdef SG_HAVE_CUDA
        int st = cuda_backend_create(out);
        return st == SG_OK ? SG_OK : sg_fail_context(st, "--backend cuda");
#else
        return sg_fail(SG_EXIT_NO_GPU, "--backend cuda: this build has no CUDA backend (nvcc was "
                                       "not found when it was configured)");
#endif
    }
    return sg_fail(SG_EXIT_USAGE, "--backend %s: the engine runs on cpu or cuda", name);
}

static void run_help(void) {
    printf("usage: sparkgate run WORKLOAD [options]\n\n"
           "Decodes every request of a workload (a suite name of the fixture, e.g. sequential, or a\n"
           "workload .json file) with the hedged speculative decoder and prints, per request, its\n"
           "status (ok, or rejected with the reason), token ids, counters and a digest summary (one\n"
           "64-bit digest over its positions' logits and tap digests). Prompts are token ids.\n\n"
           "  --fixture NAME|DIR     fixture set (default: %s)\n"
           "  --target DIR           target checkpoint folder (alone: no drafter)\n"
           "  --draft DIR            drafter checkpoint folder; --no-draft: plain decoding\n"
           "  --backend cpu|cuda     [cpu]\n"
           "  --hedge-cap N          hedged requests per round, 0 = off, <= 64 [0]\n"
           "  --hedge-positions P    branch positions, strictly increasing, < drafts [0]\n"
           "  --chains C             ladders per hedged request [number of positions]\n"
           "  --hedge-auto           choose C per round by measured tokens/s (needs --hedge-cap)\n"
           "  --conf-threshold X     cut drafts at the first confidence below X [off]\n"
           "  --block-layout L       anchor-first | anchor-drop [from the drafter config]\n"
           "  --page-size N          KV positions per page [16]\n"
           "  --pool-pages N         KV pages in the pool [enough for the batch]\n"
           "  --max-spans N          verify spans per round [256]\n"
           "  --max-rows N           rows per forward [512]\n"
           "  --graphs on|off        replay the engine's kernel sequences as cached CUDA graphs\n"
           "                         (fewer launches; the same bits either way; cuda only) [on]\n"
           "  --json FILE            write everything (with per-position digests) as JSON\n\n"
           "exit status: 0 ok (rejections are reported, not failures), 1 a hard error (NaN/Inf in\n"
           "logits), 2 usage, 3 bad input file or config, 77 no usable CUDA device\n",
           SG_DEFAULT_FIXTURE);
}

typedef struct {
    target_model target;
    drafter_model draft;
    int has_draft;
    sg_workload w;
    int has_w;
    sg_backend *be;
    sg_engine *e;
} run_state;

static int load(const cli_options *o, const char *workload, run_state *s) {
    fixture_info fx;
    const char *target_dir = o->target, *draft_dir = o->draft;
    int is_file = strchr(workload, '/') || strstr(workload, ".json");
    if (!target_dir || !is_file) SG_TRY(fixture_open(o->fixture, &fx));
    if (!target_dir) {
        target_dir = fx.target;
        if (!draft_dir && !o->no_draft) draft_dir = fx.draft;
    }
    SG_TRY(target_model_load(target_dir, &s->target));
    if (draft_dir && !o->no_draft) {
        SG_TRY(drafter_model_load(draft_dir, &s->target, &s->draft));
        s->has_draft = 1;
    }
    int V = s->target.cfg.vocab_size;
    SG_TRY(is_file ? workload_load(workload, V, &s->w) : fixture_load_workload(&fx, workload, V, &s->w));
    s->has_w = 1;
    return SG_OK;
}

static const char *stop_name(engine_stop s) {
    static const char *names[] = {"none", "max_new_tokens", "stop id", "eos"};
    return names[s];
}

static cJSON *u64_array(const uint64_t *v, int n) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < n; i++) {
        char hex[17];
        snprintf(hex, sizeof hex, "%016" PRIx64, v[i]);
        cJSON_AddItemToArray(a, cJSON_CreateString(hex));
    }
    return a;
}

static int report(const cli_options *o, run_state *s) {
    cJSON *root = cJSON_CreateObject(), *list = cJSON_AddArrayToObject(root, "requests");
    for (int i = 0; i < engine_n_requests(s->e); i++) {
        engine_result r;
        engine_result_of(s->e, i, &r);
        const char *id = s->w.requests[i].id;
        cJSON *j = cJSON_CreateObject();
        cJSON_AddItemToArray(list, j);
        cJSON_AddStringToObject(j, "id", id);
        if (r.status == ENGINE_REJECTED) {
            printf("%s: rejected: %s\n", id, r.reason);
            cJSON_AddStringToObject(j, "status", "rejected");
            cJSON_AddStringToObject(j, "reason", r.reason);
            continue;
        }
        char line[512], hex[17];
        counters_format(&r.counters, line, sizeof line);
        snprintf(hex, sizeof hex, "%016" PRIx64, engine_digest_summary(&r));
        printf("%s: ok, %d tokens (stopped by %s), digest %s\n  tokens: ", id, r.n_generated,
               stop_name(r.stop), hex);
        for (int k = 0; k < r.n_generated; k++) printf("%s%d", k ? "," : "", r.tokens[k]);
        printf("\n  %s\n", line);
        cJSON_AddStringToObject(j, "status", "ok");
        cJSON_AddStringToObject(j, "stop_reason", stop_name(r.stop));
        cJSON_AddItemToObject(j, "tokens", cJSON_CreateIntArray(r.tokens, r.n_generated));
        cJSON_AddItemToObject(j, "counters", counters_to_json(&r.counters));
        cJSON_AddStringToObject(j, "digest", hex);
        cJSON_AddItemToObject(j, "digest_logits", u64_array(r.digest_logits, r.n_generated));
        cJSON_AddItemToObject(j, "digest_taps", u64_array(r.digest_taps, r.n_generated));
        cJSON_AddNumberToObject(j, "admitted_step", r.admitted_step);
    }
    spec_counters total;
    engine_counters_total(s->e, &total);
    char line[512];
    counters_format(&total, line, sizeof line);
    printf("total over %d requests in %d steps: %s\n", engine_n_requests(s->e),
           engine_steps(s->e), line);
    cJSON_AddItemToObject(root, "total", counters_to_json(&total));
    cJSON_AddNumberToObject(root, "steps", engine_steps(s->e));
    op_graphs_stats g;
    int graphs = engine_graph_stats(s->e, &g);
    if (graphs)
        printf("graphs: %" PRId64 " captured, %" PRId64 " launches running %" PRId64 " of %" PRId64
               " ops, %" PRId64 " eager flushes, %" PRId64 " evictions\n",
               g.captures, g.launches, g.graph_ops, g.ops, g.eager_flushes, g.evictions);
    cJSON *jg = cJSON_AddObjectToObject(root, "graphs");
    cJSON_AddBoolToObject(jg, "on", graphs);
    cJSON_AddNumberToObject(jg, "ops", (double)g.ops);
    cJSON_AddNumberToObject(jg, "captured", (double)g.captures);
    cJSON_AddNumberToObject(jg, "launches", (double)g.launches);
    cJSON_AddNumberToObject(jg, "graph_ops", (double)g.graph_ops);
    cJSON_AddNumberToObject(jg, "eager_flushes", (double)g.eager_flushes);
    cJSON_AddNumberToObject(jg, "evictions", (double)g.evictions);
    int status = SG_OK;
    if (o->json) {
        char *text = cJSON_Print(root);
        FILE *f = fopen(o->json, "w");
        int ok = f && fputs(text, f) >= 0 && fputc('\n', f) != EOF;
        if (f && fclose(f) != 0) ok = 0;
        free(text);
        if (!ok) status = sg_fail(SG_EXIT_INPUT, "--json %s: cannot write the file", o->json);
    }
    cJSON_Delete(root);
    return status;
}

static int run_workload(const cli_options *o, engine_options *eo, run_state *s) {
    SG_TRY(load(o, o->positional[0], s));
    SG_TRY(cli_engine_options(o, s->has_draft ? &s->draft.cfg : NULL, eo));
    SG_TRY(cli_engine_backend(o->backend, &s->be));
    SG_TRY(engine_create(s->be, &s->target, s->has_draft ? &s->draft : NULL, eo, &s->e));
    for (int i = 0; i < s->w.n_requests; i++) SG_TRY(engine_submit(s->e, &s->w.requests[i], NULL));
    SG_TRY(engine_run(s->e));
    SG_TRY(engine_check_pools(s->e));
    return report(o, s);
}

int cmd_run(int argc, char **argv) {
    cli_options o;
    if (cli_parse_options(argc, argv, run_flags, &o) != SG_OK) return cli_report(SG_EXIT_USAGE);
    if (o.help) {
        run_help();
        return SG_OK;
    }
    if (o.n_positional != 1)
        return cli_report(sg_fail(SG_EXIT_USAGE, "run needs exactly one WORKLOAD (a suite name "
                                                 "or a .json file); see --help"));
    if (o.draft && o.no_draft) return cli_report(sg_fail(SG_EXIT_USAGE, "--draft and --no-draft exclude each other"));
    engine_options eo;
    engine_options_default(&eo);
    run_state s = {0};
    int status = run_workload(&o, &eo, &s);
    engine_destroy(s.e);
    if (s.be) s.be->destroy(s.be);
    if (s.has_w) workload_free(&s.w);
    if (s.has_draft) drafter_model_free(&s.draft);
    if (s.target.layers) target_model_free(&s.target);
    return cli_report(status);
}
