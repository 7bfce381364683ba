/* The leader leaves first: main() ends its own thread with pthread_exit, and the process
 * goes on in a second thread, which writes a line and ends the process with status 3.
 * tests/trace_cli.rs: tracer trace must follow the process until its last thread exits. */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

static void *last(void *arg) {
    (void)arg;
    usleep(100000);
    write(1, "late\n", 5);
    exit(3);
}

int main(void) {
    pthread_t thread;
    pthread_create(&thread, NULL, last, NULL);
    pthread_exit(NULL);
}
