/* Shared by `sledtrace convert` (chrome, yaml) and `sledtrace graph`: output files. The
 * call-stack walker they use is callstack.h's. */
#ifndef SLEDTRACE_TOOLS_CONVERT_H
#define SLEDTRACE_TOOLS_CONVERT_H

#include "common.h"

#include <stdio.h>

/* Open OUT for writing (stdout when NULL). Prints the error and returns NULL on failure. */
FILE *conv_open_out(const char *out);
/* Flush and close (stdout is only flushed). Returns EXIT_OK or EXIT_BAD_TRACE (error printed). */
int conv_close_out(FILE *f, const char *out);

/* Formats: convert_chrome.c and convert_yaml.c. */
int convert_chrome(const char *path, const char *out, const char *syms_opt);
int convert_yaml(const char *path, const char *out, const char *syms_opt);

#endif
