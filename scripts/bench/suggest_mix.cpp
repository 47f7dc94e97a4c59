// suggest_mix.cpp - the second program of scripts/bench/suggest.sh: C++ of an ordinary shape,
// where the calls that cost more to trace than they do are not all the program's own.
//
// Each round sorts records with a comparator (std::sort's template code is instrumented too:
// its helpers are tiny and called millions of times), hashes strings one character at a time,
// moves points with small vector functions, goes through a table by accessors, and runs a
// checksum loop that does real work (no calls). argv[1]: rounds (default 200). Prints one
// checksum, the same on every run.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#define KEEP __attribute__((noinline))

namespace geo
{
struct Vec {
    double x, y;
};
KEEP Vec add(Vec a, Vec b)
{
    return {a.x + b.x, a.y + b.y};
}
KEEP Vec scale(Vec a, double k)
{
    return {a.x * k, a.y * k};
}
KEEP double dot(const Vec &a, const Vec &b)
{
    return a.x * b.x + a.y * b.y;
}
} // namespace geo

struct Rec {
    long key;
    int id;
};

KEEP bool by_key(const Rec &a, const Rec &b)
{
    return a.key < b.key;
}

class Table
{
  public:
    explicit Table(size_t n) : v_(n) {}
    KEEP long get(size_t i) const { return v_[i]; }
    KEEP void set(size_t i, long x) { v_[i] = x; }
    size_t size() const { return v_.size(); }

  private:
    std::vector<long> v_;
};

KEEP unsigned hash_step(unsigned h, char c)
{
    return (h ^ (unsigned char)c) * 16777619u;
}

KEEP unsigned hash_str(const std::string &s)
{
    unsigned h = 2166136261u;
    for (char c : s)
        h = hash_step(h, c);
    return h;
}

// Moves every point one step: a few small calls per point.
KEEP double simulate(std::vector<geo::Vec> &ps, const geo::Vec &v)
{
    double e = 0;
    for (auto &p : ps) {
        p = geo::add(p, geo::scale(v, 0.01));
        e += geo::dot(p, p);
    }
    return e;
}

// Real work and no calls: a loop over the table's memory.
KEEP unsigned long checksum(const std::vector<long> &v, int passes)
{
    unsigned long s = 0;
    for (int k = 0; k < passes; k++)
        for (long x : v)
            s = s * 31 + (unsigned long)x + (unsigned long)k;
    return s;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 200;
    std::vector<Rec> recs(2000);
    std::vector<std::string> words;
    for (int i = 0; i < 200; i++)
        words.push_back("word-" + std::to_string(i * 7919) + "-" + std::to_string(i));
    std::vector<geo::Vec> ps(500, geo::Vec{1, 2});
    Table t(1000);
    std::vector<long> raw(4000, 3);
    unsigned long sum = 0;
    unsigned seed = 12345;
    for (int r = 0; r < rounds; r++) {
        for (size_t i = 0; i < recs.size(); i++) {
            seed = seed * 1103515245u + 12345u;
            recs[i] = Rec{(long)(seed >> 8) % 100000, (int)i};
        }
        std::sort(recs.begin(), recs.end(), by_key);
        sum += (unsigned long)recs[recs.size() / 2].key;
        for (const auto &w : words)
            sum += hash_str(w);
        sum += (unsigned long)simulate(ps, geo::Vec{0.5, -0.25});
        for (size_t i = 0; i < t.size(); i++)
            t.set(i, t.get((i * 7) % t.size()) + (long)i);
        sum += (unsigned long)t.get((size_t)r % t.size());
        sum += checksum(raw, 4);
    }
    std::printf("checksum %lu\n", sum);
    return 0;
}
