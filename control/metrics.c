/* SPDX-License-Identifier: BSD-3-Clause */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "metrics.h"

static const char *const drop_names[] = {
#define DPVPN_X_NAME(e, name, desc) name,
	DPVPN_DROP_REASONS(DPVPN_X_NAME)
#undef DPVPN_X_NAME
};

int metrics_listen(const char *spec)
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
		T(icmp_out, "ICMP too-big errors sent."),
		T(fragments, "Fragments made."),
		T(mss_clamped, "TCP SYNs whose MSS was lowered."),
		T(reassembled, "Packets reassembled from outer fragments."),
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
				       s[i].drop_other };
		static const char *const why[] = { "replay", "bad-icv", "policy-mismatch", "other" };

		for (int k = 0; k < 4; k++)
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

static void write_all(int fd, const char *p, size_t len)
{
	while (len > 0) {
		ssize_t w = write(fd, p, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		p += w;
		len -= (size_t)w;
	}
}

void metrics_serve(int lfd, struct dp_client *dp)
{
	struct out o = { 0 };
	char req[2048], head[160];
	struct pollfd p;
	int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

	if (fd < 0)
		return;
	/* the request line is all we need; a slow client gets one second */
	p = (struct pollfd){ .fd = fd, .events = POLLIN };
	if (poll(&p, 1, 1000) <= 0 || read(fd, req, sizeof(req)) <= 0) {
		close(fd);
		return;
	}
	if (!dp->lost) {
		counters(&o, dp);
		sas(&o, dp);
		ports(&o, dp);
		lcores(&o, dp);
	}
	snprintf(head, sizeof(head), "HTTP/1.0 %s\r\nContent-Type: text/plain; version=0.0.4\r\n"
		 "Content-Length: %zu\r\n\r\n", o.buf ? "200 OK" : "503 Service Unavailable",
		 o.len);
	write_all(fd, head, strlen(head));
	if (o.buf)
		write_all(fd, o.buf, o.len);
	free(o.buf);
	close(fd);
}
