// cli/main.c: the sparkgate program: dispatches to a subcommand (commands.h).
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "common/error.h"

typedef struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} command;

static const command commands[] = {
    {"generate", cmd_generate, "decode a prompt with the reference decoder; with a drafter, the simulated speculation counters"},
    {"run", cmd_run, "decode a workload with the hedged speculative decoder (engine); tokens, counters, digests"},
    {"gate", cmd_gate, "the main job: the gate suites, hedged decoder vs the CPU reference; exit 0 when lossless"},
    {"fixture", cmd_fixture, "make fixtures (planted checkpoints) and print their statistics"},
    {"bench", cmd_bench, "decode speed against the memory roofline: tokens/s, phases, floors, break-even hedge rates"},
    {"ops", cmd_ops, "kernel bring-up: every CUDA op against its CPU twin (errors, invariance, graphs, perf)"},
};

static void usage(FILE *out) {
    fprintf(out,
            "usage: sparkgate <command> [options]   (sparkgate <command> --help for its options)\n\n"
            "sparkgate checks that DSpark hedged speculative decoding is lossless: a plain CPU reference\n"
            "decoder is the oracle. Prompts and outputs are token ids (there is no tokenizer).\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\nexit status: 0 ok, 1 a gate or check failed, 2 usage, 3 bad input file or config,\n"
                 "77 no usable CUDA device\n");
}

int cli_report(int status) {
    if (status != SG_OK) fprintf(stderr, "sparkgate: %s\n", sg_error());
    return status;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return SG_EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return SG_OK;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(argv[1], commands[i].name) == 0) return commands[i].run(argc - 2, argv + 2);
    fprintf(stderr, "sparkgate: unknown command \"%s\"\n\n", argv[1]);
    usage(stderr);
    return SG_EXIT_USAGE;
}
