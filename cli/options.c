// cli/options.c: shared flag parsing (options.h).
#include "options.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"

static int parse_long(const char *flag, const char *text, long lo, long hi, long *out) {
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || end == text || *end || v < lo || v > hi)
        return sg_fail(SG_EXIT_USAGE, "%s: expected an integer in [%ld, %ld], got \"%s\"", flag, lo,
                       hi, text);
    *out = v;
    return SG_OK;
}

static int parse_double(const char *flag, const char *text, double lo, double hi, double *out) {
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (errno || end == text || *end || !(v >= lo && v <= hi))
        return sg_fail(SG_EXIT_USAGE, "%s: expected a number in [%g, %g], got \"%s\"", flag, lo, hi,
                       text);
    *out = v;
    return SG_OK;
}

static int parse_list(const char *flag, const char *text, int *ids, int capacity, int *n) {
    *n = 0;
    const char *p = text;
    while (*p) {
        char item[32];
        size_t len = strcspn(p, ",");
        if (len == 0 || len >= sizeof item || *n == capacity)
            return sg_fail(SG_EXIT_USAGE, "%s: expected comma-separated ids (at most %d), got \"%s\"",
                           flag, capacity, text);
        memcpy(item, p, len);
        item[len] = 0;
        long v = 0;
        SG_TRY(parse_long(flag, item, 0, 1000000000, &v));
        ids[(*n)++] = (int)v;
        p += len;
        if (*p == ',') p++;
    }
    if (*n == 0) return sg_fail(SG_EXIT_USAGE, "%s: empty list", flag);
    return SG_OK;
}

// Is `flag` in the space-separated list `accepted`?
static int accepts(const char *accepted, const char *flag) {
    size_t n = strlen(flag);
    for (const char *p = strstr(accepted, flag); p; p = strstr(p + 1, flag))
        if ((p == accepted || p[-1] == ' ') && (p[n] == ' ' || p[n] == 0)) return 1;
    return 0;
}

int cli_parse_options(int argc, char **argv, const char *accepted, cli_options *o) {
    memset(o, 0, sizeof *o);
    o->max_new = 32;
    o->chains = -1;
    o->hedge_positions[0] = 0;
    o->n_hedge_positions = 1;
    o->graphs = 1;
    for (int i = 0; i < argc; i++) {
        const char *flag = argv[i];
        if (strcmp(flag, "--help") == 0 || strcmp(flag, "-h") == 0) {
            o->help = 1;
            continue;
        }
        if (flag[0] != '-') {
            if (o->n_positional == 4) return sg_fail(SG_EXIT_USAGE, "too many arguments: \"%s\"", flag);
            o->positional[o->n_positional++] = flag;
            continue;
        }
        if (!accepts(accepted, flag))
            return sg_fail(SG_EXIT_USAGE, "unknown option %s (see --help)", flag);
        // Flags without a value.
        if (strcmp(flag, "--no-draft") == 0) { o->no_draft = 1; continue; }
        if (strcmp(flag, "--ignore-eos") == 0) { o->ignore_eos = 1; continue; }
        if (strcmp(flag, "--hedge-auto") == 0) { o->hedge_auto = 1; continue; }
        if (strcmp(flag, "--json") == 0 && (i + 1 == argc || argv[i + 1][0] == '-') &&
            accepts(accepted, "[json-optional]")) {
            o->json_stdout = 1;
            continue;
        }
        if (i + 1 == argc) return sg_fail(SG_EXIT_USAGE, "%s needs a value", flag);
        const char *value = argv[++i];
        long v = 0;
        double d;
        if (strcmp(flag, "--fixture") == 0) o->fixture = value;
        else if (strcmp(flag, "--target") == 0) o->target = value;
        else if (strcmp(flag, "--draft") == 0) o->draft = value;
        else if (strcmp(flag, "--backend") == 0) o->backend = value;
        else if (strcmp(flag, "--json") == 0) o->json = value;
        else if (strcmp(flag, "--junit") == 0) o->junit = value;
        else if (strcmp(flag, "--set") == 0) o->set = value;
        else if (strcmp(flag, "--out") == 0) o->out = value;
        else if (strcmp(flag, "--manifest") == 0) o->manifest = value;
        else if (strcmp(flag, "--prompt") == 0) SG_TRY(parse_list(flag, value, o->prompt, CLI_MAX_LIST, &o->n_prompt));
        else if (strcmp(flag, "--stop") == 0) SG_TRY(parse_list(flag, value, o->stop, CLI_MAX_LIST, &o->n_stop));
        else if (strcmp(flag, "--hedge-positions") == 0)
            SG_TRY(parse_list(flag, value, o->hedge_positions, SG_MAX_BLOCK, &o->n_hedge_positions));
        else if (strcmp(flag, "--max-new") == 0) { SG_TRY(parse_long(flag, value, 1, 1 << 24, &v)); o->max_new = (int)v; }
        else if (strcmp(flag, "--seed") == 0) { SG_TRY(parse_long(flag, value, 0, 0x7fffffffL, &v)); o->seed = (uint64_t)v; o->has_seed = 1; }
        else if (strcmp(flag, "--hedge-cap") == 0) { SG_TRY(parse_long(flag, value, 0, 64, &v)); o->hedge_cap = (int)v; }
        else if (strcmp(flag, "--chains") == 0) { SG_TRY(parse_long(flag, value, 0, 16, &v)); o->chains = (int)v; }
        else if (strcmp(flag, "--page-size") == 0) { SG_TRY(parse_long(flag, value, 1, 4096, &v)); o->page_size = (int)v; }
        else if (strcmp(flag, "--pool-pages") == 0) { SG_TRY(parse_long(flag, value, 1, 1L << 24, &v)); o->pool_pages = (int)v; }
        else if (strcmp(flag, "--max-spans") == 0) { SG_TRY(parse_long(flag, value, 1, 1 << 20, &v)); o->max_spans = (int)v; }
        else if (strcmp(flag, "--max-rows") == 0) { SG_TRY(parse_long(flag, value, 1, 1 << 20, &v)); o->max_rows = (int)v; }
        else if (strcmp(flag, "--temperature") == 0) { SG_TRY(parse_double(flag, value, 0, 1e6, &d)); o->temperature = d; }
        else if (strcmp(flag, "--conf-threshold") == 0) { SG_TRY(parse_double(flag, value, 0, 1, &d)); o->conf_threshold = (float)d; }
        else if (strcmp(flag, "--graphs") == 0) {
            if (strcmp(value, "on") != 0 && strcmp(value, "off") != 0)
                return sg_fail(SG_EXIT_USAGE, "--graphs: expected on or off, got \"%s\"", value);
            o->graphs = strcmp(value, "on") == 0;
        } else if (strcmp(flag, "--block-layout") == 0) {
            if (block_layout_parse(value, &o->layout))
                return sg_fail(SG_EXIT_USAGE, "--block-layout: expected anchor-first or anchor-drop, got \"%s\"", value);
            o->has_block_layout = 1;
        } else
            return sg_fail(SG_EXIT_USAGE, "unknown option %s (see --help)", flag);
    }
    return SG_OK;
}

int cli_check_hedge(const cli_options *o, const drafter_config *draft) {
    int n = o->n_hedge_positions;
    for (int i = 1; i < n; i++)
        if (o->hedge_positions[i] <= o->hedge_positions[i - 1])
            return sg_fail(SG_EXIT_USAGE, "--hedge-positions must be strictly increasing (got %d after %d)",
                           o->hedge_positions[i], o->hedge_positions[i - 1]);
    if (n > 16) return sg_fail(SG_EXIT_USAGE, "--hedge-positions: at most 16 positions");
    if (o->chains > n)
        return sg_fail(SG_EXIT_USAGE, "--chains %d exceeds the %d branch positions", o->chains, n);
    if (o->hedge_cap == 0) return SG_OK;
    if (!draft || draft->markov_rank <= 0)
        return sg_fail(SG_EXIT_USAGE, "hedging (--hedge-cap %d) needs a drafter with a Markov head "
                       "(markov_rank > 0); this drafter has none: drop the hedge options or use a DSpark drafter",
                       o->hedge_cap);
    int drafts = drafter_num_drafts(draft);
    if (o->hedge_positions[n - 1] >= drafts)
        return sg_fail(SG_EXIT_USAGE, "--hedge-positions: position %d is not below the %d draft positions",
                       o->hedge_positions[n - 1], drafts);
    return SG_OK;
}

const char *cli_engine_flag_given(const cli_options *o) {
    return o->page_size    ? "--page-size"
           : o->pool_pages ? "--pool-pages"
           : o->max_spans  ? "--max-spans"
           : o->max_rows   ? "--max-rows"
           : o->hedge_auto ? "--hedge-auto"
                           : NULL;
}
