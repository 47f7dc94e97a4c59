/* Reading account's CSV back: csvread.h. */
#include "csvread.h"

#include <stdlib.h>
#include <string.h>

char *tool_csv_take(const char **p)
{
    const char *s = *p;
    size_t n = 0;
    char *out = malloc(strlen(s) + 1);
    if (!out)
        return NULL;
    if (*s == '"') {
        for (s++; *s; s++) {
            if (*s == '"' && s[1] == '"') {
                out[n++] = '"';
                s++;
            } else if (*s == '"') {
                s++;
                break;
            } else {
                out[n++] = *s;
            }
        }
    } else {
        while (*s && *s != ',' && *s != '\n')
            out[n++] = *s++;
    }
    out[n] = '\0';
    if (*s == ',')
        s++;
    *p = s;
    return out;
}
