/* Forced into each file of libsledtrace-format.so (format/meson.build: -include), never included
 * otherwise. Everything is compiled with -fvisibility=hidden; seen first under this pragma, the
 * functions stf.h declares get default visibility, so their definitions in reader.c, cursor.c
 * and syms.c are exported, and nothing else is. stf.map then lists what the library exports
 * (stf_*), so that a helper given external linkage by mistake stays local. The static library
 * the runtime and the tools link is compiled without this file: nothing of it is exported from
 * the runtime. */
#ifndef SLEDTRACE_STF_EXPORT_H
#define SLEDTRACE_STF_EXPORT_H

#pragma GCC visibility push(default)
#include "stf.h"
#pragma GCC visibility pop

#endif
