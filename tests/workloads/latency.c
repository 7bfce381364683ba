/* Known latencies for `tracer latency`'s tests. Built by the tests with
 * `cc -g -O0 -fno-omit-frame-pointer -pthread` (see tests/common).
 *
 * usage: latency
 * 1. Outliers with known call sites: main -> lat_quick -> lat_work(1 ms), four times, then
 *    main -> lat_slow -> lat_work(70 ms), twice.
 * 2. Requests handed to another thread: for tokens 101..106, main calls lat_submit(token) and
 *    passes the token through a pipe to a worker thread, which sleeps 4.5 ms (the first four)
 *    or 17.5 ms (the last two) and calls lat_complete(token); main waits for each request to
 *    complete before submitting the next. Each request's time from before lat_submit to after
 *    lat_complete, as measured here, is printed on stderr as `handed NS` at the end. */
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static int to_worker[2], to_main[2];
static struct timespec started[8];
static long long handed[8];

static long long since(const struct timespec *t) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (now.tv_sec - t->tv_sec) * 1000000000LL + (now.tv_nsec - t->tv_nsec);
}

static void sleep_us(long us) {
    struct timespec d = {us / 1000000, (us % 1000000) * 1000};
    while (nanosleep(&d, &d) != 0) {
    }
}

__attribute__((noinline)) long lat_work(long us) {
    sleep_us(us);
    return us;
}

__attribute__((noinline)) long lat_quick(void) { return lat_work(1000); }

__attribute__((noinline)) long lat_slow(void) { return lat_work(70000); }

__attribute__((noinline)) void lat_submit(long token) { __asm__ volatile("" ::"r"(token)); }

__attribute__((noinline)) void lat_complete(long token) { __asm__ volatile("" ::"r"(token)); }

static void *worker(void *unused) {
    long token;
    (void)unused;
    while (read(to_worker[0], &token, sizeof token) == sizeof token) {
        sleep_us(token <= 104 ? 4500 : 17500);
        lat_complete(token);
        handed[token - 101] = since(&started[token - 101]);
        if (write(to_main[1], &token, sizeof token) != sizeof token)
            return NULL;
    }
    return NULL;
}

int main(void) {
    long sum = 0;
    for (int i = 0; i < 4; i++)
        sum += lat_quick();
    for (int i = 0; i < 2; i++)
        sum += lat_slow();

    pthread_t thread;
    if (pipe(to_worker) || pipe(to_main) || pthread_create(&thread, NULL, worker, NULL))
        return 2;
    for (long token = 101; token <= 106; token++) {
        clock_gettime(CLOCK_MONOTONIC, &started[token - 101]);
        lat_submit(token);
        long done;
        if (write(to_worker[1], &token, sizeof token) != sizeof token ||
            read(to_main[0], &done, sizeof done) != sizeof done || done != token)
            return 2;
    }
    close(to_worker[1]);
    pthread_join(thread, NULL);
    for (int i = 0; i < 6; i++)
        fprintf(stderr, "handed %lld\n", handed[i]);
    return sum == 4 * 1000 + 2 * 70000 ? 0 : 1;
}
