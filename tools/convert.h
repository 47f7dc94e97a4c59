/* Shared by `sledtrace convert` (chrome, yaml) and `sledtrace graph`: output files. The
 * call-stack walker they use is callstack.h's. */
#ifndef SLEDTRACE_TOOLS_CONVERT_H
#define SLEDTRACE_TOOLS_CONVERT_H

#include "common.h"

#include <stdio.h>

/* Open OUT for writing (stdout when NULL). Prints the error and returns NULL on failure. */
FILE *conv_open_out(const char *out);
/* What a converter starts with: the trace opened (progress "converting", none while the output
 * goes to the terminal) and its output opened with a 64 KiB buffer. NULL, with the error
 * printed and nothing left open, on failure. */
FILE *conv_begin(struct tool_trace *tr, const char *path, const char *out, const char *syms_opt);
/* Flush and close (stdout is only flushed). Returns EXIT_OK or EXIT_BAD_TRACE (error printed). */
int conv_close_out(FILE *f, const char *out);

/* Formats: convert_chrome.c and convert_yaml.c. */
int convert_chrome(const char *path, const char *out, const char *syms_opt);
int convert_yaml(const char *path, const char *out, const char *syms_opt);

#endif
