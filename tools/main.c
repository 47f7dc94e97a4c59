/* sledtrace: command-line front end. Dispatches to one subcommand per file (cmd_*.c). */
#include "common.h"
#include "callstack.h" /* cmd_replay, cmd_stack, cmd_flamegraph */

#include <stdio.h>
#include <string.h>

int cmd_graph(int argc, char **argv);   /* cmd_graph.c */
int cmd_diff(int argc, char **argv);    /* cmd_diff.c */
int cmd_order(int argc, char **argv);   /* cmd_order.c */
int cmd_top(int argc, char **argv);     /* cmd_top.c */
int cmd_slowest(int argc, char **argv); /* cmd_slowest.c */

#include "version.h" /* SLEDTRACE_BUILD_VERSION: generated, with the commit */

static void usage(FILE *out)
{
    fputs("usage: sledtrace COMMAND [ARGS]\n"
          "\n"
          "commands:\n"
          "  run [-o DIR] [--filter P] [--policy P] [--report] [...] -- PROG [ARGS]\n"
          "                                  run PROG with the tracing runtime preloaded\n"
          "  live [OPTIONS] -- PROG [ARGS]   run PROG, then print its call tree (replay)\n"
          "  info [TRACE]                    summarize a trace (objects and build ids too)\n"
          "  dump [TRACE] [--verify]         print every record / check the format strictly\n"
          "  account [TRACE] [--format text|csv|json] [--sort KEY] [--top N] [--per-thread]\n"
          "          [--by-arg N] [FILTERS] [--syms FILE]\n"
          "                                  per-function call statistics\n"
          "  account [TRACE] --suggest-exclude[=N] [-o FILE]\n"
          "                                  functions cheaper to leave out than to trace\n"
          "  convert [TRACE] --format fdr -o OUT\n"
          "                                  one block per thread (safe for llvm-xray 14)\n"
          "  convert [TRACE] --format chrome|perfetto|speedscope|yaml [FILTERS] [-o OUT]\n"
          "                                  timeline JSON, Perfetto, speedscope, or YAML\n"
          "  diff OLD NEW | --old A... --new B... [--sort KEY] [--min-change PCT]\n"
          "                                  compare functions across traces (or builds)\n"
          "  graph [TRACE] [-o OUT] [FILTERS]\n"
          "                                  call graph as Graphviz DOT\n"
          "  replay [TRACE] [--order entry|exit] [FILTERS] [--no-args]\n"
          "                                  per-thread call tree with times and durations\n"
          "  stack [TRACE] [--by time|count] [--format text|folded] [--diff OLD] [FILTERS]\n"
          "                                  aggregated call stacks (folded for flame graphs)\n"
          "  flamegraph [TRACE] -o OUT.svg [--by time|count] [--diff OLD] [FILTERS]\n"
          "                                  interactive SVG flame graph\n"
          "  order TRACE... [-o FILE] [--pages BINARY]\n"
          "                                  first-call order as a linker symbol ordering file\n"
          "  slowest [TRACE] FUNC [-n N] [--tid T] [--from T] [--to T] [-o OUT.json]\n"
          "                                  the N slowest calls of FUNC, and their timeline\n"
          "  top [TRACE] [--interval MS] [--rows N] [--once]\n"
          "                                  follow a trace being written: top functions\n"
          "\n"
          "FILTERS: --from TIME --to TIME --tid N --filter P --exclude P --max-depth N\n"
          "         --min-duration TIME (the calls shown: sledtrace(1), \"Call filters\").\n"
          "TRACE, when not given: the newest sledtrace.*.fdr in $SLEDTRACE_OUTPUT, else here.\n"
          "Times are wall time; a function's self time leaves out its traced callees and the\n"
          "'[wait] NAME' calls (blocking libc calls: locks, condition variables, sleeps,\n"
          "reads...) and includes the rest (its code, untraced callees, preemption).\n"
          "'[sledtrace] ...' calls are the tracer's own time.\n"
          "\n"
          "Every command that takes --syms FILE (a symbols file, or the traced binary) also\n"
          "takes --force-syms: use a binary whose build id is not the trace's.\n"
          "'sledtrace COMMAND --help' describes each command. Exit status: 0 success,\n"
          "1 unreadable or malformed input, 2 usage error (run: the program's status).\n",
          out);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        usage(stdout);
        return EXIT_OK;
    }
    if (strcmp(cmd, "--version") == 0) {
        printf("sledtrace %s\n", SLEDTRACE_BUILD_VERSION);
        return EXIT_OK;
    }
    if (strcmp(cmd, "run") == 0)
        return cmd_run(argc - 1, argv + 1);
    if (strcmp(cmd, "live") == 0)
        return cmd_live(argc - 1, argv + 1);
    if (strcmp(cmd, "info") == 0)
        return cmd_info(argc - 1, argv + 1);
    if (strcmp(cmd, "dump") == 0)
        return cmd_dump(argc - 1, argv + 1);
    if (strcmp(cmd, "account") == 0)
        return cmd_account(argc - 1, argv + 1);
    if (strcmp(cmd, "convert") == 0)
        return cmd_convert(argc - 1, argv + 1);
    if (strcmp(cmd, "graph") == 0)
        return cmd_graph(argc - 1, argv + 1);
    if (strcmp(cmd, "diff") == 0)
        return cmd_diff(argc - 1, argv + 1);
    if (strcmp(cmd, "order") == 0)
        return cmd_order(argc - 1, argv + 1);
    if (strcmp(cmd, "slowest") == 0)
        return cmd_slowest(argc - 1, argv + 1);
    if (strcmp(cmd, "top") == 0)
        return cmd_top(argc - 1, argv + 1);
    if (strcmp(cmd, "replay") == 0)
        return cmd_replay(argc - 1, argv + 1);
    if (strcmp(cmd, "stack") == 0)
        return cmd_stack(argc - 1, argv + 1);
    if (strcmp(cmd, "flamegraph") == 0)
        return cmd_flamegraph(argc - 1, argv + 1);
    tool_err("unknown command '%s' (try 'sledtrace --help')", cmd);
    return EXIT_USAGE;
}
