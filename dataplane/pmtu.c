/* SPDX-License-Identifier: BSD-3-Clause */
#include <string.h>

#include <rte_cycles.h>
#include <rte_icmp.h>
#include <rte_ip.h>
#include <rte_tcp.h>

#include "ip.h"
#include "pmtu.h"

#define ICMP_TOO_BIG_TYPE	3	/* destination unreachable ... */
#define ICMP_FRAG_NEEDED	4	/* ... fragmentation needed and DF set */
#define ICMP6_TOO_BIG		2
#define ICMP_TIME_EXCEEDED	11	/* code 0: TTL exceeded in transit */
#define ICMP6_TIME_EXCEEDED	3	/* code 0: hop limit exceeded in transit */
#define ICMP6_MIN_MTU		1280

static bool
icmp_allowed(struct dp_worker *w, struct dp_lstats *st)
{
	if (!dp_bucket_take(&w->icmp_rate, PMTU_ICMP_RATE, PMTU_ICMP_BURST)) {
		st->icmp_limited++;
		return false;
	}
	st->icmp_out++;
	return true;
}

/* Never an error about an error, nor to a source that is not one host. */
static bool
icmp4_may_answer(const struct rte_ipv4_hdr *ip)
{
	uint32_t src = rte_be_to_cpu_32(ip->src_addr);

	if (src == 0 || (src >> 28) == 0xe || src == 0xffffffff)
		return false;
	if (ip->next_proto_id == IPPROTO_ICMP && (ip->fragment_offset & rte_cpu_to_be_16(
		RTE_IPV4_HDR_OFFSET_MASK)) == 0) {
		const struct rte_icmp_hdr *ic = (const struct rte_icmp_hdr *)
			((const uint8_t *)ip + (ip->version_ihl & 0x0f) * 4);

		return ic->icmp_type == RTE_IP_ICMP_ECHO_REQUEST ||
		       ic->icmp_type == RTE_IP_ICMP_ECHO_REPLY;
	}
	return true;
}

/*
 * An ICMP error about m (type, code, and the 32-bit word after the checksum)
 * from src to m's source, quoting m's header and 8 bytes (RFC 792); NULL
 * when none may be sent.
 */
static struct rte_mbuf *
icmp4_error(struct dp_worker *w, struct dp_lstats *st, uint32_t src, const struct rte_mbuf *m,
	    uint8_t type, uint8_t code, rte_be32_t word)
{
	const struct rte_ipv4_hdr *orig = rte_pktmbuf_mtod(m, const struct rte_ipv4_hdr *);
	uint16_t quote = (uint16_t)RTE_MIN((uint32_t)rte_pktmbuf_data_len(m),
					   (uint32_t)(orig->version_ihl & 0x0f) * 4 + 8);
	struct rte_mbuf *r;
	struct rte_ipv4_hdr *ip;
	struct rte_icmp_hdr *ic;

	if (src == 0 || !icmp4_may_answer(orig) || !icmp_allowed(w, st))
		return NULL;
	r = rte_pktmbuf_alloc(dp.pool);
	if (r == NULL) {	/* counted in icmp_out: dropped for want of a buffer */
		st->drops[DPVPN_DROP_NO_MBUF]++;
		return NULL;
	}
	ip = (struct rte_ipv4_hdr *)rte_pktmbuf_append(r, sizeof(*ip) + sizeof(*ic) + quote);
	if (ip == NULL) {
		dp_drop(st, r, DPVPN_DROP_TOO_BIG);
		return NULL;
	}
	ic = (struct rte_icmp_hdr *)(ip + 1);
	memset(ip, 0, sizeof(*ip));
	ip->version_ihl = RTE_IPV4_VHL_DEF;
	ip->type_of_service = 0xc0;	/* network control */
	ip->total_length = rte_cpu_to_be_16(rte_pktmbuf_data_len(r));
	ip->time_to_live = 64;
	ip->next_proto_id = IPPROTO_ICMP;
	ip->src_addr = src;
	ip->dst_addr = orig->src_addr;
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	ic->icmp_type = type;
	ic->icmp_code = code;
	ic->icmp_cksum = 0;
	memcpy(&ic->icmp_ident, &word, 4);
	memcpy(ic + 1, orig, quote);
	ic->icmp_cksum = (uint16_t)~rte_raw_cksum(ic, sizeof(*ic) + quote);
	return r;
}

/* icmp4_error for IPv6 (RFC 4443): as much of m as fits the minimum MTU. */
static struct rte_mbuf *
icmp6_error(struct dp_worker *w, struct dp_lstats *st, const struct dp_port *port,
	    const struct rte_mbuf *m, uint8_t type, uint8_t code, rte_be32_t word)
{
	const struct rte_ipv6_hdr *orig = rte_pktmbuf_mtod(m, const struct rte_ipv6_hdr *);
	/* as much of the packet as fits the IPv6 minimum MTU (RFC 4443 3.2) */
	uint16_t quote = (uint16_t)RTE_MIN((uint32_t)rte_pktmbuf_data_len(m),
					   (uint32_t)(ICMP6_MIN_MTU - sizeof(*orig) - 8));
	struct rte_mbuf *r;
	struct rte_ipv6_hdr *ip;
	uint8_t *ic;
	static const uint8_t zero[16];

	if (!port->has6 || ip6_is_multicast(orig->src_addr) ||
	    memcmp(orig->src_addr, zero, 16) == 0 ||
	    (orig->proto == IPPROTO_ICMPV6 && m->data_len > sizeof(*orig) &&
	     *(const uint8_t *)(orig + 1) < 128) ||	/* an ICMPv6 error itself */
	    !icmp_allowed(w, st))
		return NULL;
	r = rte_pktmbuf_alloc(dp.pool);
	if (r == NULL) {	/* counted in icmp_out: dropped for want of a buffer */
		st->drops[DPVPN_DROP_NO_MBUF]++;
		return NULL;
	}
	ip = (struct rte_ipv6_hdr *)rte_pktmbuf_append(r, sizeof(*ip) + 8 + quote);
	if (ip == NULL) {
		dp_drop(st, r, DPVPN_DROP_TOO_BIG);
		return NULL;
	}
	ic = (uint8_t *)(ip + 1);
	ip->vtc_flow = rte_cpu_to_be_32(6u << 28);
	ip->payload_len = rte_cpu_to_be_16(8 + quote);
	ip->proto = IPPROTO_ICMPV6;
	ip->hop_limits = 64;
	memcpy(ip->src_addr, port->addr6, 16);
	memcpy(ip->dst_addr, orig->src_addr, 16);
	ic[0] = type;
	ic[1] = code;
	ic[2] = ic[3] = 0;
	memcpy(ic + 4, &word, 4);
	memcpy(ic + 8, orig, quote);
	*(rte_be16_t *)(ic + 2) = rte_ipv6_udptcp_cksum(ip, ic);
	return r;
}

struct rte_mbuf *
pmtu_icmp_too_big(struct dp_worker *w, struct dp_lstats *st, const struct dp_port *port,
		  const struct rte_mbuf *m, uint16_t mtu)
{
	if (rte_pktmbuf_mtod(m, const uint8_t *)[0] >> 4 == 6)
		return icmp6_error(w, st, port, m, ICMP6_TOO_BIG, 0,
				   rte_cpu_to_be_32(RTE_MAX(mtu, (uint16_t)ICMP6_MIN_MTU)));
	/* the next-hop MTU in the low half (RFC 1191) */
	return icmp4_error(w, st, port->addr, m, ICMP_TOO_BIG_TYPE, ICMP_FRAG_NEEDED,
			   rte_cpu_to_be_32(mtu));
}

struct rte_mbuf *
pmtu_icmp_expired(struct dp_worker *w, struct dp_lstats *st, const struct dp_port *port,
		  const struct rte_mbuf *m)
{
	if (rte_pktmbuf_mtod(m, const uint8_t *)[0] >> 4 == 6)
		return icmp6_error(w, st, port, m, ICMP6_TIME_EXCEEDED, 0, 0);
	return icmp4_error(w, st, port->addr, m, ICMP_TIME_EXCEEDED, 0, 0);
}

uint16_t
pmtu_fragment4(struct rte_mbuf *m, uint16_t mtu, struct rte_mbuf **out, uint16_t max,
	       enum dpvpn_drop_reason *why)
{
	const struct rte_ipv4_hdr *ip = rte_pktmbuf_mtod(m, const struct rte_ipv4_hdr *);
	uint16_t ihl = (uint16_t)((ip->version_ihl & 0x0f) * 4);
	uint16_t payload = (uint16_t)(rte_pktmbuf_data_len(m) - ihl);
	uint16_t per = (uint16_t)((mtu - ihl) & ~7u), n;
	uint16_t frag = rte_be_to_cpu_16(ip->fragment_offset);
	uint16_t base = frag & RTE_IPV4_HDR_OFFSET_MASK;	/* in 8-byte units */
	bool more = (frag & RTE_IPV4_HDR_MF_FLAG) != 0;

	*why = DPVPN_DROP_TOO_BIG;
	if (mtu <= ihl + 8 || per == 0)
		return 0;
	n = (uint16_t)((payload + per - 1) / per);
	if (n > max)
		return 0;
	if (rte_pktmbuf_alloc_bulk(dp.pool, out, n) != 0) {	/* all or none */
		*why = DPVPN_DROP_NO_MBUF;
		return 0;
	}
	for (uint16_t i = 0; i < n; i++) {
		uint16_t off = (uint16_t)(i * per), len = RTE_MIN(per, (uint16_t)(payload - off));
		uint8_t *d = (uint8_t *)rte_pktmbuf_append(out[i], ihl + len);
		struct rte_ipv4_hdr *f = (struct rte_ipv4_hdr *)d;

		if (d == NULL) {	/* cannot happen: mtu fits a pool mbuf */
			rte_pktmbuf_free_bulk(out, n);
			return 0;
		}
		uint16_t flags = (uint16_t)(base + off / 8) |
				 (i + 1 < n || more ? RTE_IPV4_HDR_MF_FLAG : 0);

		memcpy(d, ip, ihl);
		memcpy(d + ihl, (const uint8_t *)ip + ihl + off, len);
		f->total_length = rte_cpu_to_be_16(ihl + len);
		f->fragment_offset = rte_cpu_to_be_16(flags);
		f->hdr_checksum = 0;
		f->hdr_checksum = rte_ipv4_cksum(f);
		out[i]->port = m->port;
	}
	rte_pktmbuf_free(m);
	return n;
}

bool
pmtu_clamp_mss(uint8_t *ip, uint16_t len, uint16_t mss)
{
	struct rte_tcp_hdr *tcp;
	uint16_t l3, doff;
	uint8_t *opt, *end;

	if (ip[0] >> 4 == 6) {
		if (len < sizeof(struct rte_ipv6_hdr) ||
		    ((struct rte_ipv6_hdr *)ip)->proto != IPPROTO_TCP)
			return false;
		l3 = sizeof(struct rte_ipv6_hdr);
	} else {
		const struct rte_ipv4_hdr *h = (const struct rte_ipv4_hdr *)ip;

		if (h->next_proto_id != IPPROTO_TCP || ip4_is_fragment(h))
			return false;
		l3 = (uint16_t)((h->version_ihl & 0x0f) * 4);
	}
	if (len < l3 + sizeof(*tcp))
		return false;
	tcp = (struct rte_tcp_hdr *)(ip + l3);
	doff = (uint16_t)((tcp->data_off >> 4) * 4);
	if (!(tcp->tcp_flags & RTE_TCP_SYN_FLAG) || doff <= sizeof(*tcp) || l3 + doff > len)
		return false;
	opt = (uint8_t *)(tcp + 1);
	end = (uint8_t *)tcp + doff;
	while (opt < end && *opt != 0) {		/* 0: end of options */
		if (*opt == 1) {			/* no-op */
			opt++;
			continue;
		}
		if (opt + 1 >= end || opt[1] < 2 || opt + opt[1] > end)
			return false;			/* malformed: leave it */
		if (opt[0] == 2 && opt[1] == 4) {	/* MSS */
			rte_be16_t old, new = rte_cpu_to_be_16(mss);

			memcpy(&old, opt + 2, 2);
			if (rte_be_to_cpu_16(old) <= mss)
				return false;
			memcpy(opt + 2, &new, 2);
			/* The value is one 16-bit word of the checksummed data
			 * when it sits at an even offset (it does: MSS comes
			 * first in practice); otherwise sum the segment again. */
			if (((opt + 2 - (uint8_t *)tcp) & 1) == 0) {
				tcp->cksum = ip_cksum_update(tcp->cksum, old, new);
			} else {
				tcp->cksum = 0;
				tcp->cksum = ip[0] >> 4 == 6 ?
					rte_ipv6_udptcp_cksum((struct rte_ipv6_hdr *)ip, tcp) :
					rte_ipv4_udptcp_cksum((struct rte_ipv4_hdr *)ip, tcp);
			}
			return true;
		}
		opt += opt[1];
	}
	return false;
}
