/* The semaphore-guarded probe of usdt.c: a probe with a semaphore needs every probe of its
 * translation unit to have one (<sys/sdt.h>'s _SDT_HAS_SEMAPHORES), so it lives alone here. */
#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>

__extension__ unsigned short tracer_guarded_semaphore
    __attribute__((unused)) __attribute__((section(".probes")));

/* Fires tracer:guarded(i) and returns 1 when the probe is enabled (the kernel raised the
 * semaphore), else returns 0 without firing. */
int guarded_run(int i) {
    if (__builtin_expect(tracer_guarded_semaphore, 0)) {
        DTRACE_PROBE1(tracer, guarded, i);
        return 1;
    }
    return 0;
}
