// cli/fixture.c: `sparkgate fixture make` (write a planted fixture set) and `sparkgate fixture
// stats` (measure a set with the reference decoder and check its bands).
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/options.h"
#include "common/error.h"
#include "fixtures/catalog.h"
#include "fixtures/generator.h"
#include "fixtures/stats.h"

static void fixture_help(void) {
    printf("usage: sparkgate fixture make --set tiny|small|qwen3-4b [--seed N] --out DIR [--manifest FILE]\n"
           "       sparkgate fixture stats [--fixture NAME|DIR] [--json [FILE]]\n\n"
           "make   writes a fixture set: checkpoints in the real formats (config.json + safetensors)\n"
           "       with planted structure, fixture.json and workload files. Deterministic: the same\n"
           "       set and seed give byte-identical files. qwen3-4b is the full Qwen3-4B geometry\n"
           "       (about 9 GB, for benchmarks on the GPU machine; never committed). --manifest also\n"
           "       writes the files' sha256 (how fixtures/small.sha256 is updated after a deliberate\n"
           "       generator change: --set small --out build/fixtures/small --manifest fixtures/small.sha256).\n"
           "stats  measures a set with the reference decoder and the speculation simulator and checks\n"
           "       the bands a fixture must meet (exit 1 when one is missed). Without --fixture: every\n"
           "       set that exists (tiny, and small once built). --json alone prints JSON on stdout.\n");
}

static int fixture_make_command(const cli_options *o) {
    if (!o->set || !o->out)
        return sg_fail(SG_EXIT_USAGE, "fixture make needs --set NAME and --out DIR (see --help)");
    uint64_t seed = o->has_seed ? o->seed : FIXTURE_DEFAULT_SEED;
    SG_TRY(fixture_make(o->set, seed, o->out));
    printf("wrote fixture set %s (seed %llu) to %s\n", o->set, (unsigned long long)seed, o->out);
    if (o->manifest) {
        SG_TRY(fixture_manifest_write(o->out, o->manifest));
        printf("wrote the sha256 manifest %s\n", o->manifest);
    }
    return SG_OK;
}

static int stats_one(const char *name_or_dir, cJSON *all, int *bands_failed) {
    fixture_info fx;
    SG_TRY(fixture_open(name_or_dir, &fx));
    fixture_stats s;
    fprintf(stderr, "measuring fixture %s ...\n", fx.name);
    SG_TRY(fixture_stats_measure(&fx, stderr, &s));
    if (all)
        cJSON_AddItemToArray(all, fixture_stats_to_json(&s));
    else
        fixture_stats_print(&s, stdout);
    if (fixture_stats_check(&s) != SG_OK) {
        fprintf(stderr, "sparkgate: %s\n", sg_error());
        *bands_failed = 1;
    }
    return SG_OK;
}

static int fixture_stats_command(const cli_options *o) {
    cJSON *all = (o->json || o->json_stdout) ? cJSON_CreateArray() : NULL;
    int bands_failed = 0, status = SG_OK;
    if (o->fixture) {
        status = stats_one(o->fixture, all, &bands_failed);
    } else {
        static const char *sets[] = {"tiny", "small"};
        for (int i = 0; i < 2 && !status; i++) {
            fixture_info probe;
            if (i > 0 && fixture_open(sets[i], &probe) != SG_OK) continue; // small not built yet
            status = stats_one(sets[i], all, &bands_failed);
        }
    }
    if (!status && all) {
        char *text = cJSON_Print(all);
        FILE *f = o->json ? fopen(o->json, "w") : stdout;
        if (!f || fprintf(f, "%s\n", text) < 0) status = sg_fail(SG_EXIT_INPUT, "--json %s: cannot write", o->json);
        if (f && f != stdout) fclose(f);
        free(text);
    }
    cJSON_Delete(all);
    if (!status && bands_failed) return SG_EXIT_FAIL;
    return status;
}

int cmd_fixture(int argc, char **argv) {
    cli_options o;
    if (cli_parse_options(argc, argv, "--set --seed --out --manifest --fixture --json [json-optional]", &o))
        return cli_report(SG_EXIT_USAGE);
    if (o.help || o.n_positional == 0) {
        fixture_help();
        return o.help ? SG_OK : SG_EXIT_USAGE;
    }
    if (o.n_positional > 1) return cli_report(sg_fail(SG_EXIT_USAGE, "unexpected argument \"%s\"", o.positional[1]));
    if (strcmp(o.positional[0], "make") == 0) return cli_report(fixture_make_command(&o));
    if (strcmp(o.positional[0], "stats") == 0) {
        int status = fixture_stats_command(&o);
        return status == SG_EXIT_FAIL ? status : cli_report(status);
    }
    return cli_report(sg_fail(SG_EXIT_USAGE, "fixture: unknown action \"%s\" (make or stats)", o.positional[0]));
}
