/* Known on-CPU shares and known blocked totals, in known call chains, for `tracer profile`.
 * Built by the tests with `cc -g -O0 -fno-omit-frame-pointer` (see tests/common).
 *
 * usage: profile [CPU_MS NAPS NAP_MS DOZES DOZE_MS]   (default: 1000 5 200 4 50)
 * Burns CPU_MS ms of its own CPU time (CLOCK_THREAD_CPUTIME_ID: whatever else runs on the
 * machine) in rounds of 0.33 ms in main -> profile_hot -> profile_hot_inner -> profile_spin
 * and 0.11 ms in main -> profile_cold -> profile_spin: a 3:1 share. Then sleeps NAPS times NAP_MS ms
 * in main -> profile_nap (nanosleep(2)) and DOZES times DOZE_MS in main -> profile_doze. At
 * the end it writes `cpu_ns=N hot_ns=N cold_ns=N` to stderr: the CPU time each part really
 * took, which a profile's samples must match; then `blocked=N`, the sleeps that blocked.
 * When stdin is a pipe (a test driving it for -p), it first writes "r" and waits for one byte
 * (go), and afterwards writes "d" and waits for stdin to close, so that a tracer can still
 * read its mappings. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static long long cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

volatile unsigned long profile_sink;

/* Spins until `ns` of this thread's CPU time have passed; the clock is read every 5,000
 * iterations (a few microseconds), so most samples land in this loop rather than in the
 * clock's syscall. */
__attribute__((noinline)) long long profile_spin(long long ns) {
    long long start = cpu_now(), now = start;
    while (now - start < ns) {
        for (int i = 0; i < 5000; i++)
            profile_sink += i;
        now = cpu_now();
    }
    return now - start;
}

__attribute__((noinline)) long long profile_hot_inner(long long ns) { return profile_spin(ns); }
__attribute__((noinline)) long long profile_hot(long long ns) { return profile_hot_inner(ns); }
__attribute__((noinline)) long long profile_cold(long long ns) { return profile_spin(ns); }

/* nanosleep(2) made in place, not through libc: glibc's wrapper sets up no frame pointer, so a
 * frame-pointer unwinder starting in it skips its caller (rbp still holds the caller's frame,
 * whose return address is the caller's caller). docs/profile.md says so. Built with
 * -DLIBC_SLEEP (as distributions build, without frame pointers: tests/common), through libc's
 * nanosleep, as programs sleep. */
#ifdef LIBC_SLEEP
#define SLEEP_MS(ms)                                                                       \
    do {                                                                                   \
        struct timespec ts = {(ms) / 1000, ((ms) % 1000) * 1000000L};                      \
        nanosleep(&ts, NULL);                                                              \
    } while (0)
#else
#define SLEEP_MS(ms)                                                                       \
    do {                                                                                   \
        struct timespec ts = {(ms) / 1000, ((ms) % 1000) * 1000000L};                      \
        long ret;                                                                          \
        __asm__ volatile("syscall"                                                         \
                         : "=a"(ret)                                                       \
                         : "a"(35L /* SYS_nanosleep */), "D"(&ts), "S"(0L)                 \
                         : "rcx", "r11", "memory");                                        \
        (void)ret;                                                                         \
    } while (0)
#endif

__attribute__((noinline)) void profile_nap(long ms) { SLEEP_MS(ms); }
__attribute__((noinline)) void profile_doze(long ms) { SLEEP_MS(ms); }

/* This thread's voluntary context switches so far: each sleep that really blocked is one. A
 * sleep preempted before it blocked, and kept off the CPU past its end, never blocks. */
static long voluntary_switches(void) {
    char line[128];
    long n = -1;
    FILE *status = fopen("/proc/thread-self/status", "r");
    while (status && fgets(line, sizeof line, status))
        sscanf(line, "voluntary_ctxt_switches: %ld", &n);
    if (status)
        fclose(status);
    return n;
}

int main(int argc, char **argv) {
    /* Without arguments (the docs' `./busy`): 1 s of CPU, 5 naps of 200 ms, 4 dozes of 50 ms. */
    char *defaults[] = {argv[0], "1000", "5", "200", "4", "50"};
    if (argc == 1) {
        argc = 6;
        argv = defaults;
    }
    if (argc != 6) {
        fprintf(stderr, "usage: profile [CPU_MS NAPS NAP_MS DOZES DOZE_MS]\n");
        return 2;
    }
    long long cpu_ms = atoll(argv[1]);
    int naps = atoi(argv[2]), dozes = atoi(argv[4]);
    long nap_ms = atol(argv[3]), doze_ms = atol(argv[5]);
    char byte;
    struct stat in;
    int driven = fstat(0, &in) == 0 && S_ISFIFO(in.st_mode);
    if (driven && (write(1, "r", 1) != 1 || read(0, &byte, 1) != 1))
        return 2;
    long long hot = 0, cold = 0, begin = cpu_now();
    /* Rounds far shorter than a sampling period (10.1 ms at 99 Hz, 1.001 ms at 999 Hz) and
     * of no simple ratio to either, so that where a period ends within a round is as good as
     * random, whatever the scheduler does. */
    for (long long round = 0; round < cpu_ms * 100 / 44; round++) {
        hot += profile_hot(330000);
        cold += profile_cold(110000);
    }
    long long cpu = cpu_now() - begin;
#ifdef LIBC_SLEEP
    /* The first call binds nanosleep and faults its code in, which may block on a slow disk
     * (the VM tier's 9p root): made here, not counted among the sleeps. */
    nanosleep(&(struct timespec){0, 0}, NULL);
#endif
    long switched = voluntary_switches();
    for (int i = 0; i < naps; i++)
        profile_nap(nap_ms);
    for (int i = 0; i < dozes; i++)
        profile_doze(doze_ms);
    fprintf(stderr, "cpu_ns=%lld hot_ns=%lld cold_ns=%lld\n", cpu, hot, cold);
    if (naps + dozes > 0)
        fprintf(stderr, "blocked=%ld\n", voluntary_switches() - switched);
    if (driven) {
        if (write(1, "d", 1) != 1)
            return 2;
        while (read(0, &byte, 1) > 0)
            ;
    }
    return 0;
}
