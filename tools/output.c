/* Output files written whole or not at all: see output.h. */
#include "output.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"

int tool_redirect(int fd, int to)
{
    fflush(stdout);
    fflush(stderr);
    int saved = dup(fd);
    if (saved >= 0 && dup2(to, fd) < 0) {
        close(saved);
        saved = -1;
    }
    return saved;
}

void tool_unredirect(int fd, int saved)
{
    if (saved < 0)
        return;
    fflush(stdout);
    fflush(stderr);
    dup2(saved, fd);
    close(saved);
}

FILE *tool_out_open(struct tool_out *o, const char *path)
{
    memset(o, 0, sizeof *o);
    if (!path || strcmp(path, "-") == 0) {
        o->f = stdout;
        return o->f;
    }
    /* A destination that is not a regular file (a device such as /dev/stdout, a FIFO, a
     * socket; also through a symlink) is written directly, as fopen would: there is nothing to
     * keep whole, and a rename would replace the special file. A symlink to a regular file is
     * followed: the new file replaces its target, not the link. */
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        o->f = fopen(path, "w");
        if (!o->f)
            tool_err("%s: %s", path, strerror(errno));
        o->direct = 1;
        o->path = path;
        return o->f;
    }
    if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode)) {
        char *real = realpath(path, NULL);
        if (!real || strlen(real) >= sizeof o->real) {
            tool_err("%s: %s", path, real ? "path too long" : strerror(errno));
            free(real);
            return NULL;
        }
        memcpy(o->real, real, strlen(real) + 1);
        free(real);
        path = o->real;
    }
    o->path = path;
    const char *slash = strrchr(path, '/');
    int dirlen = slash ? (int)(slash - path + 1) : 0;
    if ((size_t)snprintf(o->tmp, sizeof o->tmp, "%.*s.%s.sledtrace-XXXXXX", dirlen, path,
                         path + dirlen) >= sizeof o->tmp) {
        tool_err("%s: path too long", path);
        return NULL;
    }
    int fd = mkstemp(o->tmp);
    if (fd < 0) {
        tool_err("%s: cannot write beside it: %s", path, strerror(errno));
        return NULL;
    }
    mode_t mode;
    if (stat(path, &st) == 0) {
        mode = st.st_mode & 07777;
    } else {
        mode_t mask = umask(0);
        umask(mask);
        mode = 0666 & ~mask;
    }
    o->f = fchmod(fd, mode) == 0 ? fdopen(fd, "w") : NULL;
    if (!o->f) {
        tool_err("%s: %s", path, strerror(errno));
        close(fd);
        unlink(o->tmp);
        return NULL;
    }
    return o->f;
}

int tool_out_close(struct tool_out *o, int complete)
{
    if (!o->f)
        return 1;
    errno = 0;
    int bad = ferror(o->f);
    if (o->f == stdout) {
        bad |= fflush(o->f) != 0;
        if (bad)
            tool_err("stdout: %s", errno ? strerror(errno) : "write failed");
        return bad ? 1 : 0;
    }
    bad |= fclose(o->f) != 0;
    o->f = NULL;
    if (o->direct) {
        if (bad)
            tool_err("%s: %s", o->path, errno ? strerror(errno) : "write failed");
        return bad ? 1 : 0;
    }
    if (complete && !bad && rename(o->tmp, o->path) == 0)
        return 0;
    if (complete)
        tool_err("%s: %s; not written", o->path, errno ? strerror(errno) : "write failed");
    unlink(o->tmp);
    return 1;
}
