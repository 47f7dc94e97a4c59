/* Output files of the sledtrace command: written whole or not at all.
 *
 * A command that writes a file (convert -o, flamegraph -o, graph -o) writes it as a temporary
 * file beside it (same directory, so rename(2) is atomic), and renames it into place only when
 * the whole output is written; on any error the temporary file is removed and a file that was
 * already there is left as it was. The new file gets the mode fopen(3) would give it (an
 * existing file's mode, else 0666 minus the umask); a symlink is followed. A destination that
 * exists and is not a regular file (/dev/stdout, a FIFO) is written in place, as fopen would.
 * Without a path, or with "-", the output is stdout. */
#ifndef SLEDTRACE_TOOLS_OUTPUT_H
#define SLEDTRACE_TOOLS_OUTPUT_H

#include <limits.h>
#include <stdio.h>

struct tool_out {
    FILE *f;
    const char *path; /* NULL: stdout */
    int direct;       /* not a regular file: written in place */
    char tmp[PATH_MAX], real[PATH_MAX];
};

/* A command run with one of the process's standard streams (fd 1 or 2) elsewhere: stdio is
 * flushed, fd made a copy of to, and the saved original returned (-1, nothing changed, on
 * failure); tool_unredirect flushes again and puts the original back. */
int tool_redirect(int fd, int to);
void tool_unredirect(int fd, int saved);

/* Opens the output (o->f); NULL after one error message. */
FILE *tool_out_open(struct tool_out *o, const char *path);
/* Finishes it: with complete != 0 flushes it and renames it into place; else (or if that
 * fails) removes it. Returns 0, or 1 after one error message (the tools' EXIT_BAD_TRACE). */
int tool_out_close(struct tool_out *o, int complete);

#endif
