// cli/options.h: the shared flags of design.md §8, parsed once for every subcommand.
//
// Contract: cli_parse_options fills cli_options from argv (after the subcommand name); an unknown
// flag, a missing or malformed value, or a flag the subcommand does not take is SG_EXIT_USAGE with
// a message that names the flag. Token lists are comma-separated ids ("1,2,3").
#ifndef SG_CLI_OPTIONS_H
#define SG_CLI_OPTIONS_H

#include <stdint.h>

#include "common/config.h"

#define CLI_MAX_LIST 1024

typedef struct {
    const char *fixture; // NAME or DIR
    const char *target;
    const char *draft;
    int no_draft;
    int prompt[CLI_MAX_LIST];
    int n_prompt; // 0: the first request of the fixture's sequential workload
    int max_new;
    const char *backend;
    double temperature;
    uint64_t seed;
    int stop[CLI_MAX_LIST];
    int n_stop;
    int ignore_eos;
    int hedge_cap;
    int hedge_positions[SG_MAX_BLOCK];
    int n_hedge_positions;
    int chains; // -1: the number of positions
    float conf_threshold;
    int has_block_layout;
    block_layout layout;
    // engine options (0: the engine's default; see engine/engine.h)
    int page_size;
    int pool_pages;
    int max_spans;
    int max_rows;
    int hedge_auto;
    int graphs; // engine graph replay (engine_options.graphs): 1 unless --graphs off
    const char *json;
    const char *junit;
    int help;
    // fixture subcommand
    const char *set;
    const char *out;
    const char *manifest; // fixture make: also write the sha256 manifest of what was made
    int json_stdout; // `fixture stats --json` without a file: JSON on stdout
    int has_seed;
    const char *positional[4];
    int n_positional;
} cli_options;

// Flags a subcommand accepts, as a space-separated list ("--fixture --prompt ..."); the token
// "[json-optional]" lets --json stand without a value (JSON on stdout).
int cli_parse_options(int argc, char **argv, const char *accepted, cli_options *o);
// Checks the hedge options against each other and the drafter (exit 2 with a message).
int cli_check_hedge(const cli_options *o, const drafter_config *draft);
// The first engine-only flag given (--page-size, --pool-pages, --max-spans, --max-rows,
// --hedge-auto), or NULL: for subcommands that take them only with an engine backend.
const char *cli_engine_flag_given(const cli_options *o);

#endif
