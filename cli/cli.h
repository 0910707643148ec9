/* cli.h -- the subcommands of build/hipath, one file each; they assemble
 * the stack through stack/ (stack.h). */
#ifndef HIPATH_CLI_H
#define HIPATH_CLI_H

#include "stack/stack.h"

int cmd_generate(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_detokenize(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_bounds(int argc, char **argv);
int cmd_amdahl(int argc, char **argv);
int cmd_device(int argc, char **argv);
int cmd_lab(int argc, char **argv);
int cmd_validate(int argc, char **argv);

/* --workshop (cli/workshop.c): a random teacher's key (32 hex digits,
 * cap >= 33; 0 or -1), and what the room needs to know, printed: the
 * join URLs (the LAN's addresses when host is 0.0.0.0), the code, the
 * teacher's URL with its key. */
int  cli_workshop_key(char *out, int cap);
void cli_workshop_print(const char *host, int port, const char *code, const char *teacher_key, const web_opts *wo);

#endif
