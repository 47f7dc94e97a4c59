/* C++ names in the tools' outputs (names.c): --names short|full|mangled. */
#ifndef SLEDTRACE_TOOLS_NAMES_H
#define SLEDTRACE_TOOLS_NAMES_H

enum { TOOL_NAMES_SHORT = 0, TOOL_NAMES_FULL = 1, TOOL_NAMES_MANGLED = 2 };

/* Sets the mode from "short", "full" or "mangled": 0, or -1 for another word. */
int tool_names_mode(const char *v);
/* The mode unless --names set one (convert --format yaml: full, as llvm-xray writes). */
void tool_names_default(int mode);
/* stf_syms_rename's callback: a mangled C++ name as the mode shows it (malloc'd), or NULL to
 * keep the name (not C++, mangled mode, or not demangled). */
char *tool_demangle(const char *name, void *arg);
/* The short form of a demangled name (malloc'd; NULL when out of memory). */
char *tool_short_name(const char *demangled);

#endif
