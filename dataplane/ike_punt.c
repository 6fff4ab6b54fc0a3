/* SPDX-License-Identifier: BSD-3-Clause */
/* ike_punt.c - the IKE punt path (see ike_punt.h): not the IKE engine, ike/. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <rte_cycles.h>
#include <rte_ip.h>
#include <rte_udp.h>

#include "ike_punt.h"
#include "ip.h"
#include "sa.h"

#define IKE_MARKER_LEN	4	/* RFC 3948: zeros where an ESP SPI would be */
#define IKE_OWN_PORT_MIN	1024	/* IKE_TX from a port of its own: not a well-known one */

static int ike_fd = -1;
#define IKE_CHANNEL_SNDBUF	(4 << 20)	/* bytes: the IKE channel's queue to dpvpnd */

static uint32_t push_seq;
static uint16_t ip_id;

/*
 * The bucket's depth: DP_IKE_BURST, or DP_IKE_BURST_MS of the rate where
 * that is more: a rate raised for many peers (perf/ikebench.py's 200 000 a
 * second) must also take the bursts they arrive in (an RX burst of 32
 * IKE_SA_INITs dropped half of them at 16).
 */
static inline uint32_t
ike_burst(void)
{
	uint32_t ms = dp.ike_rate / 1000 * DP_IKE_BURST_MS;

	return ms > DP_IKE_BURST ? ms : DP_IKE_BURST;
}

void
ike_punt(struct dp_worker *w, struct dp_lstats *st, struct rte_mbuf *m)
{
	if (!__atomic_load_n(&dp.ike_open, __ATOMIC_RELAXED)) {
		dp_drop(st, m, DPVPN_DROP_IKE);
		return;
	}
	if (!dp_bucket_take(&w->main.ike_rate, dp.ike_rate, ike_burst())) {
		dp_drop(st, m, DPVPN_DROP_IKE_LIMIT);
		return;
	}
	if (rte_ring_enqueue(w->main.ike, m) != 0)
		dp_drop(st, m, DPVPN_DROP_PUNT_FULL);
	else
		dp_main_kick();
}

int
ike_open(int fd, char *err, size_t elen)
{
	if (ike_fd >= 0 && ike_fd != fd) {
		snprintf(err, elen, "IKE_OPEN: another connection is the IKE channel");
		return -EBUSY;
	}
	ike_fd = fd;
	/*
	 * Room for a burst of IKE messages while dpvpnd is busy (signing, an
	 * install): the socket's default (~200 KiB, ~90 messages with their
	 * overhead) lost them as punt-full under 10 000 clients.  Best effort:
	 * FORCE needs CAP_NET_ADMIN, else net.core.wmem_max caps it.
	 */
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &(int){ IKE_CHANNEL_SNDBUF }, sizeof(int)))
		(void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &(int){ IKE_CHANNEL_SNDBUF },
				 sizeof(int));
	__atomic_store_n(&dp.ike_open, 1, __ATOMIC_RELEASE);
	return 0;
}

void
ike_closed(int fd)
{
	if (fd != ike_fd)
		return;
	ike_fd = -1;
	__atomic_store_n(&dp.ike_open, 0, __ATOMIC_RELEASE);
}

static void
set_addr(struct dpvpn_addr *a, bool v6, const void *addr)
{
	memset(a, 0, sizeof(*a));
	a->family = v6 ? DPVPN_AF_INET6 : DPVPN_AF_INET;
	memcpy(v6 ? (void *)a->v6 : (void *)&a->v4, addr, v6 ? 16 : 4);
}

/* One punted message to the channel; m is freed or counted as a drop. */
static void
ike_push(struct rte_mbuf *m)
{
	static uint8_t buf[sizeof(struct dpvpn_msg_hdr) + sizeof(struct dpvpn_ike_pkt) +
			  DPVPN_IKE_MAX];
	struct dpvpn_msg_hdr *h = (struct dpvpn_msg_hdr *)buf;
	struct dpvpn_ike_pkt *p = (struct dpvpn_ike_pkt *)(h + 1);
	struct dp_lstats *st = main_stats();
	const uint8_t *ip = rte_pktmbuf_mtod(m, const uint8_t *);
	bool v6 = ip[0] >> 4 == 6;
	const struct rte_udp_hdr *u;
	const uint8_t *data;
	uint16_t ihl;
	uint32_t len;

	if (v6) {
		const struct rte_ipv6_hdr *ip6 = (const struct rte_ipv6_hdr *)ip;

		ihl = sizeof(*ip6);
		set_addr(&p->local, true, ip6->dst_addr);
		set_addr(&p->remote, true, ip6->src_addr);
	} else {
		const struct rte_ipv4_hdr *ip4 = (const struct rte_ipv4_hdr *)ip;

		ihl = (uint16_t)((ip4->version_ihl & 0x0f) * 4);
		set_addr(&p->local, false, &ip4->dst_addr);
		set_addr(&p->remote, false, &ip4->src_addr);
	}
	/* the worker checked the headers and trimmed m to the UDP datagram */
	u = (const struct rte_udp_hdr *)(ip + ihl);
	data = (const uint8_t *)(u + 1);
	len = rte_pktmbuf_data_len(m) - ihl - (uint32_t)sizeof(*u);
	if (rte_be_to_cpu_16(u->dst_port) != DPVPN_IKE_PORT) {	/* the marker */
		data += IKE_MARKER_LEN;
		len -= IKE_MARKER_LEN;
	}
	if (len == 0) {
		dp_drop(st, m, DPVPN_DROP_SHORT);
		return;
	}
	if (len > DPVPN_IKE_MAX) {
		dp_drop(st, m, DPVPN_DROP_TOO_BIG);
		return;
	}
	if (ike_fd < 0) {	/* closed since the worker looked */
		dp_drop(st, m, DPVPN_DROP_IKE);
		return;
	}
	p->port = m->port;
	p->local_port = rte_be_to_cpu_16(u->dst_port);
	p->remote_port = rte_be_to_cpu_16(u->src_port);
	p->reserved = 0;
	p->len = len;
	p->reserved2 = 0;
	memcpy(p + 1, data, len);
	*h = (struct dpvpn_msg_hdr){ .type = DPVPN_MSG_IKE_RX, .flags = DPVPN_F_PUSH,
				     .seq = ++push_seq, .len = (uint32_t)sizeof(*p) + len };
	if (send(ike_fd, buf, sizeof(*h) + h->len, MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
		dp_drop(st, m, DPVPN_DROP_PUNT_FULL);	/* the channel is not reading */
		return;
	}
	st->ike_in++;
	rte_pktmbuf_free(m);
}

void
ike_poll(void)
{
	struct rte_mbuf *pkts[DP_BURST];

	for (unsigned int i = 0; i < dp.n_workers; i++) {
		struct dp_worker *w = &dp.workers[i];
		unsigned int n;

		if (w->main.ike == NULL)
			continue;
		n = rte_ring_dequeue_burst(w->main.ike, (void **)pkts, DP_BURST, NULL);
		for (unsigned int k = 0; k < n; k++)
			ike_push(pkts[k]);
	}
}

static bool
unicast4(uint32_t a)	/* network order */
{
	uint32_t h = rte_be_to_cpu_32(a);

	return h != 0 && h != 0xffffffffu && (h >> 28) != 0xe && (h >> 24) != 127;
}

static bool
unicast6(const uint8_t *a)
{
	static const uint8_t zero[16];

	return a[0] != 0xff && memcmp(a, zero, 16) != 0;
}

/*
 * IKE_TX's UDP datagram, whole: header, the non-ESP marker if any, the
 * message; checksummed (the pseudo-header of the addresses it goes between).
 * Built once, then sent as one packet or as IP fragments of it.
 */
static uint8_t dgram[sizeof(struct rte_udp_hdr) + IKE_MARKER_LEN + DPVPN_IKE_MAX];
static uint32_t frag_id6;

static uint32_t
udp_build(const struct dpvpn_ike_pkt *p, bool v6, bool marker, const uint8_t *data)
{
	struct rte_udp_hdr *u = (struct rte_udp_hdr *)dgram;
	uint32_t len = (uint32_t)sizeof(*u) + (marker ? IKE_MARKER_LEN : 0) + p->len;
	uint32_t sum;

	u->src_port = rte_cpu_to_be_16(p->local_port);
	u->dst_port = rte_cpu_to_be_16(p->remote_port);
	u->dgram_len = rte_cpu_to_be_16((uint16_t)len);
	u->dgram_cksum = 0;
	if (marker)
		memset(u + 1, 0, IKE_MARKER_LEN);
	memcpy((uint8_t *)(u + 1) + (marker ? IKE_MARKER_LEN : 0), data, p->len);
	if (v6) {
		struct rte_ipv6_hdr ip = { .payload_len = rte_cpu_to_be_16((uint16_t)len),
					   .proto = IPPROTO_UDP };

		memcpy(ip.src_addr, p->local.v6, 16);
		memcpy(ip.dst_addr, p->remote.v6, 16);
		sum = rte_ipv6_phdr_cksum(&ip, 0);
	} else {
		struct rte_ipv4_hdr ip = { .version_ihl = RTE_IPV4_VHL_DEF,
					   .total_length = rte_cpu_to_be_16((uint16_t)(len + 20)),
					   .next_proto_id = IPPROTO_UDP,
					   .src_addr = p->local.v4, .dst_addr = p->remote.v4 };

		sum = rte_ipv4_phdr_cksum(&ip, 0);
	}
	sum += rte_raw_cksum(dgram, len);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	u->dgram_cksum = (uint16_t)~sum ? (uint16_t)~sum : 0xffff;
	return len;
}

/* RFC 8200 4.5's Fragment header. */
struct frag6 {
	uint8_t next;
	uint8_t reserved;
	rte_be16_t off_m;	/* offset in 8-byte units << 3 | M */
	rte_be32_t id;
} __rte_packed;

/*
 * One packet of dgram[off, off + n) to worker 0's TX ring: the whole
 * datagram, or (frag) a fragment of it, more after it if more.
 */
static int
ike_emit(const struct dpvpn_ike_pkt *p, bool v6, uint32_t off, uint32_t n, bool frag,
	 bool more, uint32_t id, char *err, size_t elen)
{
	uint32_t iph = v6 ? (uint32_t)(sizeof(struct rte_ipv6_hdr) +
				       (frag ? sizeof(struct frag6) : 0)) :
			    (uint32_t)sizeof(struct rte_ipv4_hdr);
	struct rte_mbuf *m = rte_pktmbuf_alloc(dp.pool);
	uint8_t *pkt;

	if (m == NULL) {
		main_stats()->drops[DPVPN_DROP_NO_MBUF]++;
		snprintf(err, elen, "IKE_TX: no packet buffer");
		return -ENOBUFS;
	}
	pkt = (uint8_t *)rte_pktmbuf_append(m, (uint16_t)(iph + n));
	if (pkt == NULL) {	/* over the mbuf's room: the port MTU bounds n */
		dp_drop(main_stats(), m, DPVPN_DROP_TOO_BIG);
		snprintf(err, elen, "ike.len: %u bytes do not fit a packet buffer", p->len);
		return -EMSGSIZE;
	}
	if (v6) {
		struct rte_ipv6_hdr *ip = (struct rte_ipv6_hdr *)pkt;

		memset(ip, 0, sizeof(*ip));
		ip->vtc_flow = rte_cpu_to_be_32(6u << 28);
		ip->payload_len = rte_cpu_to_be_16((uint16_t)(iph + n - sizeof(*ip)));
		ip->proto = frag ? IPPROTO_FRAGMENT : IPPROTO_UDP;
		ip->hop_limits = 64;
		memcpy(ip->src_addr, p->local.v6, 16);
		memcpy(ip->dst_addr, p->remote.v6, 16);
		if (frag)
			*(struct frag6 *)(ip + 1) = (struct frag6){
				.next = IPPROTO_UDP, .id = rte_cpu_to_be_32(id),
				.off_m = rte_cpu_to_be_16((uint16_t)(off | more)) };
	} else {
		struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)pkt;

		memset(ip, 0, sizeof(*ip));
		ip->version_ihl = RTE_IPV4_VHL_DEF;
		ip->total_length = rte_cpu_to_be_16((uint16_t)(iph + n));
		ip->packet_id = rte_cpu_to_be_16((uint16_t)id);
		ip->fragment_offset = rte_cpu_to_be_16((uint16_t)(off >> 3 |
					(more ? RTE_IPV4_HDR_MF_FLAG : 0)));
		ip->time_to_live = 64;
		ip->next_proto_id = IPPROTO_UDP;
		ip->src_addr = p->local.v4;
		ip->dst_addr = p->remote.v4;
		ip->hdr_checksum = rte_ipv4_cksum(ip);
	}
	memcpy(pkt + iph, dgram + off, n);
	m->port = p->port;
	if (!dp_main_tx(m, DP_KIND_LOCAL_IP, 0)) {
		dp_drop(main_stats(), m, DPVPN_DROP_PUNT_FULL);
		snprintf(err, elen, "IKE_TX: worker 0's TX ring is full");
		return -ENOBUFS;
	}
	return 0;
}

/*
 * The datagram as one packet, or, over the port's MTU, as IP fragments
 * (RFC 791, RFC 8200 4.5): a peer without IKE fragmentation (RFC 7383)
 * still gets an IKE_AUTH with a certificate chain across a small MTU, as a
 * kernel's UDP socket would send it.  Counted as the ESP path's are:
 * fragments made, packets split.
 */
static int
ike_send(const struct dpvpn_ike_pkt *p, bool v6, uint32_t len, uint32_t mtu, char *err,
	 size_t elen)
{
	uint32_t iph = v6 ? (uint32_t)sizeof(struct rte_ipv6_hdr) :
			    (uint32_t)sizeof(struct rte_ipv4_hdr);
	uint32_t chunk, id, n = 0;
	int rc = 0;

	if (iph + len <= mtu)
		return ike_emit(p, v6, 0, len, false, false, ip_id++, err, elen);
	chunk = (mtu - iph - (v6 ? (uint32_t)sizeof(struct frag6) : 0)) & ~7u;
	id = v6 ? frag_id6++ : ip_id++;
	for (uint32_t off = 0; off < len && rc == 0; off += chunk, n++)
		rc = ike_emit(p, v6, off, RTE_MIN(chunk, len - off), true, off + chunk < len, id,
			      err, elen);
	main_stats()->fragments += n;
	main_stats()->fragmented++;
	return rc;
}

int
ike_tx(const void *payload, uint32_t len, char *err, size_t elen)
{
	const struct dpvpn_ike_pkt *p = payload;
	const uint8_t *data = (const uint8_t *)(p + 1);
	const struct dp_port *port;
	bool v6, marker, own_port;
	uint32_t udp_len;

	if (p->len == 0 || p->len > DPVPN_IKE_MAX || p->len != len - sizeof(*p)) {
		snprintf(err, elen, "ike.len: %u, not 1..%u or not the %zu bytes that follow",
			 p->len, DPVPN_IKE_MAX, (size_t)(len - sizeof(*p)));
		return -EINVAL;
	}
	if (p->reserved != 0 || p->reserved2 != 0) {
		snprintf(err, elen, "ike.reserved: must be zero");
		return -EINVAL;
	}
	if (p->port >= dp.n_ports || dp.ports[p->port].role != DPVPN_ROLE_OUTSIDE) {
		snprintf(err, elen, "ike.port: %u is not an outside port", p->port);
		return -EINVAL;
	}
	port = &dp.ports[p->port];
	/* a port of its own (1024 up): dpvpnd's IKE talks from a tunnel's
	 * local-port, and the answers must come back to it (sa_natt_listen) */
	own_port = p->local_port != DPVPN_IKE_PORT && p->local_port != DPVPN_IKE_NATT_PORT &&
		   !sa_natt_port(p->local_port);
	if (own_port && p->local_port < IKE_OWN_PORT_MIN) {
		snprintf(err, elen, "ike.local_port: %u is not %u, %u, an SA's NAT-T port or "
			 "%u..65535", p->local_port, DPVPN_IKE_PORT, DPVPN_IKE_NATT_PORT,
			 IKE_OWN_PORT_MIN);
		return -EINVAL;
	}
	if (p->remote_port == 0) {
		snprintf(err, elen, "ike.remote_port: 0");
		return -EINVAL;
	}
	if (p->local.family != p->remote.family ||
	    (p->local.family != DPVPN_AF_INET && p->local.family != DPVPN_AF_INET6)) {
		snprintf(err, elen, "ike.local/remote: families %u and %u, not both 4 or both 6",
			 p->local.family, p->remote.family);
		return -EINVAL;
	}
	v6 = p->local.family == DPVPN_AF_INET6;
	if (v6 ? !dp_port_owns6(port, p->local.v6) : !dp_port_owns4(port, p->local.v4)) {
		snprintf(err, elen, "ike.local: not port %u's IPv%c address (nor one of its "
			 "extra addresses)", p->port, v6 ? '6' : '4');
		return -EINVAL;
	}
	if (v6 ? !unicast6(p->remote.v6) : !unicast4(p->remote.v4)) {
		snprintf(err, elen, "ike.remote: not a unicast address");
		return -EINVAL;
	}
	/* from a NAT-T port, or to 4500: behind the non-ESP marker (RFC 3948 2.2) */
	marker = p->local_port != DPVPN_IKE_PORT || p->remote_port == DPVPN_IKE_NATT_PORT;
	if (!dp.started) {
		snprintf(err, elen, "IKE_TX: not forwarding yet (START)");
		return -EAGAIN;
	}
	if (own_port)
		sa_natt_listen(p->local_port);
	udp_len = udp_build(p, v6, marker, data);
	main_stats()->ike_out++;
	return ike_send(p, v6, udp_len, port->mtu, err, elen);
}
