/* Shared by `sledtrace convert` (chrome, yaml, perfetto) and `sledtrace graph`: output files. The
 * call-stack walker they use is callstack.h's. */
#ifndef SLEDTRACE_TOOLS_CONVERT_H
#define SLEDTRACE_TOOLS_CONVERT_H

#include "common.h"
#include "output.h"

#include <stdio.h>

/* What a converter starts with: the trace opened (progress "converting", none while the output
 * goes to the terminal) and its output (output.h: written whole or not at all) opened with a
 * 64 KiB buffer. NULL, with the error printed and nothing left open, on failure. */
FILE *conv_begin(struct tool_trace *tr, struct tool_out *o, const char *path, const char *out,
                 const char *syms_opt);

/* Formats: convert_chrome.c, convert_yaml.c and convert_perfetto.c. */
int convert_chrome(const char *path, const char *out, const char *syms_opt);
int convert_perfetto(const char *path, const char *out, const char *syms_opt);
int convert_yaml(const char *path, const char *out, const char *syms_opt);

#endif
