/* The benchmark's reference points, compiled by run.py at bench time.
 *
 *   afp_tool forward IF_A IF_B SECONDS   minimal AF_PACKET forwarder: every frame
 *                                        received on one interface is sent on the
 *                                        other (recvmmsg/sendmmsg, no P4 work)
 *   afp_tool blast IF SECONDS HEXFRAME   sends one frame as fast as possible
 *
 * Both print how many frames they moved. Same socket set-up as the engine:
 * bound per interface, PACKET_IGNORE_OUTGOING, non-blocking, batches of 64. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#ifndef PACKET_IGNORE_OUTGOING
#define PACKET_IGNORE_OUTGOING 23
#endif
#define BATCH 64
#define FRAME 9216

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static int open_port(const char *ifname) {
    int fd = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK, 0);
    int one = 1, buf = 4 << 20;
    struct sockaddr_ll sll = {0};
    if (fd < 0) { perror("socket"); exit(1); }
    setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof one);
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof buf);
    sll.sll_family = AF_PACKET;
    sll.sll_protocol = htons(ETH_P_ALL);
    sll.sll_ifindex = if_nametoindex(ifname);
    if (!sll.sll_ifindex || bind(fd, (struct sockaddr *)&sll, sizeof sll) < 0) {
        fprintf(stderr, "%s: cannot bind\n", ifname);
        exit(1);
    }
    return fd;
}

static unsigned char bufs[2][BATCH][FRAME];
static struct iovec iov[2][BATCH];
static struct mmsghdr rx[2][BATCH], tx[BATCH];

static long forward(const char *a, const char *b, double seconds) {
    int fd[2] = {open_port(a), open_port(b)};
    long moved = 0;
    double end = now_s() + seconds;
    struct pollfd pfd[2] = {{fd[0], POLLIN, 0}, {fd[1], POLLIN, 0}};
    while (now_s() < end) {
        if (poll(pfd, 2, 100) <= 0) continue;
        for (int s = 0; s < 2; s++) {
            if (!pfd[s].revents) continue;
            for (int i = 0; i < BATCH; i++) {
                iov[s][i] = (struct iovec){bufs[s][i], FRAME};
                memset(&rx[s][i], 0, sizeof rx[s][i]);
                rx[s][i].msg_hdr.msg_iov = &iov[s][i];
                rx[s][i].msg_hdr.msg_iovlen = 1;
            }
            int n = recvmmsg(fd[s], rx[s], BATCH, 0, NULL);
            if (n <= 0) continue;
            for (int i = 0; i < n; i++) {
                memset(&tx[i], 0, sizeof tx[i]);
                iov[s][i].iov_len = rx[s][i].msg_len;
                tx[i].msg_hdr.msg_iov = &iov[s][i];
                tx[i].msg_hdr.msg_iovlen = 1;
            }
            int sent = sendmmsg(fd[1 - s], tx, n, 0);
            if (sent > 0) moved += sent;
        }
    }
    return moved;
}

static long blast(const char *ifname, double seconds, const char *hex) {
    int fd = open_port(ifname);
    size_t len = strlen(hex) / 2;
    unsigned char frame[FRAME];
    long sent = 0;
    if (len > FRAME) { fprintf(stderr, "frame too long\n"); exit(1); }
    for (size_t i = 0; i < len; i++) sscanf(hex + 2 * i, "%2hhx", &frame[i]);
    for (int i = 0; i < BATCH; i++) {
        iov[0][i] = (struct iovec){frame, len};
        tx[i].msg_hdr.msg_iov = &iov[0][i];
        tx[i].msg_hdr.msg_iovlen = 1;
    }
    double end = now_s() + seconds;
    while (now_s() < end) {
        int n = sendmmsg(fd, tx, BATCH, 0);
        if (n > 0) sent += n;
        else usleep(50);
    }
    return sent;
}

int main(int argc, char **argv) {
    if (argc == 5 && !strcmp(argv[1], "forward")) {
        printf("%ld\n", forward(argv[2], argv[3], atof(argv[4])));
    } else if (argc == 5 && !strcmp(argv[1], "blast")) {
        printf("%ld\n", blast(argv[2], atof(argv[3]), argv[4]));
    } else {
        fprintf(stderr, "usage: afp_tool forward IF_A IF_B SECONDS | blast IF SECONDS HEXFRAME\n");
        return 2;
    }
    return 0;
}
