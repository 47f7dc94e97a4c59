/* The types of a trace's functions' parameters (argtypes.c): for each object the sidecar names,
 * its DWARF (dwarfargs.h), opened the first time one of its functions is asked for, and used only
 * when the file is still the one traced (its GNU build id is the sidecar's). */
#ifndef SLEDTRACE_TOOLS_ARGTYPES_H
#define SLEDTRACE_TOOLS_ARGTYPES_H

#include "dwarfargs.h"
#include "stf.h"

struct tool_argtypes;

/* For the trace whose names are syms (may be NULL: no types). NULL only out of memory. */
struct tool_argtypes *tool_argtypes_new(const struct stf_syms *syms);
void tool_argtypes_free(struct tool_argtypes *a);
/* Function id's parameters, or NULL (no DWARF, another build, not found). */
const struct tool_dw_func *tool_argtypes_func(struct tool_argtypes *a, uint32_t id);
/* What was found, for a summary line: "names and types from DWARF (N objects)", or why some
 * object had none ("prog: no DWARF (built without -g?)"); NULL when no function was asked. */
const char *tool_argtypes_note(const struct tool_argtypes *a);

#endif
