/* The benchmark's reference points, compiled by run.py at bench time.
 *
 *   afp_tool forward IF_A IF_B SECONDS   minimal AF_PACKET forwarder: every frame
 *                                        received on one interface is sent on the
 *                                        other (recvmmsg/sendmmsg, no P4 work)
 *   afp_tool forward-ring IF_A IF_B SECONDS
 *                                        the same, receiving from a PACKET_MMAP
 *                                        ring (TPACKET_V2, softswitch's geometry)
 *   afp_tool forward-ring-spin IF_A IF_B SECONDS
 *                                        the same, never sleeping (busy-polls its
 *                                        rings, as softswitch's busy_poll)
 *   afp_tool blast IF SECONDS HEXFRAME   sends one frame as fast as possible
 *   afp_tool train IF COUNT GAP_NS HEXFRAME
 *                                        sends COUNT copies of a frame, one every
 *                                        GAP_NS, numbered 0.. in the 4 bytes at
 *                                        SEQ_OFFSET (the link-timing frames)
 *   afp_tool send-on-time IF COUNT GAP_NS HEXFRAME
 *                                        sends frame i (numbered as train's) when
 *                                        CLOCK_REALTIME reaches first + i * GAP_NS,
 *                                        spinning, never sleeping; prints the
 *                                        frames sent and the first deadline (ns):
 *                                        the departure floor of any sender here
 *   afp_tool deadlines COUNT PERIOD_NS SPIN_NS
 *                                        meets COUNT deadlines PERIOD_NS apart:
 *                                        sleeps (timerfd) to SPIN_NS before each,
 *                                        spins the rest, and prints how late the
 *                                        first clock read at or past it came, one
 *                                        value (ns) per line: the machine's floor
 *                                        for a thread that sends on a deadline
 *
 * The others print how many frames they moved. Same socket set-up as the engine:
 * bound per interface, PACKET_IGNORE_OUTGOING, non-blocking, batches of 64. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <errno.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#ifndef PACKET_IGNORE_OUTGOING
#define PACKET_IGNORE_OUTGOING 23
#endif
#define BATCH 64
#define FRAME 9216
/* first 4 bytes of the UDP payload of an untagged IPv4 frame without options */
#define SEQ_OFFSET 42
/* receive ring geometry, as softswitch's (engine/src/afpacket.rs) */
#define RING_SLOT 2048
#define RING_BLOCK (64 * 1024)
#define RING_SLOTS 4096

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

static unsigned char *map_rx_ring(int fd) {
    int version = TPACKET_V2;
    struct tpacket_req req = {RING_BLOCK, RING_SLOTS * RING_SLOT / RING_BLOCK, RING_SLOT, RING_SLOTS};
    if (setsockopt(fd, SOL_PACKET, PACKET_VERSION, &version, sizeof version) < 0 ||
        setsockopt(fd, SOL_PACKET, PACKET_RX_RING, &req, sizeof req) < 0) {
        perror("PACKET_RX_RING");
        exit(1);
    }
    void *ring = mmap(NULL, RING_SLOTS * RING_SLOT, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (ring == MAP_FAILED) { perror("mmap"); exit(1); }
    return ring;
}

static struct tpacket2_hdr *ring_slot(unsigned char *ring, unsigned i) {
    return (struct tpacket2_hdr *)(ring + (i % RING_SLOTS) * RING_SLOT);
}

/* Each turn sends the frames the kernel has handed over (up to BATCH) with
 * one sendmmsg straight from the ring, then hands their slots back. */
/* poll_ms: how long to sleep in poll for a frame; 0 busy-polls. */
static long forward_ring(const char *a, const char *b, double seconds, int poll_ms) {
    int fd[2] = {open_port(a), open_port(b)};
    unsigned char *ring[2] = {map_rx_ring(fd[0]), map_rx_ring(fd[1])};
    unsigned next[2] = {0, 0};
    long moved = 0;
    double end = now_s() + seconds;
    struct pollfd pfd[2] = {{fd[0], POLLIN, 0}, {fd[1], POLLIN, 0}};
    while (now_s() < end) {
        if (poll_ms && poll(pfd, 2, poll_ms) <= 0) continue;
        for (int s = 0; s < 2; s++) {
            int n = 0;
            for (; n < BATCH; n++) {
                struct tpacket2_hdr *h = ring_slot(ring[s], next[s] + n);
                if (!(__atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE) & TP_STATUS_USER)) break;
                iov[s][n] = (struct iovec){(unsigned char *)h + h->tp_mac, h->tp_snaplen};
                memset(&tx[n], 0, sizeof tx[n]);
                tx[n].msg_hdr.msg_iov = &iov[s][n];
                tx[n].msg_hdr.msg_iovlen = 1;
            }
            if (!n) continue;
            int sent = sendmmsg(fd[1 - s], tx, n, 0);
            if (sent > 0) moved += sent;
            for (int i = 0; i < n; i++)
                __atomic_store_n(&ring_slot(ring[s], next[s] + i)->tp_status, TP_STATUS_KERNEL, __ATOMIC_RELEASE);
            next[s] = (next[s] + n) % RING_SLOTS;
        }
    }
    return moved;
}

static size_t parse_frame(const char *hex, unsigned char *frame) {
    size_t len = strlen(hex) / 2;
    if (len > FRAME) { fprintf(stderr, "frame too long\n"); exit(1); }
    for (size_t i = 0; i < len; i++) sscanf(hex + 2 * i, "%2hhx", &frame[i]);
    return len;
}

static long blast(const char *ifname, double seconds, const char *hex) {
    int fd = open_port(ifname);
    unsigned char frame[FRAME];
    size_t len = parse_frame(hex, frame);
    long sent = 0;
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

/* Frame i leaves at start + i * gap (absolute sleeps, so late wake-ups do not
 * accumulate); the receiving ends time-stamp each frame themselves, so the
 * spacing only needs to be right on average. */
static long train(const char *ifname, long count, long gap_ns, const char *hex) {
    int fd = open_port(ifname);
    unsigned char frame[FRAME];
    size_t len = parse_frame(hex, frame);
    struct timespec at;
    long sent = 0;
    if (len < SEQ_OFFSET + 4) { fprintf(stderr, "frame too short for a sequence number\n"); exit(1); }
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    clock_gettime(CLOCK_MONOTONIC, &at);
    while (sent < count) {
        uint32_t seq = htonl((uint32_t)sent);
        memcpy(frame + SEQ_OFFSET, &seq, 4);
        if (send(fd, frame, len, 0) < 0) {
            if (errno != EAGAIN && errno != ENOBUFS) { perror("send"); exit(1); }
            usleep(20); /* device queue full: the same frame again */
            continue;
        }
        sent++;
        at.tv_nsec += gap_ns;
        at.tv_sec += at.tv_nsec / 1000000000L;
        at.tv_nsec %= 1000000000L;
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, NULL);
    }
    return sent;
}

static uint64_t monotonic_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}

static uint64_t realtime_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}

/* A sender that is never late on its own account: it spins to each deadline
 * (the realtime clock, as the kernel's receive stamps) and sends at once, so
 * a receiver's stamp minus the deadline is what the send path itself adds. */
static void send_on_time(const char *ifname, long count, long gap_ns, const char *hex) {
    int fd = open_port(ifname);
    unsigned char frame[FRAME];
    size_t len = parse_frame(hex, frame);
    long sent = 0;
    if (len < SEQ_OFFSET + 4) { fprintf(stderr, "frame too short for a sequence number\n"); exit(1); }
    uint64_t first = realtime_ns() + 1000000ULL;
    while (sent < count) {
        uint64_t due = first + (uint64_t)sent * (uint64_t)gap_ns;
        uint32_t seq = htonl((uint32_t)sent);
        memcpy(frame + SEQ_OFFSET, &seq, 4);
        while (realtime_ns() < due) {}
        if (send(fd, frame, len, 0) < 0) { perror("send"); exit(1); }
        sent++;
    }
    printf("%ld %llu\n", sent, (unsigned long long)first);
}

/* What a switch thread pinned to this CPU can achieve at best: it sleeps as
 * softswitch does (absolute timerfd, 1 ns slack) until SPIN_NS before each
 * deadline, then spins. With SPIN_NS = 0 the lateness is the timer wake-up's
 * (cyclictest's measure); with SPIN_NS = PERIOD_NS the thread never sleeps and
 * only preemption (other tasks, interrupts, the hypervisor) makes it late. */
static void deadlines(long count, long period_ns, long spin_ns) {
    int fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
    uint64_t *late = malloc(count * sizeof *late);
    uint64_t due = monotonic_ns() + (uint64_t)period_ns;
    if (fd < 0 || !late) { perror("deadlines"); exit(1); }
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    for (long i = 0; i < count; i++, due += (uint64_t)period_ns) {
        uint64_t wake = due - (uint64_t)spin_ns, now = monotonic_ns(), ticks;
        if (spin_ns < period_ns && wake > now) {
            struct itimerspec at = {{0, 0}, {(time_t)(wake / 1000000000ULL), (long)(wake % 1000000000ULL)}};
            timerfd_settime(fd, TFD_TIMER_ABSTIME, &at, NULL);
            if (read(fd, &ticks, sizeof ticks) < 0) { perror("timerfd read"); exit(1); }
        }
        while ((now = monotonic_ns()) < due) {}
        late[i] = now - due;
    }
    for (long i = 0; i < count; i++) printf("%llu\n", (unsigned long long)late[i]);
    free(late);
}

int main(int argc, char **argv) {
    if (argc == 5 && !strcmp(argv[1], "forward")) {
        printf("%ld\n", forward(argv[2], argv[3], atof(argv[4])));
    } else if (argc == 5 && !strcmp(argv[1], "forward-ring")) {
        printf("%ld\n", forward_ring(argv[2], argv[3], atof(argv[4]), 100));
    } else if (argc == 5 && !strcmp(argv[1], "forward-ring-spin")) {
        printf("%ld\n", forward_ring(argv[2], argv[3], atof(argv[4]), 0));
    } else if (argc == 5 && !strcmp(argv[1], "blast")) {
        printf("%ld\n", blast(argv[2], atof(argv[3]), argv[4]));
    } else if (argc == 6 && !strcmp(argv[1], "train")) {
        printf("%ld\n", train(argv[2], atol(argv[3]), atol(argv[4]), argv[5]));
    } else if (argc == 6 && !strcmp(argv[1], "send-on-time")) {
        send_on_time(argv[2], atol(argv[3]), atol(argv[4]), argv[5]);
    } else if (argc == 5 && !strcmp(argv[1], "deadlines")) {
        deadlines(atol(argv[2]), atol(argv[3]), atol(argv[4]));
    } else {
        fprintf(stderr, "usage: afp_tool forward|forward-ring|forward-ring-spin IF_A IF_B SECONDS | blast IF SECONDS HEXFRAME"
                        " | train|send-on-time IF COUNT GAP_NS HEXFRAME | deadlines COUNT PERIOD_NS SPIN_NS\n");
        return 2;
    }
    return 0;
}
