/* Configure-time probe (meson.build): can clang build and link a program with a sanitizer? */
int main(void)
{
    return 0;
}
