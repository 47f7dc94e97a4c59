#!/usr/bin/env python3
"""A large build.ninja for the ninja workload of scripts/bench/profile.sh (`ninja -t commands
all` prints every command of it). Usage: gen_ninja.py EDGES > build.ninja. EDGES compile edges
(depfiles, per-edge variables, an order-only dependency on a generated header) in 100 libraries,
one archive per library, and 20 programs each linking 10 of the libraries."""
import sys


def main():
    edges = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    libs = 100
    per = max(1, edges // libs)
    w = sys.stdout.write
    w("ninja_required_version = 1.5\n")
    w("cflags = -O2 -Wall -Iinclude -DNDEBUG\n")
    w("rule cc\n  command = cc -MMD -MF $out.d $cflags $extra -c $in -o $out\n"
      "  depfile = $out.d\n  deps = gcc\n  description = CC $out\n")
    w("rule ar\n  command = ar rcs $out $in\n  description = AR $out\n")
    w("rule link\n  command = cc $ldflags -o $out $in $libs\n  description = LINK $out\n")
    w("rule gen\n  command = python3 gen.py $in > $out\n  description = GEN $out\n"
      "  restat = 1\n")
    for lib in range(libs):
        w(f"build gen/lib{lib}/config.h: gen src/lib{lib}/config.h.in\n")
        objs = []
        for i in range(per):
            o = f"obj/lib{lib}/file{i}.o"
            objs.append(o)
            w(f"build {o}: cc src/lib{lib}/file{i}.c | gen/lib{lib}/config.h || "
              f"gen/lib{lib}/config.h\n  extra = -DLIB={lib} -DFILE={i}\n")
        w(f"build lib/lib{lib}.a: ar {' '.join(objs)}\n")
    for b in range(20):
        deps = " ".join(f"lib/lib{(b * 7 + k) % libs}.a" for k in range(10))
        w(f"build bin/prog{b}: link obj/main{b}.o {deps}\n  libs = -lm\n")
        w(f"build obj/main{b}.o: cc src/main{b}.c\n")
    w("build all: phony " + " ".join(f"bin/prog{b}" for b in range(20)) + "\n")
    w("default all\n")


if __name__ == "__main__":
    main()
