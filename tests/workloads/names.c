/* Calls whose arguments and results strace shows by name (issue #42): fcntl by command,
 * umask in octal, socket families and protocols, madvise and fadvise advice, mremap flags,
 * ioctl requests (known and not), prctl options, statx masks, pipe2 and faccessat2 flags, and
 * errnos beyond the common ones. Each call's outcome is fixed: its fds are pipes and
 * sockets it makes itself. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(void) {
    int p[2], q[2];
    pipe2(p, 0);
    pipe2(q, O_CLOEXEC);
    fcntl(p[0], F_GETFD);
    fcntl(q[0], F_GETFD);
    fcntl(p[1], F_GETFL);
    fcntl(p[0], F_GETFL);
    fcntl(p[0], F_SETFD, FD_CLOEXEC);
    fcntl(p[0], F_SETFL, O_NONBLOCK);
    fcntl(p[0], F_DUPFD_CLOEXEC, 20);
    fcntl(p[0], F_GETPIPE_SZ);
    umask(022);
    umask(077);
    socket(AF_INET, SOCK_STREAM, 0);
    socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, IPPROTO_UDP);
    socket(AF_UNIX, SOCK_STREAM, 0);
    socket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE);
    socket(AF_INET, SOCK_STREAM, 255);
    char *m = mmap(0, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    madvise(m, 4096, MADV_DONTNEED);
    mremap(m, 8192, 16384, 0);
    ioctl(p[0], FIONREAD, 0);
    ioctl(p[0], TIOCGWINSZ, 0);
    ioctl(p[0], 0x1234, 0);
    prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
    posix_fadvise(p[0], 0, 0, POSIX_FADV_SEQUENTIAL);
    statx(AT_FDCWD, "/nonexistent/names", 0, STATX_BASIC_STATS | STATX_BTIME, 0);
    statx(AT_FDCWD, "/nonexistent/names", AT_SYMLINK_NOFOLLOW, STATX_TYPE | STATX_SIZE, 0);
    statx(AT_FDCWD, "/nonexistent/names", AT_STATX_DONT_SYNC | AT_EMPTY_PATH, STATX_MODE, 0);
    syscall(SYS_faccessat2, AT_FDCWD, "/", X_OK, AT_EACCESS);
    /* Fail (no such directory), changing nothing: their strings and flags read as strace's. */
    mount("none", "/nonexistent/names", "tmpfs", MS_RDONLY | MS_NOSUID, "size=1m");
    umount2("/nonexistent/names", MNT_DETACH);
    close(99);
    connect(p[0], 0, 0);
    shutdown(p[0], SHUT_RD);
    write(p[1], "x", 1);
    close(p[0]);
    return 0;
}
