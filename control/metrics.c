/* SPDX-License-Identifier: BSD-3-Clause */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "metrics.h"
#include "mono.h"

static const char *const drop_names[] = {
#define DPVPN_X_NAME(e, name, desc) name,
	DPVPN_DROP_REASONS(DPVPN_X_NAME)
#undef DPVPN_X_NAME
};

static int metrics_listen(const char *spec)
{
	struct sockaddr_storage ss = { 0 };
	struct sockaddr_in *in4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
	char host[64];
	const char *colon = strrchr(spec, ':');
	unsigned long port;
	char *end;
	int fd, one = 1;
	size_t hl;

	if (colon == NULL || (hl = (size_t)(colon - spec)) == 0 || hl >= sizeof(host))
		goto bad;
	port = strtoul(colon + 1, &end, 10);
	if (*end != '\0' || port == 0 || port > 65535)
		goto bad;
	memcpy(host, spec, hl);
	host[hl] = '\0';
	if (host[0] == '[' && host[hl - 1] == ']') {	/* [::1] */
		memmove(host, host + 1, hl - 2);
		host[hl - 2] = '\0';
	}
	if (inet_pton(AF_INET, host, &in4->sin_addr) == 1) {
		if ((ntohl(in4->sin_addr.s_addr) >> 24) != 127)
			goto loopback;
		in4->sin_family = AF_INET;
		in4->sin_port = htons((uint16_t)port);
	} else if (inet_pton(AF_INET6, host, &in6->sin6_addr) == 1) {
		if (!IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr))
			goto loopback;
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons((uint16_t)port);
	} else {
		goto bad;
	}
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, sizeof(ss)) || listen(fd, 8)) {
		fprintf(stderr, "dpvpnd: metrics %s: %s\n", spec, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
bad:
	fprintf(stderr, "dpvpnd: metrics: expected ADDRESS:PORT, got '%s'\n", spec);
	return -1;
loopback:
	fprintf(stderr, "dpvpnd: metrics: %s is not a loopback address\n", host);
	return -1;
}

struct out {
	char *buf;
	size_t len, cap;
};

__attribute__((format(printf, 2, 3)))
static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(o->buf ? o->buf + o->len : NULL, o->buf ? o->cap - o->len : 0, fmt, ap);
		va_end(ap);
		if (n < 0)
			return;
		if (o->buf && o->len + (size_t)n < o->cap) {
			o->len += (size_t)n;
			return;
		}
		size_t cap = o->cap ? o->cap * 2 : 65536;
		char *b;

		while (cap < o->len + (size_t)n + 1)
			cap *= 2;
		b = realloc(o->buf, cap);
		if (b == NULL)
			return;
		o->buf = b;
		o->cap = cap;
	}
}

static void family(struct out *o, const char *name, const char *type, const char *help)
{
	put(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void counters(struct out *o, struct dp_client *dp)
{
	struct dpvpn_counters c;
	static const struct { const char *name, *help; size_t off; } totals[] = {
#define T(f, h) { "dpvpn_" #f "_total", h, offsetof(struct dpvpn_counters, f) }
		T(rx_packets, "Packets workers took from RX queues."),
		T(tx_packets, "Packets handed to TX queues."),
		T(encrypted, "ESP packets built."),
		T(decrypted, "ESP packets accepted."),
		T(handoff, "Outside-port packets handed to another worker."),
		T(replay_late, "Replay drops left of the anti-replay window (late, not repeated)."),
		T(icmp_out, "ICMP too-big errors sent."),
		T(fragments, "Fragments made."),
		T(mss_clamped, "TCP SYNs whose MSS was lowered."),
		T(reassembled, "Packets reassembled from outer fragments."),
		T(icmp_echo, "ICMP and ICMPv6 echo replies sent (ping to the gateway)."),
		T(neigh_queued, "Packets held while their next hop was resolved."),
		T(host_in, "Frames handed to the ports' host interfaces."),
		T(host_out, "Frames the host sent through its host interfaces."),
#undef T
	};

	if (dp_call(dp, DPVPN_MSG_SHOW_COUNTERS, NULL, 0, &c, sizeof(c)))
		return;
	for (size_t i = 0; i < sizeof(totals) / sizeof(totals[0]); i++) {
		family(o, totals[i].name, "counter", totals[i].help);
		put(o, "%s %" PRIu64 "\n", totals[i].name,
		    *(const uint64_t *)((const char *)&c + totals[i].off));
	}
	family(o, "dpvpn_drops_total", "counter", "Packets dropped, by reason.");
	for (uint32_t i = 0; i < c.n_reasons && i < DPVPN_DROP_MAX; i++)
		put(o, "dpvpn_drops_total{reason=\"%s\"} %" PRIu64 "\n", drop_names[i], c.drops[i]);
	family(o, "dpvpn_neigh_held", "gauge", "Packets waiting for their next hop's MAC now.");
	put(o, "dpvpn_neigh_held %" PRIu64 "\n", c.neigh_held);
	family(o, "dpvpn_mbufs_in_use", "gauge", "Packet buffers in use.");
	put(o, "dpvpn_mbufs_in_use %" PRIu64 "\n", c.mbufs_in_use);
}

static void sas(struct out *o, struct dp_client *dp)
{
	struct dpvpn_sa_info *s;
	uint32_t n;

	if (dp_dump(dp, DPVPN_MSG_SHOW_SA, sizeof(*s), (void **)&s, &n))
		return;
	family(o, "dpvpn_sa_packets_total", "counter", "Inner packets an SA carried.");
	for (uint32_t i = 0; i < n; i++)
		put(o, "dpvpn_sa_packets_total{tunnel=\"%.*s\",spi=\"0x%08x\",dir=\"%s\"} %" PRIu64
		    "\n", DPVPN_NAME_LEN, s[i].name, ntohl(s[i].spi),
		    s[i].dir == DPVPN_DIR_IN ? "in" : "out", s[i].packets);
	family(o, "dpvpn_sa_bytes_total", "counter", "Inner bytes an SA carried.");
	for (uint32_t i = 0; i < n; i++)
		put(o, "dpvpn_sa_bytes_total{tunnel=\"%.*s\",spi=\"0x%08x\",dir=\"%s\"} %" PRIu64
		    "\n", DPVPN_NAME_LEN, s[i].name, ntohl(s[i].spi),
		    s[i].dir == DPVPN_DIR_IN ? "in" : "out", s[i].bytes);
	family(o, "dpvpn_sa_drops_total", "counter", "Packets an SA dropped, by reason.");
	for (uint32_t i = 0; i < n; i++) {
		const uint64_t v[] = { s[i].drop_replay, s[i].drop_icv, s[i].drop_policy,
				       s[i].drop_seq, s[i].drop_other };
		static const char *const why[] = { "replay", "bad-icv", "policy-mismatch",
						   "seq-exhausted", "other" };

		for (int k = 0; k < 5; k++)
			put(o, "dpvpn_sa_drops_total{tunnel=\"%.*s\",spi=\"0x%08x\",dir=\"%s\","
			    "reason=\"%s\"} %" PRIu64 "\n", DPVPN_NAME_LEN, s[i].name, ntohl(s[i].spi),
			    s[i].dir == DPVPN_DIR_IN ? "in" : "out", why[k], v[k]);
	}
	free(s);
}

static void ports(struct out *o, struct dp_client *dp)
{
	struct dpvpn_port_info *p;
	uint32_t n;
	static const struct { const char *name; size_t off; } f[] = {
		{ "dpvpn_port_rx_packets_total", offsetof(struct dpvpn_port_info, rx_packets) },
		{ "dpvpn_port_rx_bytes_total", offsetof(struct dpvpn_port_info, rx_bytes) },
		{ "dpvpn_port_tx_packets_total", offsetof(struct dpvpn_port_info, tx_packets) },
		{ "dpvpn_port_tx_bytes_total", offsetof(struct dpvpn_port_info, tx_bytes) },
		{ "dpvpn_port_rx_missed_total", offsetof(struct dpvpn_port_info, rx_missed) },
		{ "dpvpn_port_csum_completed_total",
		  offsetof(struct dpvpn_port_info, csum_completed) },
	};

	if (dp_dump(dp, DPVPN_MSG_SHOW_PORTS, sizeof(*p), (void **)&p, &n))
		return;
	for (size_t k = 0; k < sizeof(f) / sizeof(f[0]); k++) {
		family(o, f[k].name, "counter", "Device counters of a port.");
		for (uint32_t i = 0; i < n; i++)
			put(o, "%s{port=\"%u\",device=\"%.*s\"} %" PRIu64 "\n", f[k].name,
			    p[i].port_id, DPVPN_NAME_LEN, p[i].name,
			    *(const uint64_t *)((const char *)&p[i] + f[k].off));
	}
	free(p);
}

static void lcores(struct out *o, struct dp_client *dp)
{
	struct dpvpn_lcore_info *l;
	uint32_t n;

	if (dp_dump(dp, DPVPN_MSG_SHOW_LCORES, sizeof(*l), (void **)&l, &n))
		return;
	family(o, "dpvpn_lcore_busy_ratio", "gauge",
	       "Share of poll cycles that found work (a polling core always looks busy to the OS).");
	for (uint32_t i = 0; i < n; i++) {
		uint64_t all = l[i].busy_cycles + l[i].idle_cycles;

		put(o, "dpvpn_lcore_busy_ratio{lcore=\"%u\",role=\"%s\"} %.4f\n", l[i].lcore,
		    l[i].worker ? "worker" : "main", all ? (double)l[i].busy_cycles / all : 0.0);
	}
	family(o, "dpvpn_lcore_rx_packets_total", "counter", "Packets an lcore received.");
	for (uint32_t i = 0; i < n; i++)
		put(o, "dpvpn_lcore_rx_packets_total{lcore=\"%u\",role=\"%s\"} %" PRIu64 "\n",
		    l[i].lcore, l[i].worker ? "worker" : "main", l[i].rx_packets);
	family(o, "dpvpn_lcore_drops_total", "counter", "Packets an lcore dropped.");
	for (uint32_t i = 0; i < n; i++)
		put(o, "dpvpn_lcore_drops_total{lcore=\"%u\",role=\"%s\"} %" PRIu64 "\n",
		    l[i].lcore, l[i].worker ? "worker" : "main", l[i].drops);
	free(l);
}

/*
 * Connections: non-blocking, in an epoll set of their own whose descriptor
 * dpvpnd's loop polls, each with a deadline for the whole exchange, so no
 * scraper, idle or not reading, holds up dpvpnd (whose loop also serves the
 * operator's socket and the dataplane's events).
 */
#define METRICS_CONNS		16
#define METRICS_DEADLINE_MS	5000
#define METRICS_REQ_MAX		2048

struct mconn {
	int fd;			/* -1: free */
	bool writing;		/* request read; the response going out */
	uint64_t deadline;	/* ms, CLOCK_MONOTONIC */
	size_t got, sent;
	struct out o;		/* the response: head and text */
	char req[METRICS_REQ_MAX];
};

struct metrics {
	int ep, lfd;
	struct mconn c[METRICS_CONNS];
	struct ctl_ctx *ctl;		/* NULL: no per-tunnel series */
	struct metrics_tunnels *tunnels;
};

void metrics_set_ctl(struct metrics *m, struct ctl_ctx *ctx)
{
	if (m == NULL)
		return;
	m->ctl = ctx;
	if (ctx != NULL && m->tunnels == NULL)
		m->tunnels = metrics_tunnels_new();	/* NULL: the per-SA series only */
}

/* The per-tunnel series, after the others. */
static void tunnel_series(struct metrics *m, struct out *body)
{
	size_t len;
	char *text;

	if (m->ctl == NULL || m->tunnels == NULL)
		return;
	text = metrics_tunnels_text(m->tunnels, m->ctl, &len);
	if (text != NULL)
		put(body, "%.*s", (int)len, text);
	free(text);
}

struct metrics *metrics_open(const char *spec)
{
	struct metrics *m = calloc(1, sizeof(*m));
	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = 0 };

	if (m == NULL)
		return NULL;
	for (int i = 0; i < METRICS_CONNS; i++)
		m->c[i].fd = -1;
	m->lfd = metrics_listen(spec);
	if (m->lfd < 0) {
		free(m);
		return NULL;
	}
	m->ep = epoll_create1(EPOLL_CLOEXEC);
	if (m->ep < 0 || epoll_ctl(m->ep, EPOLL_CTL_ADD, m->lfd, &ev) != 0) {
		fprintf(stderr, "dpvpnd: metrics: epoll: %s\n", strerror(errno));
		if (m->ep >= 0)
			close(m->ep);
		close(m->lfd);
		free(m);
		return NULL;
	}
	return m;
}

int metrics_fd(const struct metrics *m)
{
	return m ? m->ep : -1;
}

static void drop(struct mconn *c)
{
	close(c->fd);	/* leaves the epoll set with it */
	free(c->o.buf);
	memset(&c->o, 0, sizeof(c->o));
	c->fd = -1;
}

static void accept_all(struct metrics *m)
{
	for (int n = 0; n < METRICS_CONNS; n++) {
		int fd = accept4(m->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		struct mconn *c = NULL;
		struct epoll_event ev = { .events = EPOLLIN };

		if (fd < 0)
			return;
		for (int i = 0; i < METRICS_CONNS; i++) {	/* a free slot, else the oldest */
			if (m->c[i].fd < 0) {
				c = &m->c[i];
				break;
			}
			if (c == NULL || m->c[i].deadline < c->deadline)
				c = &m->c[i];
		}
		if (c->fd >= 0)
			drop(c);
		ev.data.u32 = (uint32_t)(c - m->c) + 1;
		if (epoll_ctl(m->ep, EPOLL_CTL_ADD, fd, &ev) != 0) {
			close(fd);
			continue;
		}
		*c = (struct mconn){ .fd = fd, .deadline = mono_ms() + METRICS_DEADLINE_MS };
	}
}

static void respond(struct metrics *m, struct mconn *c, struct dp_client *dp)
{
	struct out body = { 0 };
	char head[160];

	if (!dp->lost) {
		counters(&body, dp);
		sas(&body, dp);
		ports(&body, dp);
		lcores(&body, dp);
		tunnel_series(m, &body);
	}
	snprintf(head, sizeof(head), "HTTP/1.0 %s\r\nContent-Type: text/plain; version=0.0.4\r\n"
		 "Content-Length: %zu\r\n\r\n", body.buf ? "200 OK" : "503 Service Unavailable",
		 body.len);
	put(&c->o, "%s", head);
	if (body.buf && c->o.buf) {
		char *b = realloc(c->o.buf, c->o.len + body.len);

		if (b != NULL) {
			memcpy(b + c->o.len, body.buf, body.len);
			c->o.buf = b;
			c->o.len += body.len;
			c->o.cap = c->o.len;
		}
	}
	free(body.buf);
	c->writing = true;
}

/* 0: more to do; -1: done with this connection (answered, gone or wrong). */
static int step(struct metrics *m, struct mconn *c, struct dp_client *dp)
{
	if (!c->writing) {
		ssize_t r = recv(c->fd, c->req + c->got, sizeof(c->req) - 1 - c->got, 0);

		if (r < 0)
			return errno == EAGAIN || errno == EINTR ? 0 : -1;
		if (r == 0)
			return -1;
		c->got += (size_t)r;
		c->req[c->got] = '\0';
		/* the request's head is all there is to read; a full buffer is enough too */
		if (strstr(c->req, "\r\n\r\n") == NULL && strstr(c->req, "\n\n") == NULL &&
		    c->got < sizeof(c->req) - 1)
			return 0;
		respond(m, c, dp);
		if (c->o.buf == NULL)
			return -1;
	}
	while (c->sent < c->o.len) {
		ssize_t w = send(c->fd, c->o.buf + c->sent, c->o.len - c->sent,
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN) {
			struct epoll_event ev = { .events = EPOLLOUT,
						  .data.u32 = (uint32_t)(c - m->c) + 1 };

			return epoll_ctl(m->ep, EPOLL_CTL_MOD, c->fd, &ev) == 0 ? 0 : -1;
		}
		if (w <= 0)
			return -1;
		c->sent += (size_t)w;
	}
	return -1;
}

void metrics_poll(struct metrics *m, struct dp_client *dp)
{
	struct epoll_event ev[METRICS_CONNS + 1];
	uint64_t now = mono_ms();
	int n;

	if (m == NULL)
		return;
	n = epoll_wait(m->ep, ev, METRICS_CONNS + 1, 0);
	for (int i = 0; i < n; i++) {
		struct mconn *c;

		if (ev[i].data.u32 == 0) {
			accept_all(m);
			continue;
		}
		c = &m->c[ev[i].data.u32 - 1];
		if (c->fd >= 0 && step(m, c, dp) != 0)
			drop(c);
	}
	for (int i = 0; i < METRICS_CONNS; i++)	/* out of time: idle, slow or not reading */
		if (m->c[i].fd >= 0 && now >= m->c[i].deadline)
			drop(&m->c[i]);
}

void metrics_close(struct metrics *m)
{
	if (m == NULL)
		return;
	for (int i = 0; i < METRICS_CONNS; i++)
		if (m->c[i].fd >= 0)
			drop(&m->c[i]);
	close(m->ep);
	close(m->lfd);
	metrics_tunnels_free(m->tunnels);
	free(m);
}
