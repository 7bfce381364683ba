/* Calls whose structures strace decodes (issue #42): stat and statx results, timespecs,
 * rlimits, signal sets and sigactions, wait4 statuses of a child that exits with 7 and of
 * one killed by SIGKILL, an fd pair, statfs, sigaltstack's stacks, CPU masks, capability
 * sets, the mask a signal frame restores, clone3's arguments, iovec arrays (readv, writev
 * and their positioned forms), ppoll's fds, timeouts and signal mask, select's and pselect6's
 * fd sets. The last call, an unlink of a path that does not exist, marks the main thread's
 * lines. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/capability.h>
#include <poll.h>
#include <sys/select.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void handler(int sig) { (void)sig; }

/* The thread waits for a byte the main thread writes after clone3 returned: a thread that
 * had exited by then would have cleared parent_tid (CLONE_CHILD_CLEARTID names the same
 * word), and strace would read [0] there (seen once in the 6.1 VM). */
static void *thread(void *arg) {
    char c;
    read(*(int *)arg, &c, 1);
    return arg;
}

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
    struct statfs sf;
    statfs("/proc", &sf);
    statfs("/nonexistent/structs", &sf);
    stack_t ss, old_ss;
    sigaltstack(0, &old_ss);
    ss.ss_sp = malloc(65536);
    ss.ss_size = 65536;
    ss.ss_flags = 0;
    sigaltstack(&ss, &old_ss);
    ss.ss_flags = SS_DISABLE;
    sigaltstack(&ss, 0);
    cpu_set_t cpus;
    sched_getaffinity(0, sizeof cpus, &cpus);
    sched_setaffinity(0, sizeof cpus, &cpus);
    struct __user_cap_header_struct cap_header = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct caps[2];
    syscall(SYS_capget, &cap_header, caps);
    syscall(SYS_capget, &cap_header, 0);
    /* libcap's first question: a version the kernel does not know, which it overwrites. */
    cap_header.version = 0;
    syscall(SYS_capget, &cap_header, 0);
    /* A thread: glibc starts it with clone3. */
    pthread_t t;
    pthread_create(&t, 0, thread, &fds[0]);
    write(fds[1], "x", 1);
    pthread_join(t, 0);
    /* A handled signal while SIGINT is blocked: its frame restores [INT]. */
    sigset_t blocked;
    sigemptyset(&blocked);
    sigaddset(&blocked, SIGINT);
    sigprocmask(SIG_BLOCK, &blocked, 0);
    raise(SIGUSR1);
    sigprocmask(SIG_UNBLOCK, &blocked, 0);
    /* iovec arrays, given and filled: a NULL element, one longer than -s, a readv's bytes as
     * far as its return reaches, 40 elements (strace shows 32), a readv that fails. */
    struct iovec given[3] = {{"ab", 2}, {0, 0}, {"cdefghijklmnopqrstuvwxyz0123456789ABCDEF", 40}};
    writev(fds[1], given, 3);
    char one[4], two[64];
    struct iovec filled[3] = {{one, sizeof one}, {two, sizeof two}, {two, 8}};
    readv(fds[0], filled, 3);
    struct iovec many[40];
    for (int i = 0; i < 40; i++)
        many[i] = (struct iovec){"z", 1};
    writev(fds[1], many, 40);
    readv(-1, filled, 3);
    /* ppoll, as the kernel takes it (glibc's wrapper copies the timeout): the time left
     * beside a positive return, written back over the timeout given; a timeout that runs
     * out; none. The pipe holds the 40 bytes just written. */
    struct pollfd pfds[2] = {{fds[0], POLLIN, 0}, {fds[1], POLLOUT, 0}};
    struct timespec timeout = {5, 500}, brief = {0, 1000};
    sigset_t usr1;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    syscall(SYS_ppoll, pfds, 2, &timeout, &usr1, 8);
    struct pollfd never = {fds[1], POLLIN, 0};
    syscall(SYS_ppoll, &never, 1, &brief, 0, 8);
    syscall(SYS_ppoll, pfds, 1, 0, 0, 8);
    /* 40 fds, all ready: strace shows the first 32 given and the first 32 returned. */
    struct pollfd forty[40];
    for (int i = 0; i < 40; i++)
        forty[i] = pfds[i % 2];
    syscall(SYS_ppoll, forty, 40, 0, 0, 8);
    /* select and pselect6, as the kernel takes them: the sets given (the call writes the
     * ready ones over them) and the ready ones, the time left; a timeout that runs out; a set
     * reaching fd 100 and pselect6's signal mask; a set the kernel cannot read. */
    fd_set in, out, except;
    FD_ZERO(&in);
    FD_ZERO(&out);
    FD_ZERO(&except);
    FD_SET(fds[0], &in);
    FD_SET(fds[1], &out);
    FD_SET(fds[0], &except);
    struct timeval tv = {5, 500}, tick = {0, 1000};
    syscall(SYS_select, fds[1] + 1, &in, &out, &except, &tv);
    FD_ZERO(&in);
    FD_SET(fds[1], &in);
    syscall(SYS_select, fds[1] + 1, &in, 0, 0, &tick);
    int high = dup2(fds[0], 100);
    FD_ZERO(&in);
    FD_SET(fds[0], &in);
    FD_SET(high, &in);
    struct timespec pselect_timeout = {3, 7};
    struct {
        sigset_t *ss;
        size_t len;
    } mask = {&usr1, 8};
    syscall(SYS_pselect6, high + 1, &in, 0, 0, &pselect_timeout, &mask);
    close(high);
    syscall(SYS_select, 4, (void *)8, 0, 0, 0);
    /* The positioned forms, on a memfd: the offset as one number, the flags by name. */
    int mem = memfd_create("structs", 0);
    pwritev(mem, given, 3, 0);
    pwritev2(mem, given, 1, 50, RWF_DSYNC);
    preadv(mem, filled, 2, 1);
    preadv2(mem, filled, 3, -1, 0);
    preadv2(mem, filled, 1, 0, RWF_HIPRI);
    unlink("/nonexistent/structs");
    return 0;
}
