/* Memory written, then read back: for swapin (tests/vm_kprobe.rs), which runs it in a memory
 * cgroup smaller than what it writes, so that its pages go to swap and come back.
 *
 * usage: memtouch MB
 * Fills MB mebibytes with words that are never zero (a zero page is not written to swap on
 * recent kernels), then reads every word back and checks it; exits 1 on a wrong word. */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    size_t words = (size_t)(argc > 1 ? atol(argv[1]) : 64) << 20 >> 3;
    unsigned long *memory = malloc(words * sizeof *memory);
    if (!memory)
        return 2;
    for (size_t i = 0; i < words; i++)
        memory[i] = i * 2654435761UL + 1;
    for (size_t i = 0; i < words; i++)
        if (memory[i] != i * 2654435761UL + 1)
            return 1;
    return 0;
}
