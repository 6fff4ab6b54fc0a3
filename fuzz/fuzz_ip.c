/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_ip.c - frames arriving on the inside port (and a port with no role),
 * through the real outbound path (worker_rx): classification (MAC, ARP and
 * Neighbour Discovery to the main lcore's slow path, IPv4/IPv6 header
 * checks), packets to the gateway itself, policy lookup, TTL and hop limit,
 * TCP MSS clamping, the tunnel MTU (ICMP "fragmentation needed" and ICMPv6
 * "packet too big", rate-limited; RFC 4459 pre-fragmentation of DF-clear
 * IPv4, also of what is already a fragment; outer fragmentation), sequence
 * number limits, ESP encapsulation (every transform, IPv4/IPv6 outer, UDP),
 * routing and neighbour resolution.  Every frame sent is checked (fuzz_dp.c).
 *
 * An input is a list of records, each one frame:
 *
 *   kind (1) | length (2, big endian) | body
 *
 *   kind & 3:  0  body is a whole frame, Ethernet header included
 *              1  body is an IP packet; an Ethernet header to our MAC is added
 *              2  tunnel (1) | host (1) | IP packet: addresses set from a host
 *                 behind us to one behind the tunnel's peer, then as 3
 *              3  as 1, lengths and checksums fixed first (fuzz_fix_ip)
 *   kind & 4:  the burst ends after this record (else after 32 frames)
 *   kind & 8:  the frame is the very end of its buffer (reads past it are
 *              caught; encapsulation then fails for want of tailroom)
 *   kind & 16: received on the port with no role
 *   kind & 32: the frame arrives in two chained segments
 *   kind >> 6: 1, 2, 3: a capture starts at the inside-rx, pre-encrypt or
 *              outside-tx point (dpvpnctl trace) before this record
 *
 * Round trip: every ESP packet sent on the outside port (not an outer
 * fragment) is decapsulated again (esp_decap_burst) with a mirror of its
 * outbound SA -- same SPI, transform and keys, addresses and selectors the
 * other way round -- as the peer would; it must come out whole (its TTL
 * is the peer's output stage's to step, not decapsulation's), and a UDP
 * checksum over IPv6 must be right.  The target aborts otherwise: that is an encapsulation bug.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_ip.h>
#include <rte_udp.h>

#include "esp.h"
#include "fuzz_dp.h"
#include "ip.h"
#include "replay.h"

enum { K_TIGHT = 8, K_NO_ROLE = 16, K_CHAINED = 32 };

static const uint8_t trace_points[4] = {
	DPVPN_TRACE_OFF, DPVPN_TRACE_INSIDE_RX, DPVPN_TRACE_PRE_ENCRYPT, DPVPN_TRACE_OUTSIDE_TX,
};

static const struct rte_ether_addr host_mac = { { 0x02, 0, 0, 0, 0x0a, 0x02 } };

struct burst {
	struct rte_mbuf *pkts[DP_BURST];
	uint16_t n, port;
	unsigned int total;
};

static void
flush(struct burst *b)
{
	if (b->n > 0)
		fuzz_rx(b->port, b->pkts, b->n);
	b->n = 0;
}

static void
deliver(struct burst *b, uint16_t port, const uint8_t *frame, size_t len, uint8_t kind)
{
	struct rte_mbuf *m;

	if (b->total >= FUZZ_MAX_FRAMES)
		return;
	if (port != b->port)
		flush(b);
	b->port = port;
	m = (kind & K_CHAINED) ? fuzz_mbuf_chain(frame, len) :
				 fuzz_mbuf(frame, len, (kind & K_TIGHT) != 0);
	if (m == NULL)
		return;
	b->total++;
	b->pkts[b->n++] = m;
	if (b->n == DP_BURST)
		flush(b);
}

/* Addresses of a host behind us (src) and one behind tunnel t's peer (dst). */
static void
address(uint8_t *ip, size_t len, const struct fuzz_tunnel *t, uint8_t host)
{
	const struct dpvpn_prefix *dst = &t->out.remote_ts;

	if (len >= sizeof(struct rte_ipv6_hdr) && ip[0] >> 4 == 6 &&
	    dst->family == DPVPN_AF_INET6) {
		struct rte_ipv6_hdr *h = (struct rte_ipv6_hdr *)ip;

		memcpy(h->src_addr, dp.ports[FUZZ_INSIDE].addr6, 16);
		h->src_addr[15] = host;
		memcpy(h->dst_addr, dst->v6, 16);
		h->dst_addr[15] = host;
	} else if (len >= sizeof(struct rte_ipv4_hdr) && ip[0] >> 4 == 4 &&
		   dst->family == DPVPN_AF_INET) {
		struct rte_ipv4_hdr *h = (struct rte_ipv4_hdr *)ip;

		h->src_addr = (dp.ports[FUZZ_INSIDE].addr & rte_cpu_to_be_32(0xffffff00)) |
			      rte_cpu_to_be_32(host);
		h->dst_addr = dst->v4 | rte_cpu_to_be_32(host);
	}
}

static void
record(struct burst *b, uint8_t kind, const uint8_t *body, size_t len)
{
	uint16_t port = (kind & K_NO_ROLE) ? FUZZ_NONE : FUZZ_INSIDE;
	uint8_t f[FUZZ_MAX_FRAME];
	struct rte_ether_hdr *eth = (struct rte_ether_hdr *)f;
	const struct fuzz_tunnel *t = NULL;
	uint8_t host = 2;

	fuzz_trace(trace_points[kind >> 6]);
	if ((kind & 3) == 0) {
		deliver(b, port, body, len, kind);
		return;
	}
	if ((kind & 3) == 2) {
		if (len < 2)
			return;
		t = &fuzz_tunnels[body[0] % FUZZ_TUNNELS];
		host = body[1];
		body += 2;
		len -= 2;
	}
	if (len + sizeof(*eth) > sizeof(f))
		return;
	eth->dst_addr = dp.ports[port].mac;
	eth->src_addr = host_mac;
	eth->ether_type = rte_cpu_to_be_16(len > 0 && body[0] >> 4 == 6 ? RTE_ETHER_TYPE_IPV6 :
					   RTE_ETHER_TYPE_IPV4);
	memcpy(eth + 1, body, len);
	if (t != NULL)
		address((uint8_t *)(eth + 1), len, t, host);
	if ((kind & 3) != 1)
		fuzz_fix_ip((uint8_t *)(eth + 1), len);
	deliver(b, port, f, sizeof(*eth) + len, kind);
}

/* ---- round trip ---- */

#define MIRROR_WINDOW	4096	/* more than one input can send under one SA */

static struct sa *mirrors[FUZZ_TUNNELS];
static struct dp_lstats peer_st;	/* the peer's counters, apart from ours */
static bool debug;			/* FUZZ_DEBUG=1: how many round trips */

static __attribute__((noreturn)) void
oracle_fail(const char *what)
{
	fprintf(stderr, "fuzz_ip: round trip: %s\n", what);
	abort();
}

/* The peer's inbound SA for tunnel t's outbound one. */
static void
install_mirror(unsigned int i)
{
	const struct dpvpn_sa_cfg *out = &fuzz_tunnels[i].out;
	struct dpvpn_sa_cfg c = *out;
	char err[256];

	c.dir = DPVPN_DIR_IN;
	c.local = out->remote;
	c.remote = out->local;
	c.local_ts = out->remote_ts;
	c.remote_ts = out->local_ts;
	c.udp_local = out->udp_remote;
	c.udp_remote = out->udp_local;
	c.replay_window = MIRROR_WINDOW;
	c.seq_start = c.seq_limit = 0;
	c.mss = DPVPN_MSS_OFF;
	c.mtu = 0;
	c.frag_outer = c.udp_spread_log2 = 0;
	memset(c.life_bytes, 0, sizeof(c.life_bytes));
	memset(c.life_packets, 0, sizeof(c.life_packets));
	memset(c.life_seconds, 0, sizeof(c.life_seconds));
	if (c.flags & DPVPN_SA_F_ROUTE)
		c.tunif = 1;	/* rpf off: what any inside host sent comes out */
	if (sa_add(&c, fuzz_w->esp.mb, err, sizeof(err)) != 0) {
		fprintf(stderr, "fuzz_ip: mirror of tunnel %u: %s\n", i, err);
		abort();
	}
	mirrors[i] = sa_lookup_in(c.spi);
}

/* The UDP checksum of an IPv6 packet (RFC 8200 8.1: mandatory) must verify. */
static void
check_udp6(const struct rte_ipv6_hdr *ip, uint32_t len)
{
	if (ip->proto != IPPROTO_UDP || len < sizeof(*ip) + sizeof(struct rte_udp_hdr))
		return;
	if (rte_ipv6_udptcp_cksum_verify(ip, ip + 1) != 0)
		oracle_fail("UDP over IPv6 with a wrong checksum");
}

static void
round_trip(uint16_t port, const struct rte_mbuf *m)
{
	const uint8_t *ip = rte_pktmbuf_mtod_offset(m, const uint8_t *,
						    sizeof(struct rte_ether_hdr));
	uint32_t len = rte_pktmbuf_data_len(m) - (uint32_t)sizeof(struct rte_ether_hdr);
	struct dp_port peer = { .role = DPVPN_ROLE_OUTSIDE };
	struct dp_lstats was = peer_st;
	static struct dp_out self;	/* room for a burst's worth: off the stack */
	struct rte_mbuf *c;
	uint16_t n;

	if (port != FUZZ_OUTSIDE)
		return;
	if (ip[0] >> 4 == 6) {
		peer.has6 = 1;
		memcpy(peer.addr6, ((const struct rte_ipv6_hdr *)ip)->dst_addr, 16);
		check_udp6((const struct rte_ipv6_hdr *)ip, len);
	} else {
		if (ip4_is_fragment((const struct rte_ipv4_hdr *)ip))
			return;		/* outer fragments: the peer reassembles first */
		peer.addr = ((const struct rte_ipv4_hdr *)ip)->dst_addr;
	}
	c = fuzz_mbuf(ip, len, false);
	if (c == NULL)
		oracle_fail("no mbuf");
	self.n = 0;
	n = esp_decap_burst(fuzz_w, &peer_st, &peer, &c, 1, &self);
	n += self.n;		/* for the peer itself: decapsulated all the same */
	if (self.n > 0)
		c = self.pkts[0];
	if (n == 1) {
		rte_pktmbuf_free(c);
		return;
	}
	for (unsigned int d = 0; d < DPVPN_DROP_MAX; d++)
		if (peer_st.drops[d] != was.drops[d]) {
			fprintf(stderr, "fuzz_ip: round trip: dropped, reason %u\n", d);
			oracle_fail("an ESP packet we built does not decapsulate");
		}
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_dp_init("fuzz_ip");
	fuzz_dp_install_sas();
	for (unsigned int i = 0; i < FUZZ_TUNNELS; i++)
		install_mirror(i);
	fuzz_tx_check = round_trip;
	debug = getenv("FUZZ_DEBUG") != NULL;
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	struct burst b = { .n = 0, .port = FUZZ_INSIDE };

	fuzz_dp_reset();
	for (unsigned int i = 0; i < FUZZ_TUNNELS; i++)
		replay_init(&mirrors[i]->replay, MIRROR_WINDOW, false);
	while (in.n >= 3) {
		uint8_t kind = fuzz_u8(&in);
		size_t want = (size_t)fuzz_u8(&in) << 8, len;
		const uint8_t *body;

		want |= fuzz_u8(&in);
		body = fuzz_bytes(&in, want, &len);
		record(&b, kind, body, len);
		if (kind & 4)
			flush(&b);
	}
	flush(&b);
	peer_st.decrypted = 0;
	fuzz_dp_finish();
	if (debug)
		fprintf(stderr, "fuzz_ip: %" PRIu64 " round trips\n", peer_st.decrypted);
	return 0;
}
