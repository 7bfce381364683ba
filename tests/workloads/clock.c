/* Reads the clock until MS milliseconds have passed, from one function, as programs that time
 * their work do: clock_gettime runs in the vDSO, whose code and unwind information are in the
 * kernel's image mapped into the process, not in any file. Prints how many reads it made.
 *
 *   tracer-clock MS
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

__attribute__((noinline)) unsigned long clock_reader(long long ms) {
    long long end = now_ns() + ms * 1000000LL;
    unsigned long reads = 1;
    while (now_ns() < end)
        reads++;
    return reads;
}

int main(int argc, char **argv) {
    long long ms = argc > 1 ? atoll(argv[1]) : 1000;
    printf("reads %lu\n", clock_reader(ms));
    return 0;
}
