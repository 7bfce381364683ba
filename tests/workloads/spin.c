/* A known hot function in a known call chain, main -> spin_outer -> spin_inner, for sampled
 * stacks (`tracer record -e cpu-clock -g`). Built by the tests with
 * `cc -g -O0 -fno-omit-frame-pointer` (see tests/common).
 *
 * usage: spin [MILLIONS]   (default 200)
 * spin_inner adds to a volatile counter MILLIONS million times: no calls and no system calls,
 * so every user-mode sample taken while it runs has its ip in spin_inner and the frames
 * spin_inner, spin_outer, main.
 * When stdin is a pipe (a test driving it for -p), it first writes "r" and waits for one byte
 * (go), and afterwards writes "d" and waits for stdin to close, so that a tracer can still
 * read its mappings. */
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

volatile unsigned long spin_sink;

__attribute__((noinline)) void spin_inner(long millions) {
    for (long i = 0; i < millions * 1000000; i++)
        spin_sink += i;
}

__attribute__((noinline)) void spin_outer(long millions) { spin_inner(millions); }

int main(int argc, char **argv) {
    long millions = argc > 1 ? atol(argv[1]) : 200;
    char byte;
    struct stat in;
    int driven = fstat(0, &in) == 0 && S_ISFIFO(in.st_mode);
    if (driven && (write(1, "r", 1) != 1 || read(0, &byte, 1) != 1))
        return 2;
    spin_outer(millions);
    if (driven) {
        if (write(1, "d", 1) != 1)
            return 2;
        while (read(0, &byte, 1) > 0)
            ;
    }
    return 0;
}
