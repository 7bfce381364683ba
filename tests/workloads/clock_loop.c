/* Calls clock_gettime(CLOCK_MONOTONIC), which the vDSO answers without a system call, for
 * argv[1] ms, from a function of its own. Built with -O2 -fomit-frame-pointer, as
 * distributions build, its samples sit mostly in the vDSO, under libc's clock_gettime, this
 * function and main: only the vDSO's own unwind information leads out of it. */
#include <stdlib.h>
#include <time.h>

__attribute__((noinline)) static long clock_spin(long ns) {
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    long calls = 0;
    do {
        clock_gettime(CLOCK_MONOTONIC, &now);
        calls++;
    } while ((now.tv_sec - start.tv_sec) * 1000000000L + (now.tv_nsec - start.tv_nsec) < ns);
    return calls;
}

int main(int argc, char **argv) {
    long ms = argc > 1 ? atol(argv[1]) : 300;
    return clock_spin(ms * 1000000L) > 0 ? 0 : 1;
}
