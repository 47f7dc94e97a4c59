/* What the converters share (convert.h): opening the trace and the output. Called by
 * convert_chrome.c and convert_yaml.c; calls nothing of theirs. */
#include "convert.h"

#include <stdio.h>

FILE *conv_begin(struct tool_trace *tr, struct tool_out *o, const char *path, const char *out,
                 const char *syms_opt, const int32_t *tid)
{
    if (tool_trace_open(tr, path, syms_opt, "converting", out == NULL) != EXIT_OK)
        return NULL;
    tr->one = tid != NULL;
    tr->tid = tid ? *tid : 0;
    FILE *f = tool_out_open(o, out);
    if (!f) {
        tool_trace_close(tr);
        return NULL;
    }
    static char obuf[1 << 16]; /* one output at a time */
    if (f != stdout)
        setvbuf(f, obuf, _IOFBF, sizeof obuf);
    return f;
}
