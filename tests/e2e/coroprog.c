/* ucontext coroutines (issue 23, item 12): three contexts besides main's, with known calls.
 *
 *   scheduler() runs ROUNDS + 1 rounds of resume(&a_uc) and resume(&b_uc) (swapcontext from
 *   main's context into each coroutine's).
 *   Coroutine A (makecontext, no argument, uc_link = main): co_a() does ROUNDS times a_work()
 *   then a_yield() (swapcontext back to main), then returns: glibc resumes uc_link.
 *   Coroutine B (makecontext with 2 arguments, 11 and 22, checked): co_b(x, y) calls
 *   b_inner() ROUNDS times; b_inner calls b_leaf(), yields to main, calls b_leaf() again.
 *   Then detour() saves main's context with getcontext, jumps to coroutine C with setcontext;
 *   C's function (not traced) calls co_c() -> c_work() and jumps back with setcontext to what
 *   getcontext saved, so detour() goes on and calls d_work().
 *
 * The call tree per context, which a tool that nests every record of the thread in one stack
 * gets wrong: main's context holds scheduler -> resume (12 calls) and detour -> d_work; A's
 * co_a -> a_work, co_a -> a_yield; B's co_b -> b_inner -> b_leaf; C's co_c -> c_work. No
 * function of one context is ever a callee of another's. Counts as progs.h says. */
#include <stdio.h>
#include <stdlib.h>
#include <ucontext.h>

#include "progs.h"

enum { ROUNDS = 5, STACK = 64 * 1024 };

static ucontext_t main_uc, a_uc, b_uc, c_uc, back_uc;
static char a_stack[STACK], b_stack[STACK], c_stack[STACK];

KEEP void a_work(void)
{
    BARRIER();
}

KEEP void a_yield(void)
{
    if (swapcontext(&a_uc, &main_uc) != 0)
        exit(4);
}

KEEP void co_a(void)
{
    for (int i = 0; i < ROUNDS; i++) {
        a_work();
        a_yield();
    }
    BARRIER(); /* no tail call: every call is a child of its caller */
}

KEEP void b_leaf(void)
{
    BARRIER();
}

KEEP void b_inner(void)
{
    b_leaf();
    if (swapcontext(&b_uc, &main_uc) != 0)
        exit(4);
    b_leaf();
    BARRIER();
}

KEEP void co_b(int x, int y)
{
    if (x != 11 || y != 22)
        exit(3); /* makecontext's arguments did not arrive */
    for (int i = 0; i < ROUNDS; i++)
        b_inner();
    BARRIER();
}

KEEP void resume(ucontext_t *uc)
{
    if (swapcontext(&main_uc, uc) != 0)
        exit(4);
}

KEEP void scheduler(void)
{
    for (int r = 0; r <= ROUNDS; r++) {
        resume(&a_uc);
        resume(&b_uc);
    }
    BARRIER();
}

KEEP void c_work(void)
{
    BARRIER();
}

KEEP void co_c(void)
{
    c_work();
    BARRIER();
}

__attribute__((xray_never_instrument)) static void c_main(void)
{
    co_c();
    setcontext(&back_uc);
    exit(5);
}

KEEP void d_work(void)
{
    BARRIER();
}

KEEP void detour(void)
{
    volatile int back = 0;
    if (getcontext(&back_uc) != 0)
        exit(4);
    if (!back) {
        back = 1;
        setcontext(&c_uc);
        exit(5);
    }
    d_work();
    BARRIER();
}

__attribute__((xray_never_instrument)) static void make(ucontext_t *uc, char *stack)
{
    if (getcontext(uc) != 0)
        exit(2);
    uc->uc_stack.ss_sp = stack;
    uc->uc_stack.ss_size = STACK;
    uc->uc_link = &main_uc;
}

__attribute__((xray_never_instrument)) int main(void)
{
    make(&a_uc, a_stack);
    makecontext(&a_uc, co_a, 0);
    make(&b_uc, b_stack);
    makecontext(&b_uc, (void (*)(void))co_b, 2, 11, 22);
    make(&c_uc, c_stack);
    makecontext(&c_uc, c_main, 0);
    scheduler();
    detour();
    printf("count scheduler 1\ncount resume %d\n", 2 * (ROUNDS + 1));
    printf("count co_a 1\ncount a_work %d\ncount a_yield %d\n", ROUNDS, ROUNDS);
    printf("count co_b 1\ncount b_inner %d\ncount b_leaf %d\n", ROUNDS, 2 * ROUNDS);
    printf("count detour 1\ncount d_work 1\ncount co_c 1\ncount c_work 1\n");
    printf("threads 1\nthreadwork %d\n",
           1 + 2 * (ROUNDS + 1) + 1 + 2 * ROUNDS + 1 + 3 * ROUNDS + 1 + 1 + 1 + 1);
    return 0;
}
