/* Stacks by name: the aggregated stacks of one trace (callstack.h's tree) as "root;...;leaf"
 * strings with a weight each, sorted and coalesced, so that two traces - of one build or of two -
 * compare stack by stack (stack --diff, flamegraph --diff). Node ids differ between traces;
 * names do not. */
#ifndef SLEDTRACE_TOOLS_STACKPATHS_H
#define SLEDTRACE_TOOLS_STACKPATHS_H

#include "callstack.h"

struct sp_path {
    char *path;
    uint64_t w; /* self time in ns, or closed calls with by_count */
};

struct sp_list {
    struct sp_path *p; /* sorted by path (strcmp), each path once */
    size_t n;
};

/* "root;...;node" of a tree node (not the root), malloc'd; NULL on allocation failure. */
char *sp_path_of(const struct cs_tree *tr, char **names, uint32_t node);
/* The tree's stacks with a non-zero weight; nodes whose paths coincide (names shared by several
 * functions) add up. 0, or -1 on allocation failure (message printed). */
int sp_list_of(const struct cs_tree *tr, char **names, bool by_count, uint64_t freq,
               struct sp_list *out);
/* Load TRACE (names from syms_opt as --syms, NULL: its sidecar) and list its stacks: an exit
 * code, errors printed. */
int sp_load(const char *trace, const char *syms_opt, bool by_count, struct sp_list *out);
/* The weight of path in l, 0 if absent. */
uint64_t sp_weight(const struct sp_list *l, const char *path);
void sp_list_free(struct sp_list *l);

#endif
