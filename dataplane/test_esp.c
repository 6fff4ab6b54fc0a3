/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_esp.c - ESP encap/decap on real mbufs with the real SA table and
 * ipsec-mb: round trips at many sizes, each packet also checked by an
 * independent implementation (OpenSSL EVP AES-GCM); tampering, replay,
 * unknown SPI and truncation counted under their reasons; and the
 * draft-mcgrew-gcm-test-01 known-answer vectors through the crypto layer.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <cmocka.h>
#include <openssl/evp.h>

#include <rte_eal.h>
#include <rte_ip.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_rcu_qsbr.h>

#include "crypto.h"
#include "dp.h"
#include "esp.h"
#include "ip.h"
#include "route.h"
#include "sa.h"
#include "spd.h"
#include "test_gcm_vectors.h"

/* RTE_IPV4 shifts a signed int past its top bit (UB for 198 << 24): ours does not */
#define IP4(a, b, c, d) ((uint32_t)(a) << 24 | (uint32_t)(b) << 16 | (uint32_t)(c) << 8 | (uint32_t)(d))

struct dp_state dp;
struct dp_lstats dp_lstats[RTE_MAX_LCORE];

static struct dp_worker wk;
static struct dp_lstats *st;
static struct dp_out out_buf, self_buf;	/* what a stage hands back besides its burst */

static struct dp_out *
out(void)
{
	out_buf.n = 0;
	return &out_buf;
}

static struct dp_out *
self(void)
{
	self_buf.n = 0;
	return &self_buf;
}
static const struct dp_port in_port = { .addr = RTE_BE32(IP4(198, 18, 1, 1)) };
static const struct dp_port peer_port = { .addr = RTE_BE32(IP4(198, 19, 0, 2)) };

static const uint8_t key128[16] = "0123456789abcdef";
static const uint8_t salt[4] = { 0xca, 0xfe, 0xba, 0xbe };
#define SPI	RTE_BE32(0x1001)

#define V4ADDR(a)	((struct dpvpn_addr){ .family = DPVPN_AF_INET, .v4 = RTE_BE32(a) })
#define V4PFX(a, l)	((struct dpvpn_prefix){ .family = DPVPN_AF_INET, .len = (l), \
					.v4 = RTE_BE32(a) })

static void
sa_cfg(struct dpvpn_sa_cfg *c, uint8_t dir)
{
	bool out = dir == DPVPN_DIR_OUT;

	memset(c, 0, sizeof(*c));
	c->spi = SPI;
	c->dir = dir;
	c->alg = DPVPN_ALG_AES128_GCM;
	c->key_len = 16;
	c->replay_window = 64;
	memcpy(c->key, key128, 16);
	memcpy(c->salt, salt, 4);
	/* The outbound SA is gateway A's; the inbound one is gateway B's view. */
	c->local = V4ADDR(out ? IP4(198, 19, 0, 1) : IP4(198, 19, 0, 2));
	c->remote = V4ADDR(out ? IP4(198, 19, 0, 2) : IP4(198, 19, 0, 1));
	c->local_ts = V4PFX(out ? IP4(198, 18, 1, 0) : IP4(198, 18, 2, 0), 24);
	c->remote_ts = V4PFX(out ? IP4(198, 18, 2, 0) : IP4(198, 18, 1, 0), 24);
	snprintf(c->name, sizeof(c->name), "test");
}

static int
setup(void **state)
{
	char prefix[64];
	char *argv[] = { "test_esp", "--no-huge", "-m", "256", "--no-pci", "-l", "0",
			 "--log-level", "lib.*:error", "--file-prefix", prefix };
	struct dpvpn_sa_cfg c;
	struct dpvpn_policy p = { .src = V4PFX(IP4(198, 18, 1, 0), 24),
				  .dst = V4PFX(IP4(198, 18, 2, 0), 24),
				  .spi = SPI };
	char err[256];

	(void)state;
	snprintf(prefix, sizeof(prefix), "test_esp_%d", getpid());
	if (rte_eal_init((int)RTE_DIM(argv), argv) < 0)
		return -1;
	if (dp_meta_init() != 0)
		return -1;
	dp.pool = rte_pktmbuf_pool_create("t", 1023, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, 0);
	dp.rcu = rte_zmalloc(NULL, rte_rcu_qsbr_get_memsize(4), 64);
	rte_rcu_qsbr_init(dp.rcu, 4);
	wk.esp.mb = crypto_mgr_create();
	st = &dp_lstats[0];
	/* gateway A's outside port, jumbo: no packet of these tests is over
	 * the tunnel MTU (tests/test_pmtu.py covers that end to end) */
	dp.n_ports = 1;
	dp.ports[0] = (struct dp_port){ .role = DPVPN_ROLE_OUTSIDE, .mtu = 9000,
					.addr = RTE_BE32(IP4(198, 19, 0, 1)) };
	/* no routes: what the stages send themselves (ICMP errors) is no-route */
	if (dp.pool == NULL || wk.esp.mb == NULL || sa_init(1, 64) || spd_init(64) ||
	    route_init(ROUTE_MAX_DEFAULT))
		return -1;
	sa_cfg(&c, DPVPN_DIR_OUT);
	if (sa_add(&c, wk.esp.mb, err, sizeof(err)) || spd_add(&p, err, sizeof(err)))
		return -1;
	sa_cfg(&c, DPVPN_DIR_IN);
	return sa_add(&c, wk.esp.mb, err, sizeof(err));
}

/* An inner IPv4/UDP packet of total length len (>= 20). */
static struct rte_mbuf *
inner_packet(uint16_t len, uint32_t src, uint32_t dst)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(dp.pool);
	uint8_t *d = (uint8_t *)rte_pktmbuf_append(m, len);
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)d;

	for (uint16_t i = 0; i < len; i++)
		d[i] = (uint8_t)(i * 7 + len);
	memset(ip, 0, sizeof(*ip));
	ip->version_ihl = RTE_IPV4_VHL_DEF;
	ip->type_of_service = 0xb9;	/* DSCP 46, ECN 1 */
	ip->total_length = rte_cpu_to_be_16(len);
	ip->time_to_live = 63;
	ip->next_proto_id = IPPROTO_UDP;
	ip->src_addr = src;
	ip->dst_addr = dst;
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	return m;
}

#define HOST_A	RTE_BE32(IP4(198, 18, 1, 2))
#define HOST_B	RTE_BE32(IP4(198, 18, 2, 2))

/* Decrypt an ESP packet with OpenSSL and return the plaintext length, or -1. */
static int
openssl_open(const uint8_t *esp, int esp_len, uint8_t *plain)
{
	EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
	uint8_t nonce[12];
	int len, n = esp_len - 8 - 8 - 16, ok;

	memcpy(nonce, salt, 4);
	memcpy(nonce + 4, esp + 8, 8);
	ok = EVP_DecryptInit_ex(ctx, EVP_aes_128_gcm(), NULL, key128, nonce) &&
	     EVP_DecryptUpdate(ctx, NULL, &len, esp, 8) &&
	     EVP_DecryptUpdate(ctx, plain, &len, esp + 16, n) &&
	     EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, 16, (void *)(esp + 16 + n)) &&
	     EVP_DecryptFinal_ex(ctx, plain + len, &len);
	EVP_CIPHER_CTX_free(ctx);
	return ok ? n : -1;
}

static void
check_wire(struct rte_mbuf *m, const uint8_t *inner, uint16_t len, uint64_t seq)
{
	const struct rte_ipv4_hdr *o = rte_pktmbuf_mtod(m, struct rte_ipv4_hdr *);
	const uint8_t *esp = (const uint8_t *)(o + 1);
	int esp_len = rte_pktmbuf_data_len(m) - 20, n;
	uint8_t plain[2048];
	uint64_t iv;

	assert_int_equal(o->next_proto_id, IPPROTO_ESP);
	assert_int_equal(rte_be_to_cpu_16(o->total_length), rte_pktmbuf_data_len(m));
	assert_int_equal(rte_raw_cksum(o, 20), 0xffff);
	assert_int_equal(o->dst_addr, RTE_BE32(IP4(198, 19, 0, 2)));
	assert_int_equal(o->type_of_service, 0xb9);	/* DSCP and ECN copied */
	assert_int_equal(o->fragment_offset, 0);	/* DF copied: the inner has none */
	assert_memory_equal(esp, &(uint32_t){ SPI }, 4);
	assert_int_equal(rte_be_to_cpu_32(*(const uint32_t *)(esp + 4)), seq);
	memcpy(&iv, esp + 8, 8);
	assert_int_equal(rte_be_to_cpu_64(iv), seq);	/* IV unique: the sequence */
	n = openssl_open(esp, esp_len, plain);
	assert_true(n >= len + 2);
	assert_int_equal(n % 4, 0);
	assert_memory_equal(plain, inner, len);
	assert_int_equal(plain[n - 1], 4);		/* next header: IPv4 */
	assert_int_equal(plain[n - 2], n - 2 - len);	/* pad length */
	for (int i = 0; i < plain[n - 2]; i++)
		assert_int_equal(plain[len + i], i + 1);
}

/* The packet as a forwarding gateway passes it on: TTL one less, sum redone. */
static void
forwarded(uint8_t *pkt)
{
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)pkt;

	ip->time_to_live--;
	ip->hdr_checksum = 0;
	ip->hdr_checksum = rte_ipv4_cksum(ip);
}

static void
test_round_trip(void **state)
{
	static const uint16_t sizes[] = { 20, 21, 22, 23, 24, 64, 333, 1400, 1500 };
	static uint64_t seq;

	(void)state;
	for (size_t i = 0; i < RTE_DIM(sizes); i++) {
		struct rte_mbuf *m = inner_packet(sizes[i], HOST_A, HOST_B);
		uint8_t copy[2048];

		memcpy(copy, rte_pktmbuf_mtod(m, void *), sizes[i]);
		assert_int_equal(esp_encap_burst(&wk, st, &in_port, &m, 1, out()), 1);
		forwarded(copy);	/* gateway A forwarded it */
		check_wire(m, copy, sizes[i], ++seq);
		assert_int_equal(esp_decap_burst(&wk, st, &peer_port, &m, 1, self()), 1);
		/* as it was sealed: gateway B's step is its output stage's (route_tx) */
		assert_int_equal(rte_pktmbuf_data_len(m), sizes[i]);
		assert_memory_equal(rte_pktmbuf_mtod(m, void *), copy, sizes[i]);
		rte_pktmbuf_free(m);
	}
}

static uint64_t
drops(enum dpvpn_drop_reason r)
{
	return st->drops[r];
}

/* Encapsulate one packet and hand back its wire bytes. */
static struct rte_mbuf *
one_esp(void)
{
	struct rte_mbuf *m = inner_packet(100, HOST_A, HOST_B);

	assert_int_equal(esp_encap_burst(&wk, st, &in_port, &m, 1, out()), 1);
	return m;
}

static struct rte_mbuf *
clone(const struct rte_mbuf *m)
{
	struct rte_mbuf *c = rte_pktmbuf_alloc(dp.pool);

	memcpy(rte_pktmbuf_append(c, rte_pktmbuf_data_len(m)), rte_pktmbuf_mtod(m, void *),
	       rte_pktmbuf_data_len(m));
	return c;
}

static void
expect_drop(struct rte_mbuf *m, enum dpvpn_drop_reason why)
{
	uint64_t before = drops(why);

	assert_int_equal(esp_decap_burst(&wk, st, &peer_port, &m, 1, self()), 0);
	assert_int_equal(drops(why), before + 1);
}

static void
test_bad_input(void **state)
{
	struct rte_mbuf *m = one_esp(), *c;
	uint16_t len = rte_pktmbuf_data_len(m);

	(void)state;
	c = clone(m);		/* ICV flipped */
	rte_pktmbuf_mtod(c, uint8_t *)[len - 1] ^= 1;
	expect_drop(c, DPVPN_DROP_BAD_ICV);
	c = clone(m);		/* ciphertext flipped */
	rte_pktmbuf_mtod(c, uint8_t *)[40] ^= 0x80;
	expect_drop(c, DPVPN_DROP_BAD_ICV);
	c = clone(m);		/* unknown SPI */
	rte_pktmbuf_mtod(c, uint8_t *)[20] ^= 0xff;
	expect_drop(c, DPVPN_DROP_UNKNOWN_SPI);
	c = clone(m);		/* truncated to the ESP header: outer length kept sound */
	rte_pktmbuf_trim(c, (uint16_t)(len - 20 - 8 - 8 - 16));
	rte_pktmbuf_mtod(c, struct rte_ipv4_hdr *)->total_length =
		rte_cpu_to_be_16(rte_pktmbuf_data_len(c));
	expect_drop(c, DPVPN_DROP_SHORT);
	c = clone(m);		/* the original is accepted once ... */
	assert_int_equal(esp_decap_burst(&wk, st, &peer_port, &c, 1, self()), 1);
	rte_pktmbuf_free(c);
	expect_drop(m, DPVPN_DROP_REPLAY);	/* ... and only once */
	assert_int_equal(st->replay_late, 0);	/* a repeat inside the window */
}

/* A packet that arrives after 64 newer ones (the window) is late: a replay
 * drop counted as replay_late too. */
static void
test_replay_late(void **state)
{
	struct rte_mbuf *old = one_esp(), *m;
	uint64_t late = st->replay_late;

	(void)state;
	for (int i = 0; i < 64; i++) {
		m = one_esp();
		assert_int_equal(esp_decap_burst(&wk, st, &peer_port, &m, 1, self()), 1);
		rte_pktmbuf_free(m);
	}
	expect_drop(old, DPVPN_DROP_REPLAY);
	assert_int_equal(st->replay_late, late + 1);
}

static void
test_replay_in_one_burst(void **state)
{
	struct rte_mbuf *b[3];

	(void)state;
	b[0] = one_esp();
	b[1] = clone(b[0]);
	b[2] = one_esp();
	assert_int_equal(esp_decap_burst(&wk, st, &peer_port, b, 3, self()), 2);
	rte_pktmbuf_free(b[0]);
	rte_pktmbuf_free(b[1]);
}

static void
test_policy_mismatch(void **state)
{
	/* A packet from outside the peer's selectors, sealed under the SA. */
	struct rte_mbuf *m = inner_packet(60, RTE_BE32(IP4(203, 0, 113, 9)), HOST_B);
	struct dpvpn_policy p = { .src = V4PFX(IP4(203, 0, 113, 0), 24),
				  .dst = V4PFX(IP4(198, 18, 2, 0), 24),
				  .spi = SPI };
	char err[256];

	(void)state;
	assert_int_equal(spd_add(&p, err, sizeof(err)), 0);
	assert_int_equal(esp_encap_burst(&wk, st, &in_port, &m, 1, out()), 1);
	expect_drop(m, DPVPN_DROP_POLICY_MISMATCH);
	m = inner_packet(60, HOST_A, RTE_BE32(IP4(192, 0, 2, 1)));
	assert_int_equal(esp_encap_burst(&wk, st, &in_port, &m, 1, out()), 0);	/* no policy */
	assert_int_equal(drops(DPVPN_DROP_NO_POLICY), 1);
}

/*
 * An SA with selector lists (SA_ADD's more_lts/more_rts): inbound, a packet
 * from any of the peer's prefixes to any of ours is taken, the first pair's
 * or not; one outside all of one side is policy-mismatch.
 */
static void
test_selector_lists(void **state)
{
	static const struct {
		uint32_t src, dst;
		bool ok;
	} cases[] = {
		{ IP4(10, 1, 0, 5), IP4(10, 2, 0, 7), true },		/* second x second */
		{ IP4(198, 18, 1, 2), IP4(10, 3, 9, 9), true },		/* first x third */
		{ IP4(10, 1, 0, 5), IP4(198, 18, 2, 2), true },		/* second x first */
		{ IP4(198, 18, 1, 2), IP4(198, 18, 2, 2), true },	/* first x first */
		{ IP4(203, 0, 113, 9), IP4(10, 2, 0, 7), false },	/* src outside all */
		{ IP4(10, 1, 0, 5), IP4(192, 0, 2, 1), false },		/* dst outside all */
	};
	const uint32_t spi = RTE_BE32(0x1002);
	struct dpvpn_sa_cfg c;
	char err[256];

	(void)state;
	for (int dir = DPVPN_DIR_IN; dir <= DPVPN_DIR_OUT; dir++) {
		bool o = dir == DPVPN_DIR_OUT;

		sa_cfg(&c, (uint8_t)dir);
		c.spi = spi;
		c.n_more_lts = o ? 1 : 2;
		c.n_more_rts = o ? 2 : 1;
		c.more_lts[0] = V4PFX(o ? IP4(10, 1, 0, 0) : IP4(10, 2, 0, 0), 16);
		c.more_rts[0] = V4PFX(o ? IP4(10, 2, 0, 0) : IP4(10, 1, 0, 0), 16);
		c.more_lts[1] = c.more_rts[1] = V4PFX(IP4(10, 3, 0, 0), 16);
		assert_int_equal(sa_add(&c, wk.esp.mb, err, sizeof(err)), 0);
	}
	for (size_t i = 0; i < RTE_DIM(cases); i++) {
		/* gateway A's policy sends it by the list SA whatever its addresses */
		struct dpvpn_policy p = { .src = V4PFX(cases[i].src, 32),
					  .dst = V4PFX(cases[i].dst, 32), .spi = spi };
		struct rte_mbuf *m = inner_packet(60, RTE_BE32(cases[i].src),
						  RTE_BE32(cases[i].dst));

		assert_int_equal(spd_add(&p, err, sizeof(err)), 0);
		assert_int_equal(esp_encap_burst(&wk, st, &in_port, &m, 1, out()), 1);
		if (cases[i].ok) {
			assert_int_equal(esp_decap_burst(&wk, st, &peer_port, &m, 1, self()), 1);
			rte_pktmbuf_free(m);
		} else {
			expect_drop(m, DPVPN_DROP_POLICY_MISMATCH);
		}
		assert_int_equal(spd_del(&p, err, sizeof(err)), 0);
	}
	/* more than DPVPN_SEL_MAX per side, or another family: refused */
	sa_cfg(&c, DPVPN_DIR_IN);
	c.spi = RTE_BE32(0x1003);
	c.n_more_rts = DPVPN_SEL_MAX;
	assert_int_not_equal(sa_add(&c, wk.esp.mb, err, sizeof(err)), 0);
	c.n_more_rts = 1;
	c.more_rts[0] = (struct dpvpn_prefix){ .family = DPVPN_AF_INET6, .len = 64 };
	assert_int_not_equal(sa_add(&c, wk.esp.mb, err, sizeof(err)), 0);
	assert_int_equal(sa_del(spi, DPVPN_DIR_OUT, err, sizeof(err)), 0);
	assert_int_equal(sa_del(spi, DPVPN_DIR_IN, err, sizeof(err)), 0);
}

static void
test_known_answers(void **state)
{
	(void)state;
	for (size_t i = 0; i < RTE_DIM(gcm_esp_vectors); i++) {
		const struct gcm_esp_vector *v = &gcm_esp_vectors[i];
		struct crypto_key *k = rte_zmalloc(NULL, sizeof(*k), 64);
		uint8_t buf[2048], aad[8], tag[16];
		struct crypto_op op = { .key = k, .data = buf, .len = v->plain_len,
					.aad = aad, .aad_len = 8, .tag = tag };

		memcpy(aad, v->spi, 4);
		memcpy(aad + 4, v->seq, 4);
		memcpy(op.iv, v->salt, 4);
		memcpy(op.iv + 4, v->iv, 8);
		assert_true(crypto_key_init(wk.esp.mb, k, v->key_len == 16 ? DPVPN_ALG_AES128_GCM :
					    DPVPN_ALG_AES256_GCM, v->key, v->key_len, NULL, 0));
		memcpy(buf, v->plain, v->plain_len);
		op.dir = CRYPTO_ENCRYPT;
		crypto_run(wk.esp.mb, &op, 1);
		assert_true(op.ok);
		if (memcmp(buf, v->cipher, v->plain_len) || memcmp(tag, v->icv, 16))
			fail_msg("%s: encryption differs", v->name);
		op.dir = CRYPTO_DECRYPT;
		crypto_run(wk.esp.mb, &op, 1);
		assert_true(op.ok);
		assert_memory_equal(buf, v->plain, v->plain_len);
		assert_true(crypto_icv_equal(op.computed, v->icv, 16));
		crypto_key_wipe(k);
		rte_free(k);
	}
}

/* RFC 6040 4.2, every cell: [inner][outer] -> inner after decap, -1 drop. */
static void
test_ecn_table(void **state)
{
	static const int want[4][4] = {
		/* outer:  Not-ECT  ECT(1)  ECT(0)  CE */
		[0] = { 0, 0, 0, -1 },		/* inner Not-ECT */
		[1] = { 1, 1, 1, 3 },		/* inner ECT(1) */
		[2] = { 2, 1, 2, 3 },		/* inner ECT(0) */
		[3] = { 3, 3, 3, 3 },		/* inner CE */
	};

	(void)state;
	for (uint8_t in = 0; in < 4; in++)
		for (uint8_t out = 0; out < 4; out++)
			if (ip4_ecn_decap(in, out) != want[in][out])
				fail_msg("inner %u outer %u: %d, want %d", in, out,
					 ip4_ecn_decap(in, out), want[in][out]);
}

/* Encapsulate an inner packet with this TOS byte, then mark the outer CE. */
static struct rte_mbuf *
esp_with_outer_ce(uint8_t inner_tos)
{
	struct rte_mbuf *m = inner_packet(100, HOST_A, HOST_B);
	struct rte_ipv4_hdr *ip = rte_pktmbuf_mtod(m, struct rte_ipv4_hdr *);

	ip->type_of_service = inner_tos;
	ip->hdr_checksum = 0;
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	assert_int_equal(esp_encap_burst(&wk, st, &in_port, &m, 1, out()), 1);
	ip = rte_pktmbuf_mtod(m, struct rte_ipv4_hdr *);
	assert_int_equal(ip->type_of_service, inner_tos);
	ip->type_of_service |= ECN_CE;	/* congestion on the way */
	ip->hdr_checksum = 0;
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	return m;
}

static void
test_ecn_and_ttl_on_the_path(void **state)
{
	struct rte_mbuf *m;
	struct rte_ipv4_hdr *ip;

	(void)state;
	expect_drop(esp_with_outer_ce(0xb8), DPVPN_DROP_ECN_DROP);	/* inner Not-ECT */
	m = esp_with_outer_ce(0xb8 | ECN_ECT0);
	assert_int_equal(esp_decap_burst(&wk, st, &peer_port, &m, 1, self()), 1);
	ip = rte_pktmbuf_mtod(m, struct rte_ipv4_hdr *);
	assert_int_equal(ip->type_of_service, 0xb8 | ECN_CE);	/* CE reaches the host */
	assert_int_equal(rte_raw_cksum(ip, 20), 0xffff);
	rte_pktmbuf_free(m);

	uint64_t before = drops(DPVPN_DROP_TTL_EXPIRED), icmp = st->icmp_out;
	uint64_t no_route = drops(DPVPN_DROP_NO_ROUTE);

	m = inner_packet(60, HOST_A, HOST_B);	/* TTL 1: may not be forwarded */
	ip = rte_pktmbuf_mtod(m, struct rte_ipv4_hdr *);
	ip->time_to_live = 1;
	ip->hdr_checksum = 0;
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	assert_int_equal(esp_encap_burst(&wk, st, &in_port, &m, 1, out()), 0);
	assert_int_equal(drops(DPVPN_DROP_TTL_EXPIRED), before + 1);
	/* ICMP Time Exceeded built for the sender, handed back to be sent */
	assert_int_equal(st->icmp_out, icmp + 1);
	assert_int_equal(out_buf.n, 1);
	ip = rte_pktmbuf_mtod(out_buf.pkts[0], struct rte_ipv4_hdr *);
	assert_int_equal(ip->next_proto_id, IPPROTO_ICMP);
	assert_int_equal(ip->dst_addr, HOST_A);
	assert_int_equal(((const uint8_t *)(ip + 1))[0], 11);	/* Time Exceeded */
	rte_pktmbuf_free(out_buf.pkts[0]);
	assert_int_equal(drops(DPVPN_DROP_NO_ROUTE), no_route);	/* not routed in a stage */
}

/* Install an outbound SA with this SPI; returns its slot. */
static int
out_sa_df(uint32_t spi, uint8_t df)
{
	struct dpvpn_sa_cfg c;
	char err[256];

	sa_cfg(&c, DPVPN_DIR_OUT);
	c.spi = rte_cpu_to_be_32(spi);
	c.df = df;
	assert_int_equal(sa_add(&c, wk.esp.mb, err, sizeof(err)), 0);
	return sa_find(c.spi, DPVPN_DIR_OUT);
}

static void
add_policy(const char *src, uint8_t sl, const char *dst, uint8_t dl, uint32_t spi, uint32_t prio)
{
	struct dpvpn_policy p = { .src.len = sl, .dst.len = dl, .priority = prio,
				  .spi = rte_cpu_to_be_32(spi) };
	char err[256];

	p.src.family = p.dst.family = DPVPN_AF_INET;
	inet_pton(AF_INET, src, &p.src.v4);
	inet_pton(AF_INET, dst, &p.dst.v4);
	assert_int_equal(spd_add(&p, err, sizeof(err)), 0);
}

static int
out_sa(uint32_t spi)
{
	return out_sa_df(spi, DPVPN_DF_COPY);
}

struct spd_case {
	const char *src, *dst;
	uint32_t spi;		/* the SA that must be chosen, 0: none */
};

/* Each case as spd_classify answers it, and through a worker's flow cache (twice: a miss, a hit). */
static struct spd_cache flows;

static void
check_spd_cases(const struct spd_case *cases, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct rte_ipv4_hdr ip = { .version_ihl = RTE_IPV4_VHL_DEF };
		const uint8_t *hdr = (const uint8_t *)&ip;
		int32_t slot, want, cached[2];

		inet_pton(AF_INET, cases[i].src, &ip.src_addr);
		inet_pton(AF_INET, cases[i].dst, &ip.dst_addr);
		spd_classify(spd_get(), &hdr, &slot, 1);
		want = cases[i].spi == 0 ? -1 : sa_find(rte_cpu_to_be_32(cases[i].spi),
							 DPVPN_DIR_OUT);
		assert_int_equal(slot, want);
		spd_classify_flows(&flows, &hdr, &cached[0], 1);
		spd_classify_flows(&flows, &hdr, &cached[1], 1);
		assert_int_equal(cached[0], want);
		assert_int_equal(cached[1], want);
	}
}

/*
 * Which policy wins, as a table: lower priority value, then longer prefixes;
 * checked with the scan (few rules) and again with rte_acl.
 */
static void
test_spd_order(void **state)
{
	static const struct spd_case cases[] = {
		{ "10.1.1.1", "10.9.9.9", 0x3002 },	/* /16->/16 beats /8->/8 */
		{ "10.1.2.3", "10.9.1.1", 0x3003 },	/* /24->/24 more specific still */
		{ "10.2.0.1", "10.9.9.9", 0x3001 },	/* only the /8 rule matches */
		{ "10.1.2.3", "10.7.0.1", 0x3004 },	/* priority 50 beats everything */
		{ "11.0.0.1", "10.9.9.9", 0 },		/* no rule */
	};
	static const struct spd_case changed[] = {	/* with 10/9 -> 10.8/13 at 10 */
		{ "10.1.1.1", "10.9.9.9", 0x3001 },
		{ "10.1.2.3", "10.9.1.1", 0x3001 },
		{ "10.2.0.1", "10.9.9.9", 0x3001 },
		{ "10.1.2.3", "10.7.0.1", 0x3004 },
		{ "11.0.0.1", "10.9.9.9", 0 },
	};
	char err[256];

	(void)state;
	for (uint32_t spi = 0x3001; spi <= 0x3004; spi++)
		out_sa(spi);
	spd_begin();	/* one build for the four: the batch path */
	add_policy("10.0.0.0", 8, "10.0.0.0", 8, 0x3001, 100);
	add_policy("10.1.0.0", 16, "10.9.0.0", 16, 0x3002, 100);
	add_policy("10.1.2.0", 24, "10.9.1.0", 24, 0x3003, 100);
	add_policy("10.1.0.0", 16, "10.7.0.0", 16, 0x3004, 50);
	assert_int_equal(spd_commit(err, sizeof(err)), 0);
	check_spd_cases(cases, RTE_DIM(cases));
	spd_force_acl(true);	/* rebuilds with rte_acl (and the flow caches are used) */
	assert_int_equal(spd_commit(err, sizeof(err)), 0);
	check_spd_cases(cases, RTE_DIM(cases));
	/* a policy change is seen at once through the caches filled before it */
	add_policy("10.0.0.0", 9, "10.8.0.0", 13, 0x3001, 10);
	check_spd_cases(changed, RTE_DIM(changed));
	struct dpvpn_policy p = { .src.len = 9, .dst.len = 13, .priority = 10 };

	p.src.family = p.dst.family = DPVPN_AF_INET;
	inet_pton(AF_INET, "10.0.0.0", &p.src.v4);
	inet_pton(AF_INET, "10.8.0.0", &p.dst.v4);
	assert_int_equal(spd_del(&p, err, sizeof(err)), 0);
	check_spd_cases(cases, RTE_DIM(cases));
	spd_force_acl(false);
	assert_int_equal(spd_commit(err, sizeof(err)), 0);
}

/* The outer DF bit for inner packet df (0 or RTE_IPV4_HDR_DF_FLAG) sent to dst. */
static uint16_t
outer_df(const char *dst, uint16_t df)
{
	struct rte_mbuf *m;
	struct rte_ipv4_hdr *ip;
	uint32_t a;
	uint16_t got;

	inet_pton(AF_INET, dst, &a);
	m = inner_packet(80, HOST_A, a);
	ip = rte_pktmbuf_mtod(m, struct rte_ipv4_hdr *);
	ip->fragment_offset = rte_cpu_to_be_16(df);
	ip->hdr_checksum = 0;
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	assert_int_equal(esp_encap_burst(&wk, st, &in_port, &m, 1, out()), 1);
	ip = rte_pktmbuf_mtod(m, struct rte_ipv4_hdr *);
	assert_int_equal(rte_raw_cksum(ip, 20), 0xffff);
	got = rte_be_to_cpu_16(ip->fragment_offset);
	rte_pktmbuf_free(m);
	return got;
}

static void
test_df_modes(void **state)
{
	(void)state;
	out_sa_df(0x5001, DPVPN_DF_SET);
	out_sa_df(0x5002, DPVPN_DF_CLEAR);
	add_policy("198.18.1.0", 24, "198.18.5.0", 24, 0x5001, 100);
	add_policy("198.18.1.0", 24, "198.18.6.0", 24, 0x5002, 100);
	/* copy (the lab SA) */
	assert_int_equal(outer_df("198.18.2.2", RTE_IPV4_HDR_DF_FLAG), RTE_IPV4_HDR_DF_FLAG);
	assert_int_equal(outer_df("198.18.2.2", 0), 0);
	/* set */
	assert_int_equal(outer_df("198.18.5.5", 0), RTE_IPV4_HDR_DF_FLAG);
	/* clear */
	assert_int_equal(outer_df("198.18.6.6", RTE_IPV4_HDR_DF_FLAG), 0);
}

/*
 * The draft's packets through the whole inbound path: all carry next header 1
 * (the draft's choice), so a packet that got past the ICV, replay and padding
 * checks ends as bad-next-header -- never as bad-icv.
 */
static void
test_known_answer_packets(void **state)
{
	(void)state;
	for (size_t i = 0; i < RTE_DIM(gcm_esp_vectors); i++) {
		const struct gcm_esp_vector *v = &gcm_esp_vectors[i];
		struct dpvpn_sa_cfg c;
		struct rte_mbuf *m;
		struct rte_ipv4_hdr *ip;
		uint8_t *p;
		char err[256];

		if (rte_be_to_cpu_32(*(const uint32_t *)v->spi) < 256)
			continue;	/* reserved SPIs are refused at install */
		sa_cfg(&c, DPVPN_DIR_IN);
		memcpy(&c.spi, v->spi, 4);
		c.alg = v->key_len == 16 ? DPVPN_ALG_AES128_GCM : DPVPN_ALG_AES256_GCM;
		c.key_len = (uint8_t)v->key_len;
		memcpy(c.key, v->key, v->key_len);
		memcpy(c.salt, v->salt, 4);
		assert_int_equal(sa_add(&c, wk.esp.mb, err, sizeof(err)), 0);
		m = rte_pktmbuf_alloc(dp.pool);
		ip = (struct rte_ipv4_hdr *)rte_pktmbuf_append(m, 20 + 16 + v->plain_len + 16);
		assert_non_null(ip);
		*ip = (struct rte_ipv4_hdr){ 0 };
		ip->version_ihl = RTE_IPV4_VHL_DEF;
		ip->total_length = rte_cpu_to_be_16(rte_pktmbuf_data_len(m));
		ip->next_proto_id = IPPROTO_ESP;
		ip->src_addr = c.remote.v4;
		ip->dst_addr = peer_port.addr;
		ip->hdr_checksum = rte_ipv4_cksum(ip);
		p = (uint8_t *)(ip + 1);
		memcpy(p, v->spi, 4);
		memcpy(p + 4, v->seq, 4);
		memcpy(p + 8, v->iv, 8);
		memcpy(p + 16, v->cipher, v->plain_len);
		memcpy(p + 16 + v->plain_len, v->icv, 16);
		expect_drop(m, DPVPN_DROP_BAD_NEXT_HDR);
		assert_int_equal(sa_del(c.spi, DPVPN_DIR_IN, err, sizeof(err)), 0);
	}
}

/* ip4_sum20 and ip4_phdr_sum (ip.h) fold as rte_raw_cksum and rte_ipv4_phdr_cksum do. */
static void
test_ip4_sum20(void **state)
{
	uint8_t h[20];
	uint32_t x = 0x9e3779b9;

	(void)state;
	for (int i = 0; i < 200000; i++) {
		for (int b = 0; b < 20; b++) {
			x = x * 1103515245 + 12345;
			h[b] = (uint8_t)(i < 3 ? (i == 0 ? 0 : 0xff) : x >> 24);
		}
		assert_int_equal(ip4_sum20(h), rte_raw_cksum(h, 20));
		h[0] = 0x45;
		h[2] = (uint8_t)(x >> 8) | 0x01;	/* total length over the header */
		assert_int_equal(ip4_phdr_sum((const struct rte_ipv4_hdr *)h),
				 rte_ipv4_phdr_cksum((const struct rte_ipv4_hdr *)h, 0));
	}
}

/* extra-addresses: the port's address, then one range compare (dp_port_owns4). */
static void
test_extra_addresses(void **state)
{
	static const struct {
		uint32_t addr, first, count, dst;	/* host order */
		bool owned;
	} cases[] = {
		{ IP4(198, 19, 9, 9), 0, 0, IP4(198, 19, 9, 9), true },	/* its address */
		{ IP4(198, 19, 9, 9), 0, 0, IP4(198, 19, 0, 2), false },	/* none: not 0/0 */
		{ IP4(198, 19, 9, 9), IP4(198, 19, 0, 0), 256, IP4(198, 19, 0, 2), true },
		{ IP4(198, 19, 9, 9), IP4(198, 19, 0, 2), 1, IP4(198, 19, 0, 2), true },
		{ IP4(198, 19, 9, 9), IP4(198, 19, 0, 3), 1, IP4(198, 19, 0, 2), false },
		{ IP4(198, 19, 9, 9), IP4(198, 19, 0, 0), 2, IP4(198, 19, 0, 2), false },
		{ IP4(198, 19, 9, 9), IP4(128, 0, 0, 0), 1u << 31, IP4(255, 255, 255, 255), true },
		{ 0, IP4(198, 19, 0, 0), 256, IP4(198, 19, 0, 2), false },	/* no address */
	};
	struct dp_port port;
	struct rte_mbuf *m;

	(void)state;
	for (size_t i = 0; i < RTE_DIM(cases); i++) {
		port = (struct dp_port){ .addr = rte_cpu_to_be_32(cases[i].addr),
					 .extra_first = cases[i].first,
					 .extra_count = cases[i].count };
		assert_int_equal(dp_port_owns4(&port, rte_cpu_to_be_32(cases[i].dst)),
				 cases[i].owned);
	}
	/* ESP to 198.19.0.2 on a port that has it only among its extra-addresses */
	port = (struct dp_port){ .addr = RTE_BE32(IP4(198, 19, 9, 9)),
				 .extra_first = IP4(198, 19, 0, 0), .extra_count = 256 };
	m = one_esp();
	assert_int_equal(esp_decap_burst(&wk, st, &port, &m, 1, self()), 1);
	rte_pktmbuf_free(m);
	port.extra_first = IP4(198, 19, 1, 0);	/* and not: counted, not-local */
	m = one_esp();
	uint64_t before = drops(DPVPN_DROP_NOT_LOCAL);

	assert_int_equal(esp_decap_burst(&wk, st, &port, &m, 1, self()), 0);
	assert_int_equal(drops(DPVPN_DROP_NOT_LOCAL), before + 1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ip4_sum20),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_replay_in_one_burst),
		cmocka_unit_test(test_replay_late),
		cmocka_unit_test(test_policy_mismatch),
		cmocka_unit_test(test_selector_lists),
		cmocka_unit_test(test_known_answers),
		cmocka_unit_test(test_known_answer_packets),
		cmocka_unit_test(test_spd_order),
		cmocka_unit_test(test_ecn_table),
		cmocka_unit_test(test_ecn_and_ttl_on_the_path),
		cmocka_unit_test(test_df_modes),
		cmocka_unit_test(test_extra_addresses),
	};

	return cmocka_run_group_tests_name("esp", tests, setup, NULL);
}
