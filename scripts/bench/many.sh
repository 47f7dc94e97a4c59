#!/usr/bin/env bash
# Writes a C program with N instrumented functions (default 20000) on stdout: each a small
# function with an entry and an exit sled; main calls every one once through a table, prints
# the sum, and prints its VmRSS on stderr ("vmrss_kb=N") just before it returns.
set -euo pipefail
n=${1:-20000}
awk -v n="$n" 'BEGIN {
    print "#include <stdio.h>"
    print "#include <stdlib.h>"
    print "#include <string.h>"
    for (i = 0; i < n; i++)
        printf "__attribute__((noinline)) int f%d(int x) { if (x > %d) return x * %d + %d; return x - %d; }\n", i, i % 7, i % 13 + 1, i, i % 5
    printf "int (*volatile tab[])(int) = {"
    for (i = 0; i < n; i++)
        printf "%sf%d", (i ? "," : ""), i
    print "};"
    # main also prints its resident set size (VmRSS) on stderr just before it returns
    print "__attribute__((xray_never_instrument)) static void rss(void) { char l[256]; FILE *f = fopen(\"/proc/self/status\", \"r\"); while (f && fgets(l, sizeof l, f)) if (!strncmp(l, \"VmRSS:\", 6)) fprintf(stderr, \"vmrss_kb=%ld\\n\", strtol(l + 6, 0, 10)); if (f) fclose(f); }"
    printf "int main(void) { long s = 0; for (int i = 0; i < %d; i++) s += tab[i](i & 15); printf(\"%%ld\\n\", s); rss(); return 0; }\n", n
}'
