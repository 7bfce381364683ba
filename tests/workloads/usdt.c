/* USDT probes with known arguments, for tests/usdt_cli.rs (built with `cc -g -O0
 * -fno-omit-frame-pointer usdt.c usdt_guarded.c`; <sys/sdt.h> is Debian's systemtap-sdt-dev).
 *
 * usage: usdt-prog [N]   (N defaults to 5)
 * 1. tracer:tick(i, -i) for i = 0..N-1: an int in memory and its negation in a register.
 * 2. tracer:mixed(42, counter, name) 3 times, counter = 1, 2, 3: a constant, a global read
 *    %rip-relative, and a string ("chain").
 * 3. tracer:global(counter, small[3]) once, from a function built with -O1 so that the
 *    compiler names the globals in place: `-8@counter(%rip) -2@6+small(%rip)`, values 3, -4.
 * 4. tracer:twice(k) from an inlined function, once from each of its two call sites (k = 1, then
 *    2): one probe compiled in at two places, two notes.
 * 5. tracer:guarded(i) for i = 0..N-1, in usdt_guarded.c: behind its semaphore, so the probe
 *    (and the count of runs it guards) happens only while it is traced.
 * Then prints "guarded N" (how many times the guarded code ran) on stdout and exits 0. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/sdt.h>

long counter;
short small[4] = {1, 2, 3, -4};

int guarded_run(int i); /* usdt_guarded.c: 1 when the probe was enabled */

__attribute__((noinline, optimize("O1"))) void global_probe(void) {
    DTRACE_PROBE2(tracer, global, counter, small[3]);
}

static inline __attribute__((always_inline)) void twice(int k) {
    DTRACE_PROBE1(tracer, twice, k);
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 5;
    const char *name = "chain";
    /* Touch the string: a BPF program cannot fault in a page the program never read. */
    if (name[0] != 'c')
        return 1;
    for (int i = 0; i < n; i++) {
        DTRACE_PROBE2(tracer, tick, i, -i);
    }
    for (int i = 0; i < 3; i++) {
        counter++;
        DTRACE_PROBE3(tracer, mixed, 42, counter, name);
    }
    global_probe();
    twice(1);
    twice(2);
    int guarded = 0;
    for (int i = 0; i < n; i++) {
        guarded += guarded_run(i);
    }
    printf("guarded %d\n", guarded);
    return 0;
}
