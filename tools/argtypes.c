/* Parameters' types per trace (argtypes.h). Objects are numbered by the sidecar (object 0 the
 * executable); each gets one struct tool_dw, opened lazily from the path the sidecar recorded.
 * The file there may have been rebuilt since: when the sidecar recorded a build id, the file's
 * (read with the patcher's map reader, which the instrumented objects have) must be the same,
 * else the object gets no types (and the note says so), as --syms refuses another build. An
 * object whose file is no longer there gets none and no word (the trace outlived it). One
 * thread at a time (dwarfargs.h). */
#include "argtypes.h"

#include "stp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct obj {
    bool tried;
    bool gone;          /* no file at the path: nothing to say about it */
    struct tool_dw *dw; /* NULL: none */
    char why[320];
};

struct tool_argtypes {
    const struct stf_syms *syms;
    struct obj *o;
    size_t no;
    size_t with, asked;
    char note[512];
};

struct tool_argtypes *tool_argtypes_new(const struct stf_syms *syms)
{
    struct tool_argtypes *a = calloc(1, sizeof *a);
    if (a)
        a->syms = syms;
    return a;
}

void tool_argtypes_free(struct tool_argtypes *a)
{
    if (!a)
        return;
    for (size_t i = 0; i < a->no; i++)
        tool_dw_close(a->o[i].dw);
    free(a->o);
    free(a);
}

/* Whether the file at path is the build the sidecar recorded for objid (no id recorded: yes). */
static bool same_build(const struct stf_syms *s, uint32_t objid, const char *path, char *why,
                       size_t len)
{
    const char *want = stf_syms_build_id(s, objid);
    if (!want)
        return true;
    struct stp_object *obj;
    if (stp_object_open(path, 0, &obj) != 0) {
        snprintf(why, len, "%s: not readable as the traced object", path);
        return false;
    }
    const uint8_t *id;
    size_t n = stp_object_build_id(obj, &id);
    char have[2 * STP_BUILD_ID_MAX + 1] = "";
    for (size_t i = 0; i < n; i++)
        snprintf(have + 2 * i, 3, "%02x", id[i]);
    stp_object_close(obj);
    if (strcmp(have, want) != 0) {
        snprintf(why, len, "%s: another build than the one traced (build id)", path);
        return false;
    }
    return true;
}

static struct obj *object(struct tool_argtypes *a, uint32_t objid)
{
    if (objid >= a->no) {
        size_t n = objid + 1;
        struct obj *g = realloc(a->o, n * sizeof *g);
        if (!g)
            return NULL;
        memset(g + a->no, 0, (n - a->no) * sizeof *g);
        a->o = g;
        a->no = n;
    }
    struct obj *o = &a->o[objid];
    if (o->tried)
        return o;
    o->tried = true;
    const char *path = stf_syms_object(a->syms, objid);
    char err[256];
    struct stat sb;
    if (!path || stat(path, &sb) != 0)
        o->gone = true; /* moved or removed since: the user knows; the note says nothing */
    else if (!S_ISREG(sb.st_mode))
        snprintf(o->why, sizeof o->why, "%s: not a file", path);
    else if (same_build(a->syms, objid, path, o->why, sizeof o->why) &&
             tool_dw_open(&o->dw, path, err, sizeof err) != 0)
        snprintf(o->why, sizeof o->why, "%s", err);
    if (o->dw && tool_dw_why(o->dw)) {
        snprintf(o->why, sizeof o->why, "%s: %s", path, tool_dw_why(o->dw));
        tool_dw_close(o->dw);
        o->dw = NULL;
    }
    a->with += o->dw != NULL;
    return o;
}

const struct tool_dw_func *tool_argtypes_func(struct tool_argtypes *a, uint32_t id)
{
    if (!a || !a->syms)
        return NULL;
    uint32_t objid, fid;
    stf_syms_split(a->syms, id, &objid, &fid);
    struct obj *o = object(a, objid);
    a->asked++;
    if (!o || !o->dw)
        return NULL;
    /* the sidecar's addresses are the run-time ones: the file's own are less the load bias */
    uint64_t addr = stf_syms_address(a->syms, objid, fid);
    return addr ? tool_dw_func_at(o->dw, addr - stf_syms_object_bias(a->syms, objid)) : NULL;
}

const char *tool_argtypes_note(const struct tool_argtypes *a)
{
    if (!a || !a->asked)
        return NULL;
    struct tool_argtypes *m = (struct tool_argtypes *)a;
    for (size_t i = 0; i < a->no; i++)
        if (a->o[i].tried && !a->o[i].dw && !a->o[i].gone) {
            if (a->with)
                snprintf(m->note, sizeof m->note,
                         "arguments: names and types from DWARF for %zu object%s; as raw "
                         "registers for %s",
                         a->with, a->with == 1 ? "" : "s", a->o[i].why);
            else
                snprintf(m->note, sizeof m->note, "arguments: as raw registers: %s", a->o[i].why);
            return m->note;
        }
    if (!a->with)
        return NULL; /* only objects no longer there */
    snprintf(m->note, sizeof m->note, "arguments: names and types from DWARF (%zu object%s)",
             a->with, a->with == 1 ? "" : "s");
    return m->note;
}
