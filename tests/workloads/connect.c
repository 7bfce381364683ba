/* One TCP connection over loopback, for the member reads of tcp_connect's socket
 * (tests/vm_kprobe.rs): listens on 127.0.0.1 at a port the kernel picks, connects to it,
 * prints "LOCAL_PORT SERVER_PORT" (host byte order), then accepts it (tcpaccept's example). Brings the loopback interface up first
 * when it is down (the test VMs boot with it down). */
#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

static int loopback_up(void) {
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    strcpy(ifr.ifr_name, "lo");
    if (fd < 0 || ioctl(fd, SIOCGIFFLAGS, &ifr) < 0)
        return -1;
    if (!(ifr.ifr_flags & IFF_UP)) {
        ifr.ifr_flags |= IFF_UP;
        if (ioctl(fd, SIOCSIFFLAGS, &ifr) < 0)
            return -1;
    }
    return close(fd);
}

int main(void) {
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof addr;
    if (loopback_up() < 0) {
        perror("lo up");
        return 1;
    }
    int server = socket(AF_INET, SOCK_STREAM, 0);
    if (server < 0 || bind(server, (struct sockaddr *)&addr, sizeof addr) < 0 ||
        listen(server, 1) < 0 || getsockname(server, (struct sockaddr *)&addr, &len) < 0) {
        perror("listen");
        return 1;
    }
    int client = socket(AF_INET, SOCK_STREAM, 0);
    if (client < 0 || connect(client, (struct sockaddr *)&addr, sizeof addr) < 0) {
        perror("connect");
        return 1;
    }
    struct sockaddr_in local;
    len = sizeof local;
    if (getsockname(client, (struct sockaddr *)&local, &len) < 0) {
        perror("getsockname");
        return 1;
    }
    printf("%u %u\n", ntohs(local.sin_port), ntohs(addr.sin_port));
    fflush(stdout);
    /* The server's side of it, for tcpaccept's inet_csk_accept: already queued, so at once. */
    int accepted = accept(server, NULL, NULL);
    if (accepted < 0) {
        perror("accept");
        return 1;
    }
    return 0;
}
