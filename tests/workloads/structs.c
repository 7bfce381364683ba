/* Calls whose structures strace decodes (issue #42): stat and statx results, timespecs,
 * rlimits, signal sets and sigactions, wait4 statuses of a child that exits with 7 and of
 * one killed by SIGKILL, an fd pair. The last call, an unlink of a path that does not
 * exist, marks the main thread's lines. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void handler(int sig) { (void)sig; }

int main(void) {
    struct stat st;
    stat("/etc/hostname", &st);
    fstat(0, &st);
    lstat("/nonexistent/structs", &st);
    fstatat(AT_FDCWD, "/dev/null", &st, 0);
    struct statx sx;
    statx(AT_FDCWD, "/etc/hostname", 0, STATX_BASIC_STATS, &sx);
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, 0);
    clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, 0);
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    prlimit(0, RLIMIT_STACK, 0, &rl);
    setrlimit(RLIMIT_CORE, &(struct rlimit){0, RLIM_INFINITY});
    sigset_t set, old;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigprocmask(SIG_BLOCK, &set, 0);
    sigfillset(&set);
    sigprocmask(SIG_SETMASK, &set, &old);
    sigemptyset(&set);
    sigprocmask(SIG_SETMASK, &set, 0);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handler;
    sa.sa_flags = SA_RESTART;
    sigaddset(&sa.sa_mask, SIGUSR2);
    sigaction(SIGUSR1, &sa, 0);
    sigaction(SIGUSR1, 0, &sa);
    sa.sa_handler = SIG_IGN;
    sa.sa_flags = 0;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGPIPE, &sa, &sa);
    int fds[2];
    pipe2(fds, O_CLOEXEC);
    int status;
    pid_t child = fork();
    if (child == 0)
        _exit(7);
    wait4(child, &status, 0, 0);
    child = fork();
    if (child == 0)
        raise(SIGKILL);
    wait4(child, &status, 0, 0);
    unlink("/nonexistent/structs");
    return 0;
}
