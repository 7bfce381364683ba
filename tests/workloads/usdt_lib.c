/* A shared library with a semaphore-guarded USDT probe, and (with -DMAIN) a program using it,
 * for tests/usdt_cli.rs's `-p PID` test: the probe is in the library, found in the running
 * process through its memory map, and its semaphore is the library's, raised in that process.
 *
 * Library: lib_tick(i) fires tracer_lib:tick(i) and returns 1 while the probe is enabled,
 * else returns 0 without firing.
 * Program: prints "ready", then for each line read on stdin calls lib_tick(0..4) and prints
 * "guarded N" (the calls that fired); exits 0 at the end of stdin. */
#include <stdio.h>

#ifndef MAIN
#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>

__extension__ unsigned short tracer_lib_tick_semaphore
    __attribute__((unused)) __attribute__((section(".probes")));

int lib_tick(int i) {
    if (__builtin_expect(tracer_lib_tick_semaphore, 0)) {
        DTRACE_PROBE1(tracer_lib, tick, i);
        return 1;
    }
    return 0;
}
#else
int lib_tick(int i);

int main(void) {
    char line[64];
    printf("ready\n");
    fflush(stdout);
    while (fgets(line, sizeof line, stdin)) {
        int guarded = 0;
        for (int i = 0; i < 5; i++)
            guarded += lib_tick(i);
        printf("guarded %d\n", guarded);
        fflush(stdout);
    }
    return 0;
}
#endif
