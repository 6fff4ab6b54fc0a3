/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_esp_in.c - frames arriving on the outside port, through the real
 * inbound path (worker_rx): classification (MAC, ARP and Neighbour Discovery
 * to the main lcore's slow path, IPv4/IPv6 header checks), outer reassembly
 * of IPv4 and IPv6 fragments, NAT-T classification (UDP port, keepalive, IKE
 * marker), SPI lookup, encapsulation check, ESN inference and the replay
 * window, decryption and ICV, padding and next header, the inner packet and
 * the selectors, ECN and TTL, MSS clamping, routing to the inside port.
 *
 * An input is a list of records, each one or more frames:
 *
 *   kind (1) | length (2, big endian) | body
 *
 *   kind & 3:  0  body is a whole frame, Ethernet header included
 *              1  body is an IP packet; an Ethernet header to our MAC is added
 *              2  sealed ESP for one of the fixed inbound SAs (below)
 *              3  as 1, lengths and checksums fixed first (fuzz_fix_ip)
 *   kind & 4:  the burst ends after this record (else after 32 frames)
 *   kind & 8:  kinds 0, 1, 3: the frame arrives in two chained segments
 *   kind >> 6: 1, 2, 3: a capture starts at the decrypted, outside-tx or
 *              inside-rx point (dpvpnctl trace) before this record
 *
 * A sealed body is encrypted and authenticated with the inbound SA's own
 * expanded key (crypto.h, esp_aad / esp_hmac_span as the decap stage uses
 * them), so the ICV checks out and the fuzzer reaches the checks behind it:
 *
 *   tunnel (1) | flags (1) | tos (1) | frag (1) | seq low (4) | seq high (1) |
 *   next header (1) | IV (16, the SA's IV length used) | plaintext
 *
 * flags: 0x01 append the RFC 4303 trailer (padding 1, 2, ..., pad length,
 * next header), 0x02 fix the plaintext's IP lengths and checksum, 0x04
 * fragment the outer packet (frag * 8 bytes a fragment), 0x08 fragments in
 * reverse order, 0x10 next header from the record (else the SA's inner
 * family), 0x20 UDP encapsulation the other way round from the SA, 0x40 one
 * padding byte wrong, 0x80 padding longer by up to 255 bytes.
 */
#include <string.h>

#include <rte_ip.h>
#include <rte_udp.h>

#include "crypto.h"
#include "esp.h"
#include "fuzz_dp.h"
#include "sa.h"

#define SEAL_HDR	26
#define MAX_FRAGS	32

enum {
	F_TRAILER = 0x01, F_FIX = 0x02, F_FRAG = 0x04, F_REVERSE = 0x08, F_NH = 0x10,
	F_SWAP_UDP = 0x20, F_BAD_PAD = 0x40, F_LONG_PAD = 0x80,
};

static const struct rte_ether_addr peer_mac = { { 0x02, 0, 0, 0, 0x0b, 0x02 } };
static const uint8_t trace_points[4] = {
	DPVPN_TRACE_OFF, DPVPN_TRACE_DECRYPTED, DPVPN_TRACE_OUTSIDE_TX, DPVPN_TRACE_INSIDE_RX,
};

struct burst {
	struct rte_mbuf *pkts[DP_BURST];
	uint16_t n;
	unsigned int total;
};

static void
flush(struct burst *b)
{
	if (b->n > 0)
		fuzz_rx(FUZZ_OUTSIDE, b->pkts, b->n);
	b->n = 0;
}

static void
deliver(struct burst *b, const uint8_t *frame, size_t len, bool chained)
{
	struct rte_mbuf *m;

	if (b->total >= FUZZ_MAX_FRAMES)
		return;
	m = chained ? fuzz_mbuf_chain(frame, len) : fuzz_mbuf(frame, len, true);
	if (m == NULL)
		return;
	b->total++;
	b->pkts[b->n++] = m;
	if (b->n == DP_BURST)
		flush(b);
}

static size_t
ether(uint8_t *f, bool v6)
{
	struct rte_ether_hdr *eth = (struct rte_ether_hdr *)f;

	eth->dst_addr = dp.ports[FUZZ_OUTSIDE].mac;
	eth->src_addr = peer_mac;
	eth->ether_type = rte_cpu_to_be_16(v6 ? RTE_ETHER_TYPE_IPV6 : RTE_ETHER_TYPE_IPV4);
	return sizeof(*eth);
}

/* An IP packet from the peer: Ethernet header added, maybe fixed up first. */
static void
ip_record(struct burst *b, const uint8_t *body, size_t len, bool fix, bool chained)
{
	uint8_t f[FUZZ_MAX_FRAME];
	size_t off;

	if (len + sizeof(struct rte_ether_hdr) > sizeof(f))
		return;
	off = ether(f, len > 0 && body[0] >> 4 == 6);
	memcpy(f + off, body, len);
	if (fix)
		fuzz_fix_ip(f + off, len);
	deliver(b, f, off + len, chained);
}

/* Outer IPv4 fragments of the packet at ip (frag bytes of payload each). */
static void
fragment4(struct burst *b, const uint8_t *ip, size_t len, size_t frag, bool reverse)
{
	static uint8_t f[MAX_FRAGS][FUZZ_MAX_FRAME];
	size_t flen[MAX_FRAGS], payload = len - sizeof(struct rte_ipv4_hdr), n = 0;

	for (size_t off = 0; off < payload && n < MAX_FRAGS; off += frag, n++) {
		size_t chunk = RTE_MIN(frag, payload - off), h = ether(f[n], false);
		struct rte_ipv4_hdr *fh = (struct rte_ipv4_hdr *)(f[n] + h);
		bool more = off + chunk < payload;

		memcpy(fh, ip, sizeof(*fh));
		memcpy(fh + 1, ip + sizeof(*fh) + off, chunk);
		fh->total_length = rte_cpu_to_be_16((uint16_t)(sizeof(*fh) + chunk));
		fh->fragment_offset = rte_cpu_to_be_16((uint16_t)(off / 8) |
						       (more ? RTE_IPV4_HDR_MF_FLAG : 0));
		fh->hdr_checksum = 0;
		fh->hdr_checksum = rte_ipv4_cksum(fh);
		flen[n] = h + sizeof(*fh) + chunk;
	}
	for (size_t i = 0; i < n; i++) {
		size_t k = reverse ? n - 1 - i : i;

		deliver(b, f[k], flen[k], false);
	}
}

/* Outer IPv6 fragments: a fragment header right after the IPv6 header. */
static void
fragment6(struct burst *b, const uint8_t *ip, size_t len, size_t frag, bool reverse)
{
	static uint8_t f[MAX_FRAGS][FUZZ_MAX_FRAME];
	size_t flen[MAX_FRAGS], payload = len - sizeof(struct rte_ipv6_hdr), n = 0;

	for (size_t off = 0; off < payload && n < MAX_FRAGS; off += frag, n++) {
		size_t chunk = RTE_MIN(frag, payload - off), h = ether(f[n], true);
		struct rte_ipv6_hdr *fh = (struct rte_ipv6_hdr *)(f[n] + h);
		struct rte_ipv6_fragment_ext *x = (struct rte_ipv6_fragment_ext *)(fh + 1);
		bool more = off + chunk < payload;

		memcpy(fh, ip, sizeof(*fh));
		x->next_header = fh->proto;
		x->reserved = 0;
		x->frag_data = rte_cpu_to_be_16((uint16_t)(off & ~7u) | (more ? 1 : 0));
		x->id = rte_cpu_to_be_32(0x1234);
		fh->proto = IPPROTO_FRAGMENT;
		memcpy(x + 1, ip + sizeof(*fh) + off, chunk);
		fh->payload_len = rte_cpu_to_be_16((uint16_t)(sizeof(*x) + chunk));
		flen[n] = h + sizeof(*fh) + sizeof(*x) + chunk;
	}
	for (size_t i = 0; i < n; i++) {
		size_t k = reverse ? n - 1 - i : i;

		deliver(b, f[k], flen[k], false);
	}
}

/* The outer header (and UDP) for sa, from the peer to us; returns its length. */
static size_t
outer(const struct sa *sa, uint8_t *ip, uint8_t tos, bool udp, size_t total)
{
	const struct dp_port *p = &dp.ports[FUZZ_OUTSIDE];
	size_t l3;

	if (sa->outer6) {
		struct rte_ipv6_hdr *h = (struct rte_ipv6_hdr *)ip;

		memset(h, 0, sizeof(*h));
		h->vtc_flow = rte_cpu_to_be_32(6u << 28 | (uint32_t)tos << 20);
		h->payload_len = rte_cpu_to_be_16((uint16_t)(total - sizeof(*h)));
		h->proto = udp ? IPPROTO_UDP : IPPROTO_ESP;
		h->hop_limits = 64;
		memcpy(h->src_addr, sa->remote6, 16);
		memcpy(h->dst_addr, p->addr6, 16);
		l3 = sizeof(*h);
	} else {
		struct rte_ipv4_hdr *h = (struct rte_ipv4_hdr *)ip;

		memset(h, 0, sizeof(*h));
		h->version_ihl = RTE_IPV4_VHL_DEF;
		h->type_of_service = tos;
		h->total_length = rte_cpu_to_be_16((uint16_t)total);
		h->packet_id = rte_cpu_to_be_16(7);
		h->time_to_live = 64;
		h->next_proto_id = udp ? IPPROTO_UDP : IPPROTO_ESP;
		h->src_addr = sa->remote;
		h->dst_addr = p->addr;
		h->hdr_checksum = rte_ipv4_cksum(h);
		l3 = sizeof(*h);
	}
	if (udp) {
		struct rte_udp_hdr *u = (struct rte_udp_hdr *)(ip + l3);

		u->src_port = rte_cpu_to_be_16(4500);
		u->dst_port = sa->udp ? sa->udp_local : rte_cpu_to_be_16(4500);
		u->dgram_len = rte_cpu_to_be_16((uint16_t)(total - l3));
		u->dgram_cksum = 0;
		l3 += sizeof(*u);
	}
	return l3;
}

/* The plaintext with the ESP trailer the flags ask for; returns its length. */
static size_t
plaintext(const struct sa *sa, uint8_t *pt, size_t room, struct fuzz_in *in, uint8_t flags,
	  uint8_t nh, uint8_t extra)
{
	size_t len, pad;
	const uint8_t *body = fuzz_bytes(in, room - 256 - 2 - sa->block, &len);

	memcpy(pt, body, len);
	if (flags & F_FIX)
		fuzz_fix_ip(pt, len);
	if (!(flags & F_TRAILER)) {	/* raw: only made a whole number of blocks */
		pad = -len & (sa->block - 1);
		memset(pt + len, 0, pad);
		return len + pad;
	}
	pad = -(len + ESP_TRAILER_LEN) & (sa->block - 1);
	if (flags & F_LONG_PAD)
		pad += (size_t)(extra % ((255 - pad) / sa->block + 1)) * sa->block;
	for (size_t i = 0; i < pad; i++)
		pt[len + i] = (uint8_t)(i + 1);
	if ((flags & F_BAD_PAD) && pad > 0)
		pt[len + pad - 1] ^= 0x5a;
	pt[len + pad] = (uint8_t)pad;
	pt[len + pad + 1] = (flags & F_NH) ? nh : sa->inner6 ? IPPROTO_IPV6 : IPPROTO_IPIP;
	return len + pad + ESP_TRAILER_LEN;
}

/* Seal in place: esp points at the ESP header, ct_len bytes follow the IV. */
static void
seal(struct sa *sa, uint8_t *esp, size_t ct_len, uint64_t seq)
{
	struct crypto_op op = { .key = &sa->key, .dir = CRYPTO_ENCRYPT };

	op.data = esp + ESP_HDR_LEN + sa->iv_len;
	op.len = (uint32_t)ct_len;
	op.tag = op.data + op.len;
	if (sa->aead) {
		esp_aad(&op, sa, esp, seq);
		memcpy(op.iv, &sa->salt, 4);
		memcpy(op.iv + 4, esp + ESP_HDR_LEN, 8);
	} else {
		esp_hmac_span(&op, sa, esp, seq);
	}
	crypto_run(fuzz_w->esp.mb, &op, 1);	/* a refused job leaves garbage: fine */
}

static void
sealed_record(struct burst *b, const uint8_t *body, size_t blen)
{
	static uint8_t f[FUZZ_MAX_FRAME + 512];
	struct fuzz_in in = { body, blen };
	const struct fuzz_tunnel *t = &fuzz_tunnels[fuzz_u8(&in) % FUZZ_TUNNELS];
	uint8_t flags = fuzz_u8(&in), tos = fuzz_u8(&in), frag = fuzz_u8(&in);
	uint32_t lo = fuzz_u32(&in);
	uint64_t seq = (uint64_t)fuzz_u8(&in) << 32 | lo;
	uint8_t nh = fuzz_u8(&in), iv[16];
	struct sa *sa = sa_lookup_in(t->in.spi);
	bool udp = (sa->udp != 0) != ((flags & F_SWAP_UDP) != 0), v6 = sa->outer6;
	size_t got, l2 = ether(f, v6), hdr, ct_len, total;
	const uint8_t *ivp = fuzz_bytes(&in, sizeof(iv), &got);
	uint8_t *ip = f + l2, *esp;

	memset(iv, 0, sizeof(iv));
	memcpy(iv, ivp, got);
	/* room: outer headers (48) + ESP header and IV (24) + ICV (16) */
	hdr = (v6 ? 40 : 20) + (udp ? 8 : 0);
	ct_len = plaintext(sa, ip + hdr + ESP_HDR_LEN + sa->iv_len,
			   FUZZ_MAX_FRAME - l2 - hdr - ESP_HDR_LEN - sa->iv_len - sa->icv_len, &in,
			   flags, nh, frag);
	total = hdr + ESP_HDR_LEN + sa->iv_len + ct_len + sa->icv_len;
	outer(sa, ip, tos, udp, total);
	esp = ip + hdr;
	memcpy(esp, &sa->spi, 4);
	memcpy(esp + 4, &(uint32_t){ rte_cpu_to_be_32((uint32_t)seq) }, 4);
	memcpy(esp + ESP_HDR_LEN, iv, sa->iv_len);
	seal(sa, esp, ct_len, seq);
	if (!(flags & F_FRAG)) {
		deliver(b, f, l2 + total, false);
		return;
	}
	/* payload bytes a fragment: a multiple of 8, enough for MAX_FRAGS to cover it */
	size_t fs = (size_t)(frag > 0 ? frag : 1) * 8;

	fs = RTE_MAX(fs, (total / MAX_FRAGS + 8) & ~(size_t)7);

	if (v6)
		fragment6(b, ip, total, fs, flags & F_REVERSE);
	else
		fragment4(b, ip, total, fs, flags & F_REVERSE);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_dp_init("fuzz_esp_in");
	fuzz_dp_ike_channel();
	fuzz_dp_install_sas();
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	struct burst b = { .n = 0 };

	fuzz_dp_reset();
	while (in.n >= 3) {
		uint8_t kind = fuzz_u8(&in);
		size_t want = (size_t)fuzz_u8(&in) << 8, len;
		const uint8_t *body;

		want |= fuzz_u8(&in);
		body = fuzz_bytes(&in, want, &len);
		fuzz_trace(trace_points[kind >> 6]);
		switch (kind & 3) {
		case 0:
			deliver(&b, body, len, kind & 8);
			break;
		case 1:
		case 3:
			ip_record(&b, body, len, (kind & 3) == 3, kind & 8);
			break;
		default:
			if (len >= SEAL_HDR)
				sealed_record(&b, body, len);
			break;
		}
		if (kind & 4)
			flush(&b);
	}
	flush(&b);
	fuzz_dp_finish();
	return 0;
}
