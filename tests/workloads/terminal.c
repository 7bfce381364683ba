/*
 * A pseudo-terminal's ioctls, each once, for tests/trace_cli.rs: the structures strace
 * decodes (a struct termios got and set, a struct winsize set and got), the ints (the pty's
 * number, its lock, the bytes waiting), the values (TCFLSH's queue, TCXONC's action), a
 * request without an argument (FIOCLEX), FIONBIO's int at the very end of a mapping (read
 * although the 36 bytes an ioctl's argument is read with would fault), and a TCGETS that
 * fails (its address).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

int main(void) {
    int master = posix_openpt(O_RDWR | O_NOCTTY);
    if (master < 0 || grantpt(master) != 0 || unlockpt(master) != 0)
        return 1;
    int slave = open(ptsname(master), O_RDWR | O_NOCTTY);
    struct termios cooked, raw;
    if (slave < 0 || tcgetattr(slave, &cooked) != 0)
        return 2;
    raw = cooked;
    cfmakeraw(&raw);
    tcsetattr(slave, TCSAFLUSH, &raw);
    tcsetattr(slave, TCSANOW, &cooked);
    struct winsize size = {.ws_row = 24, .ws_col = 80, .ws_xpixel = 640, .ws_ypixel = 480};
    ioctl(slave, TIOCSWINSZ, &size);
    ioctl(slave, TIOCGWINSZ, &size);
    tcflush(slave, TCIFLUSH);
    tcflow(slave, TCOON);
    ioctl(slave, FIOCLEX);
    char *pages = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (pages == MAP_FAILED || munmap(pages + 4096, 4096) != 0)
        return 6;
    int *last = (int *)(pages + 4096 - sizeof(int));
    *last = 1;
    ioctl(slave, FIONBIO, last);
    /* "hi\n" reaches the master as "hi\r\n" (ONLCR), passed on by a kernel worker: once
     * the master is readable, 4 bytes wait there. */
    if (write(slave, "hi\n", 3) != 3)
        return 3;
    tcdrain(slave);
    struct pollfd readable = {.fd = master, .events = POLLIN};
    if (poll(&readable, 1, 5000) != 1)
        return 5;
    int waiting = 0;
    ioctl(master, FIONREAD, &waiting);
    tcgetattr(99, &cooked);
    return waiting == 4 ? 0 : 4;
}
