/* Distinct call stacks, each made once: call N reaches stackmix_target through a chain of
 * DEPTH calls, each of stackmix_a or stackmix_b as the bits of N say (lowest bit outermost):
 * up to 2^DEPTH stacks. A pause of PAUSE_US after every BATCH calls spreads them over time, as
 * a long run's would come.
 *
 *   tracer-stackmix CALLS BATCH PAUSE_US
 */
#include <stdlib.h>
#include <unistd.h>

#define DEPTH 16

volatile unsigned long sink;

__attribute__((noinline)) void stackmix_target(unsigned long n) { sink += n; }

void stackmix_a(unsigned long bits, int depth, unsigned long n);
void stackmix_b(unsigned long bits, int depth, unsigned long n);

static void step(unsigned long bits, int depth, unsigned long n) {
    if (depth == 0)
        stackmix_target(n);
    else if (bits & 1)
        stackmix_a(bits >> 1, depth - 1, n);
    else
        stackmix_b(bits >> 1, depth - 1, n);
}

__attribute__((noinline)) void stackmix_a(unsigned long bits, int depth, unsigned long n) {
    step(bits, depth, n);
    sink++;
}

__attribute__((noinline)) void stackmix_b(unsigned long bits, int depth, unsigned long n) {
    step(bits, depth, n);
    sink--;
}

int main(int argc, char **argv) {
    if (argc != 4)
        return 2;
    unsigned long calls = strtoul(argv[1], 0, 10);
    unsigned long batch = strtoul(argv[2], 0, 10);
    unsigned long pause = strtoul(argv[3], 0, 10);
    for (unsigned long n = 0; n < calls; n++) {
        step(n, DEPTH, n);
        if (batch && (n + 1) % batch == 0)
            usleep(pause);
    }
    return 0;
}
