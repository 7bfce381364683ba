/* Sockets as a small server and its client make them (issue #42's corpus): a TCP listener on
 * 127.0.0.1 and a forked client that connects, writes and reads with recvmsg; the server
 * accepts, polls, reads and answers with sendmsg. Then a UNIX socketpair, over which a
 * descriptor passes (SCM_RIGHTS), and a datagram socket bound to an abstract name, which
 * sends to itself with sendto and sendmsg. The addresses the kernel fills are asked for with
 * room to spare (strace's `[128 => 16]`, `msg_namelen=128 => 16`) and once on a socket that
 * has none (ENOTCONN); a recvmsg on no descriptor fails. Every result is fixed but the port,
 * which the kernel picks. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

static void client(unsigned short port) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(port)};
    inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
    connect(fd, (struct sockaddr *)&to, sizeof to);
    write(fd, "ping", 4);
    char buf[16];
    struct iovec iov = {.iov_base = buf, .iov_len = sizeof buf};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
    recvmsg(fd, &msg, 0);
    close(fd);
    _exit(0);
}

int main(void) {
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, IPPROTO_TCP);
    int one = 1;
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in at = {.sin_family = AF_INET};
    inet_pton(AF_INET, "127.0.0.1", &at.sin_addr);
    bind(lfd, (struct sockaddr *)&at, sizeof at);
    listen(lfd, 4);
    socklen_t len = sizeof at;
    getsockname(lfd, (struct sockaddr *)&at, &len);
    struct sockaddr_storage any;
    socklen_t room = sizeof any;
    getpeername(lfd, (struct sockaddr *)&any, &room);
    pid_t child = fork();
    if (child == 0)
        client(ntohs(at.sin_port));
    struct sockaddr_in peer;
    len = sizeof peer;
    int cfd = accept4(lfd, (struct sockaddr *)&peer, &len, SOCK_CLOEXEC);
    room = sizeof any;
    getsockname(cfd, (struct sockaddr *)&any, &room);
    setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct pollfd pfd = {.fd = cfd, .events = POLLIN};
    poll(&pfd, 1, 5000);
    char buf[16];
    read(cfd, buf, sizeof buf);
    struct iovec iov[2] = {{.iov_base = "po", .iov_len = 2}, {.iov_base = "ng", .iov_len = 2}};
    struct msghdr msg = {.msg_iov = iov, .msg_iovlen = 2};
    sendmsg(cfd, &msg, 0);
    int status;
    waitpid(child, &status, 0);
    close(cfd);
    close(lfd);

    int pair[2];
    socketpair(AF_UNIX, SOCK_STREAM, 0, pair);
    send(pair[0], "x", 1, 0);
    recv(pair[1], buf, sizeof buf, 0);
    char control[CMSG_SPACE(sizeof(int))];
    memset(control, 0, sizeof control);
    struct iovec z = {.iov_base = "z", .iov_len = 1};
    struct msghdr pass = {
        .msg_iov = &z, .msg_iovlen = 1, .msg_control = control, .msg_controllen = sizeof control};
    struct cmsghdr *c = CMSG_FIRSTHDR(&pass);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &pair[0], sizeof(int));
    sendmsg(pair[0], &pass, 0);
    char got[64];
    struct iovec in = {.iov_base = buf, .iov_len = sizeof buf};
    struct msghdr take = {
        .msg_iov = &in, .msg_iovlen = 1, .msg_control = got, .msg_controllen = sizeof got};
    recvmsg(pair[1], &take, MSG_CMSG_CLOEXEC);
    int passed;
    memcpy(&passed, CMSG_DATA(CMSG_FIRSTHDR(&take)), sizeof passed);
    close(passed);
    close(pair[0]);
    close(pair[1]);

    int dfd = socket(AF_UNIX, SOCK_DGRAM, 0);
    struct sockaddr_un un = {.sun_family = AF_UNIX};
    memcpy(un.sun_path, "\0tracer-corpus", 14);
    bind(dfd, (struct sockaddr *)&un, offsetof(struct sockaddr_un, sun_path) + 14);
    sendto(dfd, "y", 1, 0, (struct sockaddr *)&un, offsetof(struct sockaddr_un, sun_path) + 14);
    room = sizeof any;
    recvfrom(dfd, buf, sizeof buf, 0, (struct sockaddr *)&any, &room);
    struct msghdr named = {.msg_name = &un,
                           .msg_namelen = offsetof(struct sockaddr_un, sun_path) + 14,
                           .msg_iov = &z,
                           .msg_iovlen = 1};
    sendmsg(dfd, &named, 0);
    struct msghdr from = {
        .msg_name = &any, .msg_namelen = sizeof any, .msg_iov = &in, .msg_iovlen = 1};
    recvmsg(dfd, &from, 0);
    recvmsg(-1, &from, 0);
    close(dfd);

    /* A UDP datagram to itself over 127.0.0.1 with its TTL, TOS and packet info asked for:
     * control messages of SOL_IP (TOS 0x10 set by the sender, the default TTL 64, lo). */
    int r = socket(AF_INET, SOCK_DGRAM, 0), s = socket(AF_INET, SOCK_DGRAM, 0), on = 1;
    struct sockaddr_in self = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    room = sizeof self;
    bind(r, (struct sockaddr *)&self, sizeof self);
    getsockname(r, (struct sockaddr *)&self, &room);
    setsockopt(r, IPPROTO_IP, IP_RECVTTL, &on, sizeof on);
    setsockopt(r, IPPROTO_IP, IP_RECVTOS, &on, sizeof on);
    setsockopt(r, IPPROTO_IP, IP_PKTINFO, &on, sizeof on);
    int tos = 0x10;
    setsockopt(s, IPPROTO_IP, IP_TOS, &tos, sizeof tos);
    sendto(s, "x", 1, 0, (struct sockaddr *)&self, sizeof self);
    char info[128];
    struct msghdr ip = {
        .msg_iov = &in, .msg_iovlen = 1, .msg_control = info, .msg_controllen = sizeof info};
    recvmsg(r, &ip, 0);
    close(r);
    close(s);
    return 0;
}
