// cli/generate.c: `sparkgate generate`: decode one prompt with the reference decoder and, with a
// drafter, replay it through the speculation simulator and print the counters it would produce;
// with --backend cpu or cuda, decode it with the hedged speculative decoder (engine/) on that
// backend instead and print the engine's tokens and counters.
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/options.h"
#include "common/error.h"
#include "common/model.h"
#include "common/workload.h"
#include "engine/engine.h"
#include "fixtures/catalog.h"
#include "ref/generate.h"
#include "ref/simulate.h"

static const char *generate_flags =
    "--fixture --target --draft --no-draft --prompt --max-new --backend --temperature --seed "
    "--stop --ignore-eos --hedge-cap --hedge-positions --chains --conf-threshold --block-layout "
    "--page-size --pool-pages --max-spans --max-rows --hedge-auto --graphs --json";

static void generate_help(void) {
    printf("usage: sparkgate generate [options]\n\n"
           "Decodes a prompt (token ids) with the plain CPU reference decoder and prints the token ids.\n"
           "With a drafter (the fixture's DSpark drafter by default) it then replays the request as the\n"
           "hedged speculative decoder would and prints the counters (design.md §5) it must produce.\n"
           "With --backend cpu|cuda the hedged speculative decoder itself decodes it on that backend\n"
           "and prints its own counters.\n\n"
           "  --fixture NAME|DIR     fixture set (default: %s)\n"
           "  --target DIR           target checkpoint folder (alone: no drafter)\n"
           "  --draft DIR            drafter checkpoint folder; --no-draft: none\n"
           "  --prompt 1,2,3         prompt token ids (default: the fixture's first sequential request)\n"
           "  --max-new N            tokens to generate [32]\n"
           "  --backend ref|cpu|cuda ref: the reference decoder (+ simulated counters); cpu, cuda:\n"
           "                         the engine on that backend (its own counters) [ref]\n"
           "  --temperature T --seed N   seeded sampling (T > 0) instead of greedy\n"
           "  --stop 1,2             stop ids (kept in the output); EOS from the config unless --ignore-eos\n"
           "  --hedge-cap N          hedging on when N > 0 [0]\n"
           "  --hedge-positions P    branch positions, strictly increasing [0]\n"
           "  --chains C             ladders per hedged round [number of positions]\n"
           "  --conf-threshold X     confidence truncation of drafts [off]\n"
           "  --block-layout L       anchor-first | anchor-drop [from the drafter config]\n"
           "  --page-size N --pool-pages N --max-spans N --max-rows N --hedge-auto --graphs on|off\n"
           "                         engine options (with --backend cpu|cuda; see sparkgate run --help)\n"
           "  --json FILE            also write the result as JSON\n",
           SG_DEFAULT_FIXTURE);
}

typedef struct {
    target_model target;
    drafter_model draft;
    int has_draft;
    int *prompt;
    int n_prompt;
} generate_inputs;

// Loads the models named by the flags (or the fixture's) and picks the prompt.
static int load_inputs(const cli_options *o, generate_inputs *in) {
    fixture_info fx;
    const char *target_dir = o->target, *draft_dir = o->draft;
    int need_fixture = !target_dir || o->n_prompt == 0;
    if (need_fixture) SG_TRY(fixture_open(o->fixture, &fx));
    if (!target_dir) {
        target_dir = fx.target;
        if (!draft_dir && !o->no_draft) draft_dir = fx.draft;
    }
    SG_TRY(target_model_load(target_dir, &in->target));
    if (draft_dir && !o->no_draft) {
        SG_TRY(drafter_model_load(draft_dir, &in->target, &in->draft));
        if (o->has_block_layout) in->draft.cfg.layout = o->layout;
        in->has_draft = 1;
    }
    if (o->n_prompt > 0) {
        in->n_prompt = o->n_prompt;
        in->prompt = sg_calloc((size_t)o->n_prompt, sizeof(int));
        memcpy(in->prompt, o->prompt, (size_t)o->n_prompt * sizeof(int));
        return SG_OK;
    }
    sg_workload w;
    SG_TRY(fixture_load_workload(&fx, "sequential", in->target.cfg.vocab_size, &w));
    in->n_prompt = w.requests[0].n_prompt;
    in->prompt = sg_calloc((size_t)in->n_prompt, sizeof(int));
    memcpy(in->prompt, w.requests[0].prompt, (size_t)in->n_prompt * sizeof(int));
    workload_free(&w);
    return SG_OK;
}

static void print_ids(const char *label, const int *ids, int n) {
    printf("%s", label);
    for (int i = 0; i < n; i++) printf("%s%d", i ? "," : "", ids[i]);
    printf("\n");
}

static cJSON *ids_json(const int *ids, int n) { return cJSON_CreateIntArray(ids, n); }

static int write_json(const char *path, cJSON *root) {
    char *text = cJSON_Print(root);
    FILE *f = fopen(path, "w");
    int ok = f && fputs(text, f) >= 0 && fputc('\n', f) != EOF;
    if (f && fclose(f) != 0) ok = 0;
    free(text);
    return ok ? SG_OK : sg_fail(SG_EXIT_INPUT, "--json %s: cannot write the file", path);
}

static int run_generate(const cli_options *o, generate_inputs *in) {
    SG_TRY(load_inputs(o, in));
    SG_TRY(cli_check_hedge(o, in->has_draft ? &in->draft.cfg : NULL));
    int speculate = in->has_draft && o->temperature == 0;
    ref_gen_options g = {
        .max_new_tokens = o->max_new, .stop = o->stop, .n_stop = o->n_stop,
        .ignore_eos = o->ignore_eos, .temperature = o->temperature, .seed = o->seed,
        .tap_ids = speculate ? in->draft.cfg.target_layer_ids : NULL,
        .n_taps = speculate ? in->draft.cfg.n_taps : 0,
    };
    ref_output out;
    SG_TRY(ref_generate(&in->target, in->prompt, in->n_prompt, &g, &out));
    static const char *reasons[] = {"max_new_tokens", "stop id", "eos"};
    print_ids("prompt: ", in->prompt, in->n_prompt);
    print_ids("tokens: ", out.tokens + out.n_prompt, out.n_generated);
    printf("generated %d tokens, stopped by %s\n", out.n_generated, reasons[out.reason]);

    cJSON *root = cJSON_CreateObject();
    cJSON_AddItemToObject(root, "prompt", ids_json(in->prompt, in->n_prompt));
    cJSON_AddItemToObject(root, "tokens", ids_json(out.tokens + out.n_prompt, out.n_generated));
    cJSON_AddStringToObject(root, "stop_reason", reasons[out.reason]);
    int status = SG_OK;
    if (speculate) {
        ref_sim_options so = {.hedge_cap = o->hedge_cap, .n_positions = o->n_hedge_positions,
                              .chains = o->chains < 0 ? o->n_hedge_positions : o->chains,
                              .conf_threshold = o->conf_threshold, .layout = -1};
        memcpy(so.positions, o->hedge_positions, sizeof(int) * (size_t)o->n_hedge_positions);
        ref_sim_result sim;
        status = ref_simulate(&in->target, &in->draft, &out, o->max_new, 0.0, &so, &sim);
        if (status == SG_OK) {
            char line[512];
            counters_format(&sim.counters, line, sizeof line);
            printf("simulated speculation (%s, hedge cap %d): %s\n",
                   block_layout_name(in->draft.cfg.layout), o->hedge_cap, line);
            cJSON_AddItemToObject(root, "counters", counters_to_json(&sim.counters));
            ref_sim_result_free(&sim);
        }
    }
    if (status == SG_OK && o->json) status = write_json(o->json, root);
    cJSON_Delete(root);
    ref_output_free(&out);
    return status;
}

// --backend cpu|cuda: the engine decodes the prompt; its own counters are printed.
static int run_engine(const cli_options *o, engine_options *eo, generate_inputs *in) {
    SG_TRY(load_inputs(o, in));
    SG_TRY(cli_engine_options(o, in->has_draft ? &in->draft.cfg : NULL, eo));
    sg_backend *be = NULL;
    SG_TRY(cli_engine_backend(o->backend, &be));
    sg_engine *e = NULL;
    int status = engine_create(be, &in->target, in->has_draft ? &in->draft : NULL, eo, &e);
    sg_request r = {.id = "prompt", .prompt = in->prompt, .n_prompt = in->n_prompt,
                    .max_new_tokens = o->max_new, .stop = (int *)o->stop, .n_stop = o->n_stop,
                    .temperature = o->temperature, .seed = o->seed, .ignore_eos = o->ignore_eos};
    if (status == SG_OK) status = engine_submit(e, &r, NULL);
    if (status == SG_OK) status = engine_run(e);
    engine_result res;
    if (status == SG_OK) {
        engine_result_of(e, 0, &res);
        if (res.status == ENGINE_REJECTED) status = sg_fail(SG_EXIT_USAGE, "%s", res.reason);
    }
    if (status == SG_OK) {
        static const char *reasons[] = {"none", "max_new_tokens", "stop id", "eos"};
        char line[512];
        counters_format(&res.counters, line, sizeof line);
        print_ids("prompt: ", in->prompt, in->n_prompt);
        print_ids("tokens: ", res.tokens, res.n_generated);
        printf("generated %d tokens, stopped by %s\n", res.n_generated, reasons[res.stop]);
        printf("engine (%s backend, %s, hedge cap %d): %s\n", be->name,
               in->has_draft ? block_layout_name(eo->layout < 0 ? in->draft.cfg.layout
                                                                : (block_layout)eo->layout)
                             : "no drafter",
               eo->hedge_cap, line);
        cJSON *root = cJSON_CreateObject();
        cJSON_AddItemToObject(root, "prompt", ids_json(in->prompt, in->n_prompt));
        cJSON_AddItemToObject(root, "tokens", ids_json(res.tokens, res.n_generated));
        cJSON_AddStringToObject(root, "stop_reason", reasons[res.stop]);
        cJSON_AddItemToObject(root, "counters", counters_to_json(&res.counters));
        char hex[17];
        snprintf(hex, sizeof hex, "%016llx", (unsigned long long)engine_digest_summary(&res));
        cJSON_AddStringToObject(root, "digest", hex);
        if (o->json) status = write_json(o->json, root);
        cJSON_Delete(root);
    }
    engine_destroy(e);
    be->destroy(be);
    return status;
}

int cmd_generate(int argc, char **argv) {
    cli_options o;
    if (cli_parse_options(argc, argv, generate_flags, &o) != SG_OK) return cli_report(SG_EXIT_USAGE);
    if (o.help) {
        generate_help();
        return SG_OK;
    }
    if (o.n_positional) return cli_report(sg_fail(SG_EXIT_USAGE, "unexpected argument \"%s\"", o.positional[0]));
    if (o.draft && o.no_draft) return cli_report(sg_fail(SG_EXIT_USAGE, "--draft and --no-draft exclude each other"));
    int use_engine = o.backend && strcmp(o.backend, "ref") != 0;
    if (use_engine && strcmp(o.backend, "cpu") != 0 && strcmp(o.backend, "cuda") != 0)
        return cli_report(sg_fail(SG_EXIT_USAGE, "--backend %s: generate decodes with ref, cpu or "
                                                 "cuda", o.backend));
    if (!use_engine && cli_engine_flag_given(&o))
        return cli_report(sg_fail(SG_EXIT_USAGE, "%s is an engine option: it needs --backend cpu "
                                                 "or cuda (the reference decoder has no pages or "
                                                 "verify batch)", cli_engine_flag_given(&o)));
    engine_options eo;
    engine_options_default(&eo);
    generate_inputs in = {0};
    int status = use_engine ? run_engine(&o, &eo, &in) : run_generate(&o, &in);
    free(in.prompt);
    if (in.has_draft) drafter_model_free(&in.draft);
    if (in.target.layers) target_model_free(&in.target);
    return cli_report(status);
}
