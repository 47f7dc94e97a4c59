/* Built at test time with -fxray-instrument for `--syms BINARY` (test_hostile.c): its functions'
 * symbol names (asm labels) hold terminal escapes, and one a newline that, written into a
 * sidecar line, would end the line early and make the rest a line naming another id. Function
 * ids: 1 shout, 2 forge, 3 main. */
int shout(int x) __asm__("shout\x1b[2J\a");
int forge(int x) __asm__("forge\nf\t0\t1\t0x0\tforged");

__attribute__((noinline)) int shout(int x)
{
    return x * 3 + 1;
}

__attribute__((noinline)) int forge(int x)
{
    return x * 5 + 2;
}

int main(int argc, char **argv)
{
    (void)argv;
    return shout(argc) + forge(argc) == 11 ? 0 : 1;
}
