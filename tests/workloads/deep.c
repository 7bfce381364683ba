/* A call chain deeper than the top of the stack a probe copies (956 bytes), built by the
 * tests as distributions build programs (`-O2 -fomit-frame-pointer
 * -fno-optimize-sibling-calls`): main -> deep_step (41 frames of at least 64 bytes each) ->
 * deep_leaf.
 *
 * usage: deep N
 * Makes N calls of the chain. */
#include <stdlib.h>

__attribute__((noinline)) int deep_leaf(int x) {
    __asm__ volatile("" ::: "memory");
    return x + 1;
}

__attribute__((noinline)) int deep_step(int depth, int x) {
    volatile char pad[64];
    pad[0] = (char)x;
    int r = depth == 0 ? deep_leaf(x) : deep_step(depth - 1, x);
    return r + pad[0];
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 1;
    int sum = 0;
    for (int i = 0; i < n; i++)
        sum += deep_step(40, i);
    return sum == -1;
}
