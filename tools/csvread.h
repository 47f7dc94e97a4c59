/* Reading account's CSV back (diff and account --suggest-exclude summarise traces through it,
 * so that every column has one definition: account's). */
#ifndef SLEDTRACE_TOOLS_CSVREAD_H
#define SLEDTRACE_TOOLS_CSVREAD_H

/* One CSV field at *p, as account quotes them ("..." with "" for a quote), malloc'd (NULL when
 * out of memory); *p moves past the field and its comma. */
char *tool_csv_take(const char **p);

#endif
