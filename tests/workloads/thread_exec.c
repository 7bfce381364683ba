/* An exec by a thread that is not the leader: the kernel kills the leader, gives the
 * thread the process's id, and the call returns 0 there (de_thread). The new program is
 * `sh -c 'exit 4'`. tests/trace_cli.rs: tracer trace must show the execve with its
 * strings and go on tracing the new program. */
#include <pthread.h>
#include <unistd.h>

static void *run(void *arg) {
    (void)arg;
    char *argv[] = {"/bin/sh", "-c", "exit 4", NULL};
    execv("/bin/sh", argv);
    return NULL;
}

int main(void) {
    pthread_t thread;
    pthread_create(&thread, NULL, run, NULL);
    pause();
    return 0;
}
