/* Signals as strace shows them (issue #42): a handled SIGUSR1 sent by the process itself
 * (kill: SI_USER), a SIGUSR2 sent to a thread (tgkill: SI_TKILL), a child's exit (SIGCHLD,
 * CLD_EXITED), a blocked read (`read(0, <unfinished ...>`), then an unhandled SIGTERM
 * that kills the process (`+++ killed by SIGTERM +++`). argv[1] "block MS" reads stdin. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static void handler(int sig) { (void)sig; }

int main(int argc, char **argv) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handler;
    sigaction(SIGUSR1, &sa, 0);
    sigaction(SIGUSR2, &sa, 0);
    sigaction(SIGCHLD, &sa, 0);
    kill(getpid(), SIGUSR1);
    syscall(SYS_tgkill, getpid(), gettid(), SIGUSR2);
    pid_t child = fork();
    if (child == 0)
        _exit(3);
    int status;
    while (waitpid(child, &status, 0) < 0)
        ;
    if (argc > 1) {
        char c;
        read(0, &c, 1);
    }
    kill(getpid(), SIGTERM);
    return 0;
}
