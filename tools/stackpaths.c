/* Stacks by name (stackpaths.h). A list is built once per trace: the path string of every node
 * with a weight, sorted, equal paths coalesced; lookups are binary searches. Memory: the paths
 * (distinct stacks x depth x name length), never the trace. */
#include "stackpaths.h"

#include <stdlib.h>
#include <string.h>

char *sp_path_of(const struct cs_tree *tr, char **names, uint32_t node)
{
    size_t len = 0;
    for (uint32_t k = node; k; k = tr->n[k].parent)
        len += strlen(names[k]) + 1;
    char *s = malloc(len ? len : 1);
    if (!s)
        return NULL;
    size_t pos = len ? len - 1 : 0;
    s[pos] = '\0';
    for (uint32_t k = node; k; k = tr->n[k].parent) {
        size_t n = strlen(names[k]);
        pos -= n;
        memcpy(s + pos, names[k], n);
        if (pos)
            s[--pos] = ';';
    }
    return s;
}

static int cmp_path(const void *pa, const void *pb)
{
    return strcmp(((const struct sp_path *)pa)->path, ((const struct sp_path *)pb)->path);
}

int sp_list_of(const struct cs_tree *tr, char **names, bool by_count, uint64_t freq,
               struct sp_list *out)
{
    out->p = calloc(tr->nn ? tr->nn : 1, sizeof *out->p);
    out->n = 0;
    if (!out->p) {
        tool_err("out of memory");
        return -1;
    }
    for (size_t i = 1; i < tr->nn; i++) {
        const struct cs_node *n = &tr->n[i];
        uint64_t w = cs_node_weight(n, by_count, freq);
        if (n->calls == 0 || w == 0)
            continue;
        char *p = sp_path_of(tr, names, (uint32_t)i);
        if (!p) {
            tool_err("out of memory");
            sp_list_free(out);
            return -1;
        }
        out->p[out->n++] = (struct sp_path){.path = p, .w = w};
    }
    qsort(out->p, out->n, sizeof *out->p, cmp_path);
    size_t k = 0;
    for (size_t i = 0; i < out->n; i++) {
        if (k && strcmp(out->p[k - 1].path, out->p[i].path) == 0) {
            out->p[k - 1].w += out->p[i].w;
            free(out->p[i].path);
        } else {
            out->p[k++] = out->p[i];
        }
    }
    out->n = k;
    return 0;
}

int sp_load(const char *trace, const char *syms_opt, bool by_count, struct sp_list *out)
{
    struct cs_tree tree = {0};
    struct callstack cs = {0};
    struct stf_syms *syms = NULL;
    uint64_t freq = 0;
    out->p = NULL;
    out->n = 0;
    int status = cs_tree_load(trace, syms_opt, NULL, &tree, &cs, &syms, &freq);
    if (status == EXIT_OK) {
        char **names = cs_tree_names(&tree, syms);
        if (!names) {
            tool_err("out of memory");
            status = EXIT_BAD_TRACE;
        } else if (sp_list_of(&tree, names, by_count, freq, out) != 0) {
            status = EXIT_BAD_TRACE;
        }
        cs_names_free(names, tree.nn);
    }
    cs_tree_free(&tree);
    cs_free(&cs);
    stf_syms_free(syms);
    return status;
}

uint64_t sp_weight(const struct sp_list *l, const char *path)
{
    size_t lo = 0, hi = l->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(l->p[mid].path, path);
        if (c == 0)
            return l->p[mid].w;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return 0;
}

void sp_list_free(struct sp_list *l)
{
    for (size_t i = 0; l->p && i < l->n; i++)
        free(l->p[i].path);
    free(l->p);
    l->p = NULL;
    l->n = 0;
}
