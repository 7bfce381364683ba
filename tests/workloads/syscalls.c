/* The known workload of tests/trace_cli.rs: a fixed sequence of system calls whose arguments
 * and results the test writes down in advance.
 *
 * usage: syscalls DIR
 * In order, from the main thread (raw calls, no stdio, so libc adds none between them):
 *   openat(AT_FDCWD, "DIR/data", O_WRONLY|O_CREAT|O_TRUNC, 0644) = 3
 *   write(3, "hello tracer\n", 13) = 13, three times
 *   close(3) = 0
 *   openat(AT_FDCWD, "DIR/data", O_RDONLY) = 3
 *   read(3, buf, 64) = 39, then read(3, buf, 64) = 0
 *   close(3) = 0
 *   mmap(NULL, 8192, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0), munmap of it
 *   openat(AT_FDCWD, "/nonexistent/tracer", O_RDONLY) = -1 ENOENT
 *   getppid() five times
 *   fork(): the child execs /bin/true with argv ["true", "x"]; the parent waits for it
 *   (wait4(child, ..., 0, NULL))
 *   unlink("DIR/data") = 0, then again = -1 ENOENT
 * and exits 0. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc != 2)
        return 2;
    char path[4096];
    snprintf(path, sizeof path, "%s/data", argv[1]);
    long fd = syscall(SYS_openat, AT_FDCWD, path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    for (int i = 0; i < 3; i++)
        syscall(SYS_write, fd, "hello tracer\n", 13);
    syscall(SYS_close, fd);
    fd = syscall(SYS_openat, AT_FDCWD, path, O_RDONLY);
    char buf[64];
    syscall(SYS_read, fd, buf, sizeof buf);
    syscall(SYS_read, fd, buf, sizeof buf);
    syscall(SYS_close, fd);
    void *p = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    munmap(p, 8192);
    syscall(SYS_openat, AT_FDCWD, "/nonexistent/tracer", O_RDONLY);
    for (int i = 0; i < 5; i++)
        syscall(SYS_getppid);
    pid_t child = fork();
    if (child == 0) {
        /* String literals: the fork did not map the binary's read-only data into the child,
         * so execve's entry cannot read them; tracer reads them from the new image. */
        execl("/bin/true", "true", "x", (char *)NULL);
        _exit(127);
    }
    int status;
    waitpid(child, &status, 0);
    syscall(SYS_unlink, path);
    syscall(SYS_unlink, path);
    return 0;
}
