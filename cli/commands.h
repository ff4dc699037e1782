// cli/commands.h: the subcommands of the sparkgate program. Each takes the arguments after its
// name and returns the process exit status (design.md §8: 0 ok, 1 failed check, 2 usage, 3 bad
// input, 77 no usable GPU), having printed any error to stderr.
#ifndef SG_CLI_COMMANDS_H
#define SG_CLI_COMMANDS_H

#include "cli/options.h"
#include "engine/engine.h"

int cmd_generate(int argc, char **argv);
int cmd_fixture(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_gate(int argc, char **argv);
int cmd_ops(int argc, char **argv);
int cmd_bench(int argc, char **argv);

// Engine options and backend (cli/run.c): the options shared by `run` and `generate --backend
// cpu|cuda`, the backend by `gate` too. The shared hedge and engine flags (hedge cap, positions,
// chains, confidence threshold, block layout, page size, pool pages, max spans, max rows, hedge
// auto) into o, checked against the drafter (exit 2 with a message).
int cli_engine_options(const cli_options *c, const drafter_config *draft, engine_options *o);
// The engine backend named by --backend (NULL: cpu); cuda is SG_EXIT_NO_GPU with a message when
// there is no usable CUDA device or the build has no CUDA backend.
int cli_engine_backend(const char *name, sg_backend **out);

// Prints "sparkgate: <message>" for the current error and returns status.
int cli_report(int status);

#endif
