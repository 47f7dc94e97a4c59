/* seek-trace OUT.fdr [calib]: writes the seek tests' trace (seekgen.c) and its sidecar, for the
 * Python module's test of calls(start=, end=). */
#include "seekgen.h"

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc < 2 || seekgen_write(argv[1], argc > 2 && strcmp(argv[2], "calib") == 0) != 0)
        return 1;
    char syms[4096];
    snprintf(syms, sizeof syms, "%.*s.syms", (int)(strlen(argv[1]) - 4), argv[1]);
    FILE *f = fopen(syms, "w");
    if (!f || fputs(SEEKGEN_SYMS, f) < 0 || fclose(f) != 0)
        return 1;
    return 0;
}
