/* The `./prog` of tracer's --help and README examples, with the names they use: the global
 * `counter`, and `work`, `handle` and `my_function`. Built by tests/examples_cli.rs with
 * `cc -g -O0 -fno-omit-frame-pointer`, as a user builds a program to trace.
 *
 * usage: prog [--wait]
 * Touches PAGES fresh pages, then makes CALLS calls main -> work(i), i = 1..CALLS. Each work(i)
 * calls getppid() and getenv("PROG_UNSET") (which reads libc's `environ`) once, then handle(i, "chain", i % 2, GREEN), which adds i to `counter`
 * (0 -> 1 -> 3 -> 6 -> 10 -> 15 -> 21) and, on calls 5 and 6, spins 20 ms of its own CPU time
 * (so at least 20 ms of wall time, slower than the examples' 10ms, and task-clock counts at
 * least 40 ms however the machine is loaded; spinning, so task-clock samples fall there), then
 * my_function(i).
 * Between calls 3 and 4 it sleeps 700 ms, so a recording of it has hits on both sides of
 * 0.5 s. Exits 0.
 * With --wait (for examples that take a running process's pid): first writes "r" to stdout and
 * waits for one byte on stdin; after the calls writes "d" and waits for stdin to close. */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CALLS 6
#define PAGES 64

enum color { RED, GREEN = 5, BLUE };

volatile long counter;

static long long cpu_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

__attribute__((noinline)) long handle(int count, const char *name, _Bool odd, enum color shade) {
    counter += count;
    if (count >= 5) {
        long long end = cpu_ns() + 20 * 1000000LL;
        while (cpu_ns() < end) {
        }
    }
    return count + (name[0] == 'c' ? 0 : 1) + odd - odd + shade - shade;
}

__attribute__((noinline)) int my_function(int i) { return i * 2; }

__attribute__((noinline)) long work(int i) {
    long sum = getppid() > 0;
    sum += getenv("PROG_UNSET") == NULL;
    sum += handle(i, "chain", i % 2, GREEN);
    return sum + my_function(i);
}

int main(int argc, char **argv) {
    int wait = argc > 1 && strcmp(argv[1], "--wait") == 0;
    char byte;
    if (wait && (write(1, "r", 1) != 1 || read(0, &byte, 1) != 1))
        return 2;
    long page = sysconf(_SC_PAGESIZE);
    volatile char *pages = malloc(PAGES * page);
    if (!pages)
        return 2;
    for (long p = 0; p < PAGES; p++)
        pages[p * page] = 1;
    /* Fault in the string literals' page before the first handle("chain"): a probe reads
     * `name` with bpf_probe_read_user, which cannot fault a page in. */
    if (strcmp(argv[0], "chain") == 0)
        return 3;
    long sum = 0;
    for (int i = 1; i <= CALLS; i++) {
        if (i == 4) {
            struct timespec pause = {0, 700 * 1000000L};
            while (nanosleep(&pause, &pause) != 0) {
            }
        }
        sum += work(i);
    }
    if (wait) {
        if (write(1, "d", 1) != 1)
            return 2;
        while (read(0, &byte, 1) > 0) {
        }
    }
    return counter == 21 && sum > 0 ? 0 : 1;
}
