/* A known call chain, main -> chain_a -> chain_b -> chain_target, for stack and DWARF tests.
 * Built by the tests with `cc -g -O0 -fno-omit-frame-pointer` (see tests/common).
 *
 * usage: chain N
 * Makes N calls of the chain (call i passes count=i, returns 3*i and writes chain_counter;
 * then chain_fail(i), then chain_peek with a NULL point on odd calls and {i, -i, "even"} on
 * even ones).
 * When stdin is a pipe (a test driving it), it first writes "r" once started and waits for
 * one byte on stdin (go), and after the calls writes "d", then waits for stdin to close
 * before exiting, so a tracer can still read /proc/PID/maps for its stacks. Otherwise (a
 * terminal, /dev/null: `tracer probe ... -- ./chain 2` as the docs show it) it makes its
 * calls at once, silently. */
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

struct point {
    int x;
    int y;
    const char *label;
};

enum color { RED, GREEN = 5, BLUE };

volatile long chain_counter;

__attribute__((noinline)) long chain_target(int count, const char *name, struct point *where,
                                            _Bool odd, enum color shade) {
    chain_counter += count;
    return 3L * count + (name[0] == 'c' ? 0 : 1) + where->x - where->x + odd - odd + shade - shade;
}

__attribute__((noinline)) long chain_b(int i) {
    struct point p = {i, -i, "b-point"};
    return chain_target(i, "chain", &p, i % 2, GREEN);
}

__attribute__((noinline)) long chain_a(int i) { return chain_b(i); }

/* Fails like a syscall on odd calls: -ENOENT (-2); returns i on even ones. */
__attribute__((noinline)) int chain_fail(int i) { return i % 2 ? -2 : i; }

/* Reads through its pointer, which is NULL on odd calls: a member read in BPF fails there. */
__attribute__((noinline)) int chain_peek(struct point *p) { return p ? p->y : 0; }

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 1;
    char byte;
    struct stat in;
    int driven = fstat(0, &in) == 0 && S_ISFIFO(in.st_mode);
    if (driven && (write(1, "r", 1) != 1 || read(0, &byte, 1) != 1))
        return 2;
    long sum = 0;
    for (int i = 1; i <= n; i++) {
        struct point even = {i, -i, "even"};
        sum += chain_a(i) + chain_fail(i) + chain_peek(i % 2 ? NULL : &even);
    }
    if (driven) {
        if (write(1, "d", 1) != 1)
            return 2;
        while (read(0, &byte, 1) > 0) {
        }
    }
    return sum == 0;
}
