/* The `tracer record` workload: in a known order, across two threads pinned to two CPUs,
 * it writes a watched variable (CPU 0), calls a probed function (CPU 1), touches fresh
 * pages (CPU 0: one page fault each) and makes a syscall (CPU 0), ROUNDS times.
 *
 * Prints "worker TID" and "main TID" first, so a test can check the tids of each record. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define PAGES 4

volatile long timeline_counter;
static sem_t go_worker, worker_done, worker_ready;
static int rounds;

static void pin(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) {
        perror("sched_setaffinity");
        exit(1);
    }
}

/* The uprobe target: runs on the worker thread. */
__attribute__((noinline)) int timeline_step(int round) {
    __asm__ volatile("" ::: "memory");
    return round * 2;
}

static void *worker(void *arg) {
    (void)arg;
    pin(1);
    printf("worker %ld\n", (long)syscall(SYS_gettid));
    fflush(stdout);
    sem_post(&worker_ready);
    for (int i = 1; i <= rounds; i++) {
        sem_wait(&go_worker);
        timeline_step(i);
        sem_post(&worker_done);
    }
    return NULL;
}

int main(int argc, char **argv) {
    rounds = argc > 1 ? atoi(argv[1]) : 3;
    pin(0);
    sem_init(&go_worker, 0, 0);
    sem_init(&worker_done, 0, 0);
    sem_init(&worker_ready, 0, 0);
    pthread_t thread;
    pthread_create(&thread, NULL, worker, NULL);
    sem_wait(&worker_ready);
    printf("main %ld\n", (long)syscall(SYS_gettid));
    fflush(stdout);
    long page = sysconf(_SC_PAGESIZE);
    for (int i = 1; i <= rounds; i++) {
        timeline_counter = i;              /* 1: watch hit on CPU 0 */
        sem_post(&go_worker);              /* 2: uprobe hit on CPU 1 */
        sem_wait(&worker_done);
        char *fresh = mmap(NULL, PAGES * page, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (fresh == MAP_FAILED) {
            perror("mmap");
            return 1;
        }
        for (int p = 0; p < PAGES; p++)    /* 3: PAGES page faults on CPU 0 */
            fresh[p * page] = 1;
        syscall(SYS_getppid);              /* 4: tracepoint hit on CPU 0 */
        munmap(fresh, PAGES * page);
    }
    pthread_join(thread, NULL);
    return 0;
}
