/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_ha_chan.c - the HA sync channel (ha_chan.h): two channels in one
 * process, over lo:
 *
 *	A 127.0.0.1:P  ---- TCP, TLS 1.3 PSK ---->  B 127.0.0.2:Q
 *	connects (its address is the lower)         accepts from 127.0.0.1 only
 *	                                       <--- strangers: plain TCP from 127.0.0.3,
 *	                                            and from 127.0.0.1 itself; a TLS
 *	                                            client of our own (the wire format)
 *
 * P and Q are drawn in 20000-60000, again on EADDRINUSE.  pump() polls the
 * channels that run (a node stopped without closing is not run) and runs
 * them, until a condition holds: every wait is for a condition, bounded in
 * time and in rounds; no sleeps.  Messages are checked as they arrive:
 * message i of a direction has a size (1..HA_CHAN_MSG_MAX) and bytes made
 * from i, so the receiver knows what must come next.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>

#include "ha_chan.h"

#define WAIT_MS		5000		/* any one event (valgrind included) */
#define BULK_MS		120000		/* 2 x 2000 messages of up to 20 KiB, under valgrind */
#define BULK_N		2000
#define BULK_QUEUE	(4u << 20)	/* the senders keep at most this much queued */
#define SLACK_MS	1000		/* past dead_ms, for a slow machine */
#define HB_MS		50		/* the timing tests' heartbeat and dead time */
#define DEAD_MS		300
#define MAX_ROUNDS	1000000

struct side {
	const char *name;
	struct ha_chan *c;
	bool run;		/* pumped; false: a node that stopped without closing */
	bool keep;		/* pump leaves its messages in the channel */
	unsigned ups, downs;	/* HA_CHAN_EV_UP, _DOWN seen */
	uint32_t seed;		/* of the messages it sends */
	uint32_t tx, rx;	/* messages sent; received, checked */
	struct side *peer;
};

/* How the pair is opened: B's key, the timers, out_max (0: defaults). */
struct opts {
	const uint8_t *psk_b;
	unsigned hb, dead;
	size_t out_max;
};

static struct side A = { .name = "A", .seed = 0xa11ce, .peer = NULL };
static struct side B = { .name = "B", .seed = 0xb0b, .peer = NULL };
static uint16_t port_a, port_b;
static const char *host_a = "127.0.0.1", *host_b = "127.0.0.2";
static struct opts opened;
static int extra_fd = -1;	/* polled with the channels (the raw TLS client) */
static uint8_t key[32], other_key[32];
static uint8_t rx_buf[HA_CHAN_MSG_MAX], want_buf[HA_CHAN_MSG_MAX];

static uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static uint32_t
mix(uint32_t x)
{
	x ^= x >> 16;
	x *= 0x7feb352d;
	x ^= x >> 15;
	x *= 0x846ca68b;
	return x ^ (x >> 16);
}

/* Message i of the direction seeded seed: its length, its bytes in buf. */
static size_t
msg_make(uint32_t seed, uint32_t i, uint8_t *buf)
{
	uint32_t h = mix(seed ^ mix(i));
	size_t len = 1 + h % HA_CHAN_MSG_MAX;

	for (size_t k = 0; k < len; k++) {
		if (k % 4 == 0)
			h = mix(h + (uint32_t)k);
		buf[k] = (uint8_t)(h >> (8 * (k % 4)));
	}
	return len;
}

static int
send_next(struct side *s)
{
	size_t len = msg_make(s->seed, s->tx, want_buf);
	int r = ha_chan_send(s->c, want_buf, len);

	if (r == 0)
		s->tx++;
	return r;
}

/* Every message waiting, checked against what the peer must have sent. */
static void
drain(struct side *s)
{
	ssize_t n;

	while ((n = ha_chan_recv(s->c, rx_buf, sizeof(rx_buf))) > 0) {
		size_t len = msg_make(s->peer->seed, s->rx, want_buf);

		if ((size_t)n != len || memcmp(rx_buf, want_buf, len) != 0)
			fail_msg("%s: message %u: %zd bytes, expected %zu%s", s->name, s->rx, n,
				 len, (size_t)n == len ? " (other bytes)" : "");
		s->rx++;
	}
	assert_int_equal(n, 0);
}

static void
step(struct side *s, uint64_t now)
{
	int ev = ha_chan_run(s->c, now);

	if (ev & HA_CHAN_EV_UP)
		s->ups++;
	if (ev & HA_CHAN_EV_DOWN)
		s->downs++;
	if (!s->keep)
		drain(s);
}

/* Poll and run the running channels until done(), at most ms: done's answer. */
static bool
pump(bool (*done)(void), unsigned ms)
{
	struct side *sides[2] = { &A, &B };
	uint64_t end = now_ms() + ms;

	for (unsigned round = 0; round < MAX_ROUNDS; round++) {
		struct pollfd pfd[5];
		uint64_t now = now_ms();
		int n = 0, t;

		if (done())
			return true;
		if (now >= end)
			return false;
		t = (int)(end - now);
		for (int i = 0; i < 2; i++) {
			int ct;

			if (!sides[i]->run || sides[i]->c == NULL)
				continue;
			n += ha_chan_pollfds(sides[i]->c, pfd + n, 2);
			ct = ha_chan_timeout_ms(sides[i]->c, now);
			if (ct >= 0 && ct < t)
				t = ct;
		}
		if (extra_fd >= 0)
			pfd[n++] = (struct pollfd){ .fd = extra_fd, .events = POLLIN };
		if (poll(pfd, (nfds_t)n, t) < 0 && errno != EINTR)
			fail_msg("poll: %s", strerror(errno));
		now = now_ms();
		for (int i = 0; i < 2; i++)
			if (sides[i]->run && sides[i]->c != NULL)
				step(sides[i], now);
	}
	return done();
}

static void
wait_for(bool (*done)(void), unsigned ms, const char *what)
{
	if (!pump(done, ms))
		fail_msg("%s: not within %u ms (A: %s; B: %s)", what, ms,
			 A.c ? ha_chan_why(A.c) : "closed", B.c ? ha_chan_why(B.c) : "closed");
}

static struct ha_chan *
open_node(struct side *s, const struct opts *o, char *err, size_t errlen)
{
	bool a = s == &A;
	const uint8_t *psk = a || o->psk_b == NULL ? key : o->psk_b;
	struct ha_chan_cfg cfg = { .psk = psk, .psk_len = 32, .hb_ms = o->hb, .dead_ms = o->dead,
				   .out_max = o->out_max };
	char local[32], peer[32];

	snprintf(local, sizeof(local), "%s:%u", a ? host_a : host_b, a ? port_a : port_b);
	snprintf(peer, sizeof(peer), "%s:%u", a ? host_b : host_a, a ? port_b : port_a);
	assert_int_equal(ha_chan_parse_addr(local, 0, &cfg.local, err, errlen), 0);
	assert_int_equal(ha_chan_parse_addr(peer, 0, &cfg.peer, err, errlen), 0);
	return ha_chan_open(&cfg, err, errlen);
}

/* A and B on fresh ports, drawn again while one is taken. */
static void
open_pair(const struct opts *o)
{
	char err[256];

	opened = *o;
	for (int try = 0; try < 50; try++) {
		int e;

		port_a = (uint16_t)(20000 + random() % 40001);
		port_b = (uint16_t)(20000 + random() % 40001);
		A.c = open_node(&A, o, err, sizeof(err));
		if (A.c == NULL && errno == EADDRINUSE)
			continue;
		if (A.c == NULL && errno == EADDRNOTAVAIL)
			skip();		/* no ::1 here */
		if (A.c == NULL)
			fail_msg("A: %s", err);
		B.c = open_node(&B, o, err, sizeof(err));
		e = errno;
		if (B.c != NULL) {
			A.run = B.run = true;
			return;
		}
		ha_chan_close(A.c);
		A.c = NULL;
		if (e != EADDRINUSE)
			fail_msg("B: %s", err);
	}
	fail_msg("no two free ports in 50 tries");
}

/* The node closed and opened again on the same address. */
static void
reopen(struct side *s)
{
	char err[256];

	ha_chan_close(s->c);
	s->c = open_node(s, &opened, err, sizeof(err));
	if (s->c == NULL)
		fail_msg("%s again: %s", s->name, err);
	s->run = true;
	s->tx = s->rx = 0;
	s->peer->tx = s->peer->rx = 0;
}

static bool
both_up(void)
{
	return A.c && B.c && ha_chan_up(A.c) && ha_chan_up(B.c);
}

static bool
a_down(void)
{
	return A.downs > 0;
}

static bool
b_down(void)
{
	return B.downs > 0;
}

/* A plain TCP connection from src to B (or A), with something that is not
 * TLS on it.  Blocking connect: the kernel finishes it on lo at once. */
static int
stranger(const char *src, bool to_b)
{
	static const char junk[] = "GET / HTTP/1.0\r\n\r\n\x16\x03\x01\xff\xff garbage";
	struct sockaddr_in sa = { .sin_family = AF_INET };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	inet_pton(AF_INET, src, &sa.sin_addr);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	inet_pton(AF_INET, to_b ? "127.0.0.2" : "127.0.0.1", &sa.sin_addr);
	sa.sin_port = htons(to_b ? port_b : port_a);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(send(fd, junk, sizeof(junk), MSG_NOSIGNAL), (ssize_t)sizeof(junk));
	return fd;
}

static int
fcntl_nonblock(int fd)
{
	return fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

/* The stranger's connection was closed by the channel (EOF or a reset; a
 * TLS alert may come first). */
static void
expect_closed(int fd)
{
	for (int i = 0; i < 100; i++) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		char b[256];

		assert_int_equal(poll(&p, 1, WAIT_MS), 1);
		if (recv(fd, b, sizeof(b), MSG_DONTWAIT) <= 0) {
			close(fd);
			return;
		}
	}
	fail_msg("the stranger's connection is still open");
}

static int
setup(void **state)
{
	(void)state;
	A = (struct side){ .name = "A", .seed = 0xa11ce, .peer = &B };
	B = (struct side){ .name = "B", .seed = 0xb0b, .peer = &A };
	host_a = "127.0.0.1";
	host_b = "127.0.0.2";
	extra_fd = -1;
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	ha_chan_close(A.c);
	ha_chan_close(B.c);
	A.c = B.c = NULL;
	return 0;
}

/* ---- (1) the same key: up, and messages both ways, whole and in order ---- */

static bool
bulk_fed(void)
{
	struct side *sides[2] = { &A, &B };

	assert_int_equal(A.downs + B.downs, 0);
	for (int i = 0; i < 2; i++)
		for (int k = 0; k < 16 && sides[i]->tx < BULK_N
		     && ha_chan_queued(sides[i]->c) < BULK_QUEUE; k++)
			assert_int_equal(send_next(sides[i]), 0);
	return A.rx == BULK_N && B.rx == BULK_N;
}

static bool
one_each(void)
{
	return A.rx == 1 && B.rx == 1;
}

static void
test_up_and_messages(void **state)
{
	struct opts o = { 0 };
	uint64_t t0 = now_ms();

	(void)state;
	open_pair(&o);
	wait_for(both_up, WAIT_MS, "both up");
	assert_int_equal(A.ups, 1);
	assert_int_equal(B.ups, 1);
	assert_true(ha_chan_up_since(A.c) >= t0 && ha_chan_up_since(B.c) >= t0);
	assert_int_equal(ha_chan_refused(B.c), 0);
	assert_int_equal(send_next(&A), 0);
	assert_int_equal(send_next(&B), 0);
	wait_for(one_each, WAIT_MS, "a message each way");
	wait_for(bulk_fed, BULK_MS, "2 x 2000 messages");
	print_message("2 x %u messages of 1..%u bytes in %" PRIu64 " ms\n", BULK_N,
		      HA_CHAN_MSG_MAX, now_ms() - t0);
}

/* IPv6, both on ::1: the ports decide who connects; the address check passes. */
static void
test_ipv6_one_host(void **state)
{
	struct opts o = { 0 };

	(void)state;
	host_a = host_b = "[::1]";
	open_pair(&o);
	wait_for(both_up, WAIT_MS, "both up on ::1");
	assert_int_equal(send_next(&A), 0);
	assert_int_equal(send_next(&B), 0);
	wait_for(one_each, WAIT_MS, "a message each way");
	assert_int_equal(ha_chan_refused(A.c) + ha_chan_refused(B.c), 0);
}

/* ---- (2) a wrong key: never up, and the handshake named ---- */

static bool
both_failed_handshake(void)
{
	return strstr(ha_chan_why(A.c), "handshake") && strstr(ha_chan_why(B.c), "handshake");
}

static bool
any_up(void)
{
	return A.ups + B.ups > 0;
}

static void
test_wrong_key(void **state)
{
	struct opts o = { .psk_b = other_key };

	(void)state;
	open_pair(&o);
	wait_for(both_failed_handshake, WAIT_MS, "both see the handshake fail");
	print_message("A: %s\nB: %s\n", ha_chan_why(A.c), ha_chan_why(B.c));
	assert_non_null(strstr(ha_chan_why(A.c), "(wrong sync key?)"));
	assert_non_null(strstr(ha_chan_why(B.c), "(wrong sync key?)"));
	assert_false(pump(any_up, 600));	/* A retries meanwhile: never up */
	assert_false(ha_chan_up(A.c) || ha_chan_up(B.c));
	assert_int_equal(send_next(&A), -ENOTCONN);
}

/* ---- (3) strangers refused; the listener keeps working ---- */

static uint64_t refused_want;

static bool
b_refused(void)
{
	return ha_chan_refused(B.c) == refused_want;
}

static bool
a_refused(void)
{
	return ha_chan_refused(A.c) == refused_want;
}

static bool
b_handshake_failed(void)
{
	return strstr(ha_chan_why(B.c), "handshake") != NULL;
}

static bool
b_got_one(void)
{
	return B.rx == 1;
}

static void
test_strangers(void **state)
{
	struct opts o = { 0 };
	int fd;

	(void)state;
	open_pair(&o);
	A.run = false;			/* B alone first: nothing in its way */
	fd = stranger("127.0.0.3", true);
	refused_want = 1;
	wait_for(b_refused, WAIT_MS, "B refuses 127.0.0.3");
	assert_string_equal(ha_chan_why(B.c), "connection from 127.0.0.3 refused: not the peer");
	expect_closed(fd);

	fd = stranger("127.0.0.1", true);	/* the peer's address, no TLS */
	wait_for(b_handshake_failed, WAIT_MS, "the handshake with junk fails");
	print_message("B: %s\n", ha_chan_why(B.c));
	assert_int_equal(ha_chan_refused(B.c), 1);	/* accepted, then failed */
	expect_closed(fd);

	A.run = true;
	wait_for(both_up, WAIT_MS, "A and B up after the strangers");

	fd = stranger("127.0.0.1", true);	/* a second connection: the first not disturbed */
	refused_want = 2;
	wait_for(b_refused, WAIT_MS, "B refuses a second connection");
	expect_closed(fd);
	fd = stranger("127.0.0.2", false);	/* the connector accepts nothing */
	refused_want = 1;
	wait_for(a_refused, WAIT_MS, "A refuses its peer's connection");
	expect_closed(fd);
	assert_int_equal(send_next(&A), 0);
	wait_for(b_got_one, WAIT_MS, "a message after the refusals");
	assert_true(both_up());
	assert_int_equal(A.downs + B.downs, 0);
	assert_int_equal(A.ups + B.ups, 2);
}

/* ---- (4) one side closed: the other down at once, up again with a new one ---- */

static void
expect_down_after_close(struct side *closed, struct side *other, bool (*other_down)(void))
{
	uint64_t t0 = now_ms(), t;

	ha_chan_close(closed->c);
	closed->c = NULL;
	wait_for(other_down, DEAD_MS + SLACK_MS, "down after the peer closed");
	t = now_ms() - t0;
	print_message("%s down %" PRIu64 " ms after %s closed: %s\n", other->name, t,
		      closed->name, ha_chan_why(other->c));
	assert_true(t <= DEAD_MS + SLACK_MS);
	assert_false(ha_chan_up(other->c));
	assert_int_equal(ha_chan_send(other->c, "x", 1), -ENOTCONN);
	assert_int_equal(ha_chan_queued(other->c), 0);
	reopen(closed);
	wait_for(both_up, WAIT_MS, "up again with a new channel");
	assert_int_equal(send_next(&A), 0);
	assert_int_equal(send_next(&B), 0);
	wait_for(one_each, WAIT_MS, "a message each way after the reconnect");
}

static void
test_peer_closed(void **state)
{
	struct opts o = { .hb = HB_MS, .dead = DEAD_MS };

	(void)state;
	open_pair(&o);
	wait_for(both_up, WAIT_MS, "both up");
	expect_down_after_close(&B, &A, a_down);	/* the acceptor closes */
	expect_down_after_close(&A, &B, b_down);	/* the connector closes */
}

/* ---- (5) one side stops (not closed): silent after dead_ms ---- */

static bool
any_down(void)
{
	return A.downs + B.downs > 0;
}

static void
test_peer_stopped(void **state)
{
	struct opts o = { .hb = HB_MS, .dead = DEAD_MS };
	uint64_t t0, t;

	(void)state;
	open_pair(&o);
	wait_for(both_up, WAIT_MS, "both up");
	/* idle, both running: the heartbeats keep it up for three dead times */
	assert_false(pump(any_down, 3 * DEAD_MS));
	assert_true(both_up());
	B.run = false;
	t0 = now_ms();
	wait_for(a_down, DEAD_MS + SLACK_MS, "A gives up on a silent B");
	t = now_ms() - t0;
	print_message("A down %" PRIu64 " ms after B stopped: %s\n", t, ha_chan_why(A.c));
	assert_string_equal(ha_chan_why(A.c), "peer silent for 300 ms");
	/* B's last heartbeat came at most HB_MS (and a round) before it stopped */
	assert_true(t >= DEAD_MS / 2);
	assert_true(t <= DEAD_MS + SLACK_MS);
	B.run = true;			/* B comes back: finds its connection gone, accepts anew */
	wait_for(both_up, WAIT_MS, "up again after B resumes");
	assert_int_equal(B.downs, 1);
}

/* ---- (6) what ha_chan_send refuses, and ha_chan_recv's cap ---- */

static unsigned got6;

static bool
b_got_four(void)
{
	static const size_t sizes[4] = { HA_CHAN_MSG_MAX, HA_CHAN_MSG_MAX, HA_CHAN_MSG_MAX, 4080 };
	ssize_t n;

	if (got6 == 0 && ha_chan_recv(B.c, rx_buf, 10) == -EMSGSIZE)
		got6 = 100;		/* the first is in, too long for 10 bytes: left there */
	while (got6 >= 100 && (n = ha_chan_recv(B.c, rx_buf, sizeof(rx_buf))) > 0) {
		assert_int_equal(n, sizes[got6 - 100]);
		assert_int_equal(rx_buf[0], got6 - 100);
		got6++;
	}
	return got6 == 104;
}

static void
test_send_errors(void **state)
{
	static uint8_t msg[HA_CHAN_MSG_MAX + 1];
	struct opts o = { .out_max = 64 * 1024 };
	size_t frame = 4 + HA_CHAN_MSG_MAX;

	(void)state;
	open_pair(&o);
	B.keep = true;
	assert_int_equal(ha_chan_send(A.c, msg, 10), -ENOTCONN);
	assert_int_equal(ha_chan_send(A.c, msg, 0), -EMSGSIZE);
	assert_int_equal(ha_chan_send(A.c, msg, HA_CHAN_MSG_MAX + 1), -EMSGSIZE);
	assert_int_equal(ha_chan_recv(B.c, rx_buf, sizeof(rx_buf)), 0);
	wait_for(both_up, WAIT_MS, "both up");
	assert_int_equal(ha_chan_send(A.c, msg, 0), -EMSGSIZE);
	assert_int_equal(ha_chan_send(A.c, msg, HA_CHAN_MSG_MAX + 1), -EMSGSIZE);
	for (uint8_t i = 0; i < 3; i++) {	/* not run in between: nothing leaves */
		msg[0] = i;
		assert_int_equal(ha_chan_send(A.c, msg, HA_CHAN_MSG_MAX), 0);
	}
	assert_int_equal(ha_chan_send(A.c, msg, HA_CHAN_MSG_MAX), -ENOBUFS);
	msg[0] = 3;
	assert_int_equal(ha_chan_send(A.c, msg, 64 * 1024 - 3 * frame - 4), 0);	/* to the byte */
	assert_int_equal(ha_chan_queued(A.c), 64 * 1024);
	assert_int_equal(ha_chan_send(A.c, msg, 1), -ENOBUFS);
	got6 = 0;
	wait_for(b_got_four, WAIT_MS, "B receives the four");
	assert_int_equal(ha_chan_queued(A.c), 0);
	assert_int_equal(ha_chan_recv(B.c, rx_buf, sizeof(rx_buf)), 0);
}

/* ha_chan_open's checks. */
static void
test_open_errors(void **state)
{
	struct ha_chan_cfg cfg = { .psk = key, .psk_len = 32 };
	char err[256];

	(void)state;
	assert_int_equal(ha_chan_parse_addr("127.0.0.1:4510", 0, &cfg.local, err, sizeof(err)), 0);
	assert_int_equal(ha_chan_parse_addr("127.0.0.1:4510", 0, &cfg.peer, err, sizeof(err)), 0);
	assert_null(ha_chan_open(&cfg, err, sizeof(err)));
	assert_string_equal(err, "local and peer sync addresses are the same");
	assert_int_equal(ha_chan_parse_addr("::1", 4510, &cfg.peer, err, sizeof(err)), 0);
	assert_null(ha_chan_open(&cfg, err, sizeof(err)));
	assert_non_null(strstr(err, "both IPv4 or both IPv6"));
	assert_int_equal(ha_chan_parse_addr("127.0.0.2", 4510, &cfg.peer, err, sizeof(err)), 0);
	cfg.psk_len = 31;
	assert_null(ha_chan_open(&cfg, err, sizeof(err)));
	assert_string_equal(err, "sync key: 32 to 64 bytes, not 31");
	cfg.psk_len = 32;
	cfg.hb_ms = 1000;
	assert_null(ha_chan_open(&cfg, err, sizeof(err)));
	assert_int_equal(errno, EINVAL);
	assert_non_null(strstr(err, "must be below the dead time"));
}

/* ---- (7) addresses ---- */

static void
test_parse_addr(void **state)
{
	static const struct {
		const char *s;
		int family;		/* 0: refused */
		const char *addr;
		uint16_t port;
	} cases[] = {
		{ "192.0.2.1", AF_INET, "192.0.2.1", 4510 },
		{ "192.0.2.1:4511", AF_INET, "192.0.2.1", 4511 },
		{ "192.0.2.1:65535", AF_INET, "192.0.2.1", 65535 },
		{ "2001:db8::1", AF_INET6, "2001:db8::1", 4510 },
		{ "[2001:db8::1]:4512", AF_INET6, "2001:db8::1", 4512 },
		{ "[2001:db8::1]", AF_INET6, "2001:db8::1", 4510 },
		{ "::1", AF_INET6, "::1", 4510 },
		{ "::ffff:192.0.2.1", AF_INET6, "::ffff:192.0.2.1", 4510 },
		{ "", 0, NULL, 0 },
		{ ":4510", 0, NULL, 0 },
		{ "192.0.2.1:", 0, NULL, 0 },
		{ "192.0.2.1:0", 0, NULL, 0 },
		{ "192.0.2.1:65536", 0, NULL, 0 },
		{ "192.0.2.1:45x", 0, NULL, 0 },
		{ "192.0.2.1:-1", 0, NULL, 0 },
		{ "192.0.2.256", 0, NULL, 0 },
		{ "192.0.2", 0, NULL, 0 },
		{ "gw-b.example:4510", 0, NULL, 0 },	/* numeric only */
		{ "[192.0.2.1]:4510", 0, NULL, 0 },	/* brackets are for IPv6 */
		{ "[2001:db8::1", 0, NULL, 0 },
		{ "[2001:db8::1]4510", 0, NULL, 0 },
		{ "[]:4510", 0, NULL, 0 },
		{ "2001:db8::1:4510x", 0, NULL, 0 },
		{ "fe80::1%eth0", 0, NULL, 0 },		/* no scope */
		{ "2001:db8:::1", 0, NULL, 0 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct sockaddr_storage ss;
		char err[256] = "", a[INET6_ADDRSTRLEN] = "";
		int r = ha_chan_parse_addr(cases[i].s, 4510, &ss, err, sizeof(err));
		const void *ip = &((struct sockaddr_in *)&ss)->sin_addr;
		uint16_t port = ((struct sockaddr_in *)&ss)->sin_port;

		if (cases[i].family == 0) {
			if (r != -1 || err[0] == '\0')
				fail_msg("'%s': accepted", cases[i].s);
			continue;
		}
		if (r != 0)
			fail_msg("'%s': %s", cases[i].s, err);
		assert_int_equal(ss.ss_family, cases[i].family);
		if (ss.ss_family == AF_INET6) {
			ip = &((struct sockaddr_in6 *)&ss)->sin6_addr;
			port = ((struct sockaddr_in6 *)&ss)->sin6_port;
		}
		inet_ntop(ss.ss_family, ip, a, sizeof(a));
		assert_string_equal(a, cases[i].addr);
		assert_int_equal(ntohs(port), cases[i].port);
	}
}

/* ---- the wire format, from a TLS client of our own ---- */

/*
 * The PSK as ha_chan.h documents it, made here from the text and not from
 * ha_chan.c: HKDF-Extract(salt "dpvpn ha-chan v1", key) with SHA-384,
 * identity "dpvpn-ha-sync", TLS_AES_256_GCM_SHA384.
 */
static int
raw_use_session(SSL *ssl, const EVP_MD *md, const unsigned char **id, size_t *idlen,
		SSL_SESSION **sess)
{
	static const unsigned char suite[2] = { 0x13, 0x02 };
	static const char salt[] = "dpvpn ha-chan v1";
	uint8_t psk[48];
	size_t len = 0;
	SSL_SESSION *s = SSL_SESSION_new();

	(void)md;
	assert_non_null(EVP_Q_mac(NULL, "HMAC", NULL, "SHA384", NULL, salt, strlen(salt), key,
				  sizeof(key), psk, sizeof(psk), &len));
	assert_int_equal(len, sizeof(psk));
	assert_true(SSL_SESSION_set1_master_key(s, psk, len));
	assert_true(SSL_SESSION_set_cipher(s, SSL_CIPHER_find(ssl, suite)));
	assert_true(SSL_SESSION_set_protocol_version(s, TLS1_3_VERSION));
	*id = (const unsigned char *)"dpvpn-ha-sync";
	*idlen = strlen("dpvpn-ha-sync");
	*sess = s;
	return 1;
}

static SSL *raw;
static size_t raw_zeros;	/* heartbeat bytes the raw client read */
static bool sh_versions, sh_psk, sh_key_share;	/* the ServerHello's extensions */

/*
 * The ServerHello as it went by, in clear (supported_versions, 43, shows
 * the walk through the extensions works): pre_shared_key (41) says the key
 * was taken, key_share (51) that an ephemeral (EC)DHE share came with it
 * (psk_dhe_ke: forward secrecy); psk_ke would have no key_share.
 */
static void
raw_saw(int write_p, int version, int type, const void *buf, size_t len, SSL *ssl, void *arg)
{
	const uint8_t *p = buf, *end = p + len;
	size_t off = 4 + 2 + 32;	/* type, length; version, random */

	(void)version;
	(void)ssl;
	(void)arg;
	if (write_p || type != SSL3_RT_HANDSHAKE || len < off + 1 || p[0] != 2)
		return;
	off += 1 + p[off] + 2 + 1 + 2;	/* session id, cipher suite, compression, ext length */
	for (p += off; p + 4 <= end; p += 4 + (p[2] << 8 | p[3])) {
		unsigned ext = (unsigned)(p[0] << 8 | p[1]);

		sh_versions |= ext == 43;
		sh_psk |= ext == 41;
		sh_key_share |= ext == 51;
	}
}

static bool
raw_up(void)
{
	int r = SSL_do_handshake(raw);

	if (r != 1 && SSL_get_error(raw, r) != SSL_ERROR_WANT_READ)
		fail_msg("raw client: handshake failed");
	return r == 1 && ha_chan_up(B.c);
}

/* Two heartbeats (8 zero bytes) and nothing else. */
static bool
raw_heard_heartbeats(void)
{
	uint8_t b[64];
	int n;

	while ((n = SSL_read(raw, b, sizeof(b))) > 0)
		for (int i = 0; i < n; i++, raw_zeros++)
			assert_int_equal(b[i], 0);
	return raw_zeros >= 8;
}

static void
test_wire(void **state)
{
	static const uint8_t msg[] = { 0, 0, 0, 5, 'h', 'e', 'l', 'l', 'o' };
	static const uint8_t too_long[] = { 0, 0, 0x50, 0x01 };		/* 20481 */
	struct opts o = { .hb = HB_MS, .dead = DEAD_MS };
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	struct sockaddr_in sa = { .sin_family = AF_INET };
	char got[8];

	(void)state;
	open_pair(&o);
	A.run = false;
	B.keep = true;
	SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION);
	SSL_CTX_set_ciphersuites(ctx, "TLS_AES_256_GCM_SHA384");
	SSL_CTX_set_psk_use_session_callback(ctx, raw_use_session);
	SSL_CTX_set_msg_callback(ctx, raw_saw);
	sh_versions = sh_psk = sh_key_share = false;
	extra_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	assert_int_equal(bind(extra_fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	inet_pton(AF_INET, "127.0.0.2", &sa.sin_addr);
	sa.sin_port = htons(port_b);
	assert_int_equal(connect(extra_fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(fcntl_nonblock(extra_fd), 0);
	raw = SSL_new(ctx);
	SSL_set_fd(raw, extra_fd);
	SSL_set_connect_state(raw);
	wait_for(raw_up, WAIT_MS, "the raw client's handshake");
	assert_true(SSL_session_reused(raw));	/* the PSK was used */
	assert_true(sh_versions);
	assert_true(sh_psk);
	assert_true(sh_key_share);

	raw_zeros = 0;
	wait_for(raw_heard_heartbeats, WAIT_MS, "two heartbeats");
	assert_int_equal(SSL_write(raw, msg, sizeof(msg)), sizeof(msg));
	assert_int_equal(SSL_write(raw, too_long, sizeof(too_long)), sizeof(too_long));
	wait_for(b_down, WAIT_MS, "B drops a message too long");
	print_message("B: %s\n", ha_chan_why(B.c));
	assert_non_null(strstr(ha_chan_why(B.c), "20481 bytes"));
	/* the message before it, whole, stays readable after the down */
	assert_int_equal(ha_chan_recv(B.c, got, sizeof(got)), 5);
	assert_memory_equal(got, "hello", 5);
	assert_int_equal(ha_chan_recv(B.c, got, sizeof(got)), 0);
	SSL_free(raw);
	SSL_CTX_free(ctx);
	close(extra_fd);
	extra_fd = -1;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_addr),
		cmocka_unit_test(test_open_errors),
		cmocka_unit_test_setup_teardown(test_up_and_messages, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ipv6_one_host, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wrong_key, setup, teardown),
		cmocka_unit_test_setup_teardown(test_strangers, setup, teardown),
		cmocka_unit_test_setup_teardown(test_peer_closed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_peer_stopped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_send_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wire, setup, teardown),
	};
	unsigned seed = (unsigned)time(NULL) ^ (unsigned)getpid();

	srandom(seed);
	for (size_t i = 0; i < sizeof(key); i++) {
		key[i] = (uint8_t)random();
		other_key[i] = key[i];
	}
	other_key[0] ^= 1;
	printf("# seed %u\n", seed);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
