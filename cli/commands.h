// cli/commands.h: the subcommands of the sparkgate program. Each takes the arguments after its
// name and returns the process exit status (design.md §8: 0 ok, 1 failed check, 2 usage, 3 bad
// input, 77 no usable GPU), having printed any error to stderr.
#ifndef SG_CLI_COMMANDS_H
#define SG_CLI_COMMANDS_H

int cmd_generate(int argc, char **argv);
int cmd_fixture(int argc, char **argv);

// Prints "sparkgate: <message>" for the current error and returns status.
int cli_report(int status);

#endif
