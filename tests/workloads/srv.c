/* The `./srv` of `tracer latency --help`: requests submitted on one thread and completed on
 * another. Built by tests/examples_cli.rs with `cc -g -O0 -fno-omit-frame-pointer -pthread`.
 *
 * usage: srv
 * For tokens 1..6, main calls submit(token) and hands the token to a worker thread through a
 * pipe; the worker sleeps 9 ms (tokens 1-4) or 35 ms (tokens 5-6) and calls complete(token);
 * main waits for each request before the next. Exits 0. Each request takes at least its sleep
 * and lands in the log2 bucket [8.39 ms, 16.8 ms) or [33.6 ms, 67.1 ms) unless the machine
 * delays it by 7 ms or 32 ms more (the first request pays for the process's first uprobe hit,
 * about 2 ms here, after its start was stamped). */
#include <pthread.h>
#include <time.h>
#include <unistd.h>

static int to_worker[2], to_main[2];

__attribute__((noinline)) void submit(long token) { __asm__ volatile("" ::"r"(token)); }

__attribute__((noinline)) void complete(long token) { __asm__ volatile("" ::"r"(token)); }

static void *worker(void *unused) {
    long token;
    (void)unused;
    while (read(to_worker[0], &token, sizeof token) == sizeof token) {
        struct timespec d = {0, (token <= 4 ? 9 : 35) * 1000000L};
        while (nanosleep(&d, &d) != 0) {
        }
        complete(token);
        if (write(to_main[1], &token, sizeof token) != sizeof token)
            return NULL;
    }
    return NULL;
}

int main(void) {
    pthread_t thread;
    if (pipe(to_worker) || pipe(to_main) || pthread_create(&thread, NULL, worker, NULL))
        return 2;
    for (long token = 1; token <= 6; token++) {
        long done;
        submit(token);
        if (write(to_worker[1], &token, sizeof token) != sizeof token ||
            read(to_main[0], &done, sizeof done) != sizeof done || done != token)
            return 2;
    }
    close(to_worker[1]);
    pthread_join(thread, NULL);
    return 0;
}
