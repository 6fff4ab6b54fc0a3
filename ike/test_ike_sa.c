/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_ike_sa.c - the IKE SA state machine (ike_sa.c) end to end in one
 * process: two contexts, an initiator and a responder, each with its own
 * outbox; the test moves datagrams between them and may drop, duplicate,
 * replay, truncate or flip bits in them on the way, and sets the clock.
 *
 *   initiator 192.0.2.1:500  ---- outbox i ---->  responder 198.51.100.1:500
 *   ts 10.1.0.0/16           <--- outbox r -----  ts 10.2.0.0/16
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "ike_crypto.h"
#include "ike_msg.h"
#include "ike_pki.h"
#include "ike_sa.h"
#include "ike_int.h"	/* test_frag_forged: an SA's own fragments, made to order */

#ifndef SOURCE_ROOT
#error "SOURCE_ROOT must name the source tree (set by meson)"
#endif

#define QMAX		32
#define LOGMAX		64		/* addresses of the first datagrams sent, kept */
#define EVMAX		512		/* child_up and child_down calls, in order */
#define PKT_MAX		4096
#define N_ELEMS(a)	(sizeof(a) / sizeof((a)[0]))

struct pkt {
	struct ike_addr src, dst;
	size_t len;
	uint8_t data[PKT_MAX];
};

/* One instance and what its callbacks saw. */
struct side {
	struct ike_ctx *ctx;
	struct pkt q[QMAX];		/* its outbox */
	unsigned n;
	unsigned sent;
	struct ike_addr from[LOGMAX], to[LOGMAX];	/* of datagram k sent */
	unsigned ups, downs, ike_downs;
	struct ev { char kind; uint32_t spi_in; } ev[EVMAX];	/* 'u'p or 'd'own */
	unsigned n_ev;
	struct ike_child child;		/* the last child_up */
	char conn_up[32], conn_down[32];	/* the connections of the last up, down */
	struct ike_child hist[4];	/* the last four, at [n_up % 4] */
	unsigned n_up;
	uint32_t down_in, down_out;
	char why[128];
	uint64_t last_iv;		/* the last SK payload's IV sent (GCM: a counter) */
	unsigned n_kept;		/* child_kept calls (ike_sa_import) */
	struct ike_child kept;		/* the last one */
};

static struct side I, R;		/* initiator, responder */

/* ---- callbacks ---------------------------------------------------------- */

static void
cb_send(void *opaque, const struct ike_addr *local, const struct ike_addr *remote,
	const uint8_t *msg, size_t len)
{
	struct side *s = opaque;
	struct pkt *p;

	assert_true(s->n < QMAX);
	assert_true(len <= PKT_MAX);
	if (len > 40 && msg[16] == 46) {	/* IKE header, SK payload header, IV */
		s->last_iv = 0;
		for (unsigned i = 0; i < 8; i++)
			s->last_iv = s->last_iv << 8 | msg[32 + i];
	}
	p = &s->q[s->n++];
	p->src = *local;
	p->dst = *remote;
	p->len = len;
	memcpy(p->data, msg, len);
	if (s->sent < LOGMAX) {
		s->from[s->sent] = *local;
		s->to[s->sent] = *remote;
	}
	s->sent++;
}

static void
cb_child_up(void *opaque, const char *conn, const struct ike_child *c)
{
	struct side *s = opaque;

	assert_true(strcmp(conn, "t") == 0 || conn[0] == 'k');	/* "t" or a child "k*" */
	snprintf(s->conn_up, sizeof(s->conn_up), "%s", conn);
	s->ups++;
	s->child = *c;
	s->hist[s->n_up++ % N_ELEMS(s->hist)] = *c;
	if (s->n_ev < EVMAX)
		s->ev[s->n_ev++] = (struct ev){ 'u', c->spi_in };
}

static void
cb_child_down(void *opaque, const char *conn, uint32_t spi_in, uint32_t spi_out,
	      const struct ike_prefix *ts_remote)
{
	(void)ts_remote;
	struct side *s = opaque;

	assert_true(strcmp(conn, "t") == 0 || conn[0] == 'k');
	snprintf(s->conn_down, sizeof(s->conn_down), "%s", conn);
	s->downs++;
	if (s->n_ev < EVMAX)
		s->ev[s->n_ev++] = (struct ev){ 'd', spi_in };
	s->down_in = spi_in;
	s->down_out = spi_out;
}

static void
cb_ike_down(void *opaque, const char *conn, const char *why)
{
	struct side *s = opaque;

	assert_string_equal(conn, "t");
	s->ike_downs++;
	snprintf(s->why, sizeof(s->why), "%s", why);
}

/* IKE_SA_TEST_LOG=1 in the environment shows why messages were dropped. */
static void
cb_log(void *opaque, const char *conn, const char *msg)
{
	if (getenv("IKE_SA_TEST_LOG") != NULL)
		fprintf(stderr, "[%s] %s: %s\n", opaque == &R ? "R" : "I", conn, msg);
}

static void
cb_child_kept(void *opaque, const char *conn, const struct ike_child *c)
{
	struct side *s = opaque;

	assert_true(strcmp(conn, "t") == 0 || conn[0] == 'k');
	s->n_kept++;
	s->kept = *c;
}

static const struct ike_ops ops = {
	.send = cb_send, .child_up = cb_child_up, .child_down = cb_child_down,
	.ike_down = cb_ike_down, .log = cb_log, .child_kept = cb_child_kept,
};

/* ---- queues ------------------------------------------------------------- */

static struct pkt
pop(struct side *s)
{
	struct pkt p;

	assert_true(s->n > 0);
	p = s->q[0];
	memmove(&s->q[0], &s->q[1], (s->n - 1) * sizeof(s->q[0]));
	s->n--;
	return p;
}

/* What to, from; the receiver sees the datagram's dst as its local address. */
static int
deliver(struct side *to, const struct pkt *p, uint64_t now)
{
	return ike_input(to->ctx, &p->dst, &p->src, p->data, p->len, now);
}

/* Move everything both ways until both outboxes are empty. */
static void
pump(uint64_t now)
{
	for (unsigned guard = 0; (I.n || R.n) && guard < 100; guard++) {
		if (I.n) {
			struct pkt p = pop(&I);

			deliver(&R, &p, now);
		}
		if (R.n) {
			struct pkt p = pop(&R);

			deliver(&I, &p, now);
		}
	}
	assert_int_equal(I.n + R.n, 0);
}

/* ---- configurations ----------------------------------------------------- */

static struct ike_addr
addr4(const char *ip)
{
	struct ike_addr a = { .family = AF_INET, .port = 500 };

	assert_int_equal(inet_pton(AF_INET, ip, a.ip), 1);
	return a;
}

static bool
ip_is(const struct ike_addr *a, const char *ip)
{
	struct ike_addr b = addr4(ip);

	return a->family == AF_INET && memcmp(a->ip, b.ip, 4) == 0;
}

static struct ike_prefix
pfx4(const char *ip, uint8_t plen)
{
	struct ike_prefix p = { .family = AF_INET, .plen = plen };

	assert_int_equal(inet_pton(AF_INET, ip, p.addr), 1);
	return p;
}

/* Configured proposals of one algorithm of each kind. */
#define PROP_GCM(bits, prf_, g) { .encr = { { IKE_ENCR_AES_GCM_16, bits } }, .n_encr = 1, \
				  .prf = { prf_ }, .n_prf = 1, .dh = { g }, .n_dh = 1 }
#define PROP_CBC(bits, integ_, prf_, g) { .encr = { { IKE_ENCR_AES_CBC, bits } }, .n_encr = 1, \
					  .integ = { integ_ }, .n_integ = 1, .prf = { prf_ }, \
					  .n_prf = 1, .dh = { g }, .n_dh = 1 }
#define ESP_AEAD(id, bits)	{ .encr = { { id, bits } }, .n_encr = 1 }
#define ESP_CBC(bits, integ_)	{ .encr = { { IKE_ENCR_AES_CBC, bits } }, .n_encr = 1, \
				  .integ = { integ_ }, .n_integ = 1 }

static const struct ike_prop_cfg IKE_PROPS[] = {
	PROP_GCM(128, IKE_PRF_HMAC_SHA2_256, IKE_DH_ECP256),
	PROP_GCM(256, IKE_PRF_HMAC_SHA2_256, IKE_DH_ECP256),
	PROP_GCM(128, IKE_PRF_HMAC_SHA2_256, IKE_DH_CURVE25519),
	PROP_GCM(256, IKE_PRF_HMAC_SHA2_256, IKE_DH_CURVE25519),
	/* issue 16: CBC with HMAC-SHA2, the longer PRFs, MODP-2048 and ECP-384 */
	PROP_CBC(128, IKE_INTEG_HMAC_SHA2_256_128, IKE_PRF_HMAC_SHA2_256, IKE_DH_MODP2048),
	PROP_CBC(256, IKE_INTEG_HMAC_SHA2_384_192, IKE_PRF_HMAC_SHA2_384, IKE_DH_ECP384),
	PROP_CBC(256, IKE_INTEG_HMAC_SHA2_512_256, IKE_PRF_HMAC_SHA2_512, IKE_DH_ECP256),
	PROP_GCM(256, IKE_PRF_HMAC_SHA2_512, IKE_DH_CURVE25519),
};

static const struct ike_prop_cfg ESP_PROPS[] = {
	ESP_AEAD(IKE_ENCR_AES_GCM_16, 128), ESP_AEAD(IKE_ENCR_AES_GCM_16, 256),
	ESP_CBC(128, IKE_INTEG_HMAC_SHA2_256_128), ESP_CBC(256, IKE_INTEG_HMAC_SHA2_256_128),
	ESP_CBC(128, IKE_INTEG_HMAC_SHA1_96), ESP_AEAD(IKE_ENCR_CHACHA20_POLY1305, 256),
};

/* Key bytes a CHILD_SA of ESP proposal e gets. */
static size_t
esp_enc_len(const struct ike_prop_cfg *e)
{
	return e->encr[0].bits / 8u + (e->encr[0].id == IKE_ENCR_AES_CBC ? 0 : 4);
}

static size_t
esp_integ_len(const struct ike_prop_cfg *e)
{
	return e->n_integ == 0 ? 0 : e->integ[0] == IKE_INTEG_HMAC_SHA1_96 ? 20 : 32;
}

/* The initiator's side of connection "t"; mirror() gives the responder's. */
static struct ike_conn_cfg
cfg_i(void)
{
	struct ike_conn_cfg c = { .name = "t", .psk_len = 16, .n_ike = 1, .n_esp = 1,
				  .retrans_ms = 500, .retrans_tries = 3 };

	c.local = addr4("192.0.2.1");
	c.remote = addr4("198.51.100.1");
	memcpy(c.psk, "0123456789abcdef", 16);
	c.ike[0] = IKE_PROPS[0];
	c.esp[0] = ESP_PROPS[0];
	c.ts_local = pfx4("10.1.0.0", 16);
	c.ts_remote = pfx4("10.2.0.0", 16);
	return c;
}

static struct ike_conn_cfg
mirror(const struct ike_conn_cfg *i)
{
	struct ike_conn_cfg r = *i;

	r.local = i->remote;
	r.remote = i->local;
	r.local_id = i->remote_id;
	r.remote_id = i->local_id;
	r.ts_local = i->ts_remote;
	r.ts_remote = i->ts_local;
	return r;
}

static void
start(const struct ike_conn_cfg *ci, const struct ike_conn_cfg *cr)
{
	char err[128];

	memset(&I, 0, sizeof(I));
	memset(&R, 0, sizeof(R));
	I.ctx = ike_new(&ops, &I);
	R.ctx = ike_new(&ops, &R);
	assert_non_null(I.ctx);
	assert_non_null(R.ctx);
	assert_int_equal(ike_conn_add(I.ctx, ci, err, sizeof(err)), 0);
	assert_int_equal(ike_conn_add(R.ctx, cr, err, sizeof(err)), 0);
}

static void
stop(void)
{
	ike_free(I.ctx);
	ike_free(R.ctx);
	I.ctx = R.ctx = NULL;
}

static uint64_t
rej(const struct side *s, enum ike_reject r)
{
	return ike_get_stats(s->ctx)->reject[r];
}

static uint64_t
rej_total(const struct side *s)
{
	uint64_t t = 0;

	for (unsigned r = 0; r < IKE_REJ_COUNT; r++)
		t += rej(s, r);
	return t;
}

/* The (only) SA's status, or state -1 if there is none. */
struct walk {
	unsigned n;
	struct ike_sa_status st;
};

static void
walk_fn(void *arg, const struct ike_sa_status *st)
{
	struct walk *w = arg;

	w->n++;
	w->st = *st;
}

static struct walk
status(const struct side *s)
{
	struct walk w = { 0 };

	ike_sa_walk(s->ctx, walk_fn, &w);
	return w;
}

/* Both ends hold mirrored children: one's out is the other's in. */
static void
assert_mirrored(void)
{
	const struct ike_child *a = &I.child, *b = &R.child;

	assert_int_equal(I.ups, 1);
	assert_int_equal(R.ups, 1);
	assert_int_equal(a->spi_out, b->spi_in);
	assert_int_equal(a->spi_in, b->spi_out);
	assert_true(a->spi_in != 0 && a->spi_out != 0);
	assert_int_equal(a->enc_key_len, b->enc_key_len);
	assert_int_equal(a->integ_key_len, b->integ_key_len);
	assert_memory_equal(a->enc_out, b->enc_in, a->enc_key_len);
	assert_memory_equal(a->enc_in, b->enc_out, a->enc_key_len);
	assert_memory_not_equal(a->enc_in, a->enc_out, a->enc_key_len);
	if (a->integ_key_len) {
		assert_memory_equal(a->integ_out, b->integ_in, a->integ_key_len);
		assert_memory_equal(a->integ_in, b->integ_out, a->integ_key_len);
	}
	assert_memory_equal(&a->ts_local, &b->ts_remote, sizeof(a->ts_local));
	assert_memory_equal(&a->ts_remote, &b->ts_local, sizeof(a->ts_remote));
}

/* Initiate and run to the end with nothing in the way. */
static void
bring_up(uint64_t now)
{
	assert_int_equal(ike_initiate(I.ctx, "t", now), 0);
	pump(now);
}

static void
assert_established(void)
{
	struct walk wi = status(&I), wr = status(&R);

	assert_int_equal(wi.n, 1);
	assert_int_equal(wr.n, 1);
	assert_int_equal(wi.st.state, IKE_ST_ESTABLISHED);
	assert_int_equal(wr.st.state, IKE_ST_ESTABLISHED);
	assert_true(wi.st.initiator && !wr.st.initiator);
	assert_memory_equal(wi.st.spi_i, wr.st.spi_i, 8);
	assert_memory_equal(wi.st.spi_r, wr.st.spi_r, 8);
	assert_true(wi.st.child_up && wr.st.child_up);
	assert_int_equal(wi.st.child_spi_in, wr.st.child_spi_out);
	assert_false(wi.st.nat_local || wi.st.nat_remote || wr.st.nat_local ||
		     wr.st.nat_remote);
}

/* ---- tests -------------------------------------------------------------- */

/* Every IKE proposal with every ESP proposal. */
static void
test_up_all_proposals(void **state)
{
	(void)state;
	for (unsigned i = 0; i < N_ELEMS(IKE_PROPS); i++) {
		for (unsigned e = 0; e < N_ELEMS(ESP_PROPS); e++) {
			struct ike_conn_cfg ci = cfg_i(), cr;

			ci.ike[0] = IKE_PROPS[i];
			ci.esp[0] = ESP_PROPS[e];
			cr = mirror(&ci);
			start(&ci, &cr);
			bring_up(0);
			assert_established();
			assert_mirrored();
			assert_int_equal(status(&I).st.dh, IKE_PROPS[i].dh[0]);
			assert_int_equal(status(&R).st.encr, IKE_PROPS[i].encr[0].id);
			assert_int_equal(status(&R).st.encr_bits, IKE_PROPS[i].encr[0].bits);
			assert_int_equal(status(&R).st.integ, IKE_PROPS[i].integ[0]);
			assert_int_equal(status(&I).st.prf, IKE_PROPS[i].prf[0]);
			assert_int_equal(I.child.encr, ESP_PROPS[e].encr[0].id);
			assert_int_equal(I.child.integ, ESP_PROPS[e].integ[0]);
			assert_int_equal(I.child.enc_key_len, esp_enc_len(&ESP_PROPS[e]));
			assert_int_equal(I.child.integ_key_len, esp_integ_len(&ESP_PROPS[e]));
			assert_int_equal(rej_total(&I) + rej_total(&R), 0);
			/* Four datagrams: no retransmission, no error. */
			assert_int_equal(I.sent + R.sent, 4);
			stop();
			assert_int_equal(I.ike_downs, 1);
			assert_int_equal(I.downs, 1);
		}
	}
}

/* The responder takes the first of the initiator's proposals it has (2.7). */
static void
test_proposal_order(void **state)
{
	struct ike_conn_cfg ci = cfg_i(), cr;

	(void)state;
	ci.n_ike = 2;
	ci.ike[0] = IKE_PROPS[1];
	ci.ike[1] = IKE_PROPS[0];
	ci.n_esp = 3;
	ci.esp[0] = ESP_PROPS[3];
	ci.esp[1] = ESP_PROPS[1];
	ci.esp[2] = ESP_PROPS[0];
	cr = mirror(&ci);
	cr.ike[0] = IKE_PROPS[0];
	cr.ike[1] = IKE_PROPS[1];
	cr.n_esp = 2;
	cr.esp[0] = ESP_PROPS[0];
	cr.esp[1] = ESP_PROPS[1];
	start(&ci, &cr);
	bring_up(0);
	assert_established();
	assert_int_equal(status(&R).st.encr_bits, 256);
	assert_int_equal(R.child.encr_bits, 256);
	assert_int_equal(R.child.encr, IKE_ENCR_AES_GCM_16);
	assert_mirrored();
	stop();
}

static void
test_wrong_psk(void **state)
{
	struct ike_conn_cfg ci = cfg_i(), cr = mirror(&ci);

	(void)state;
	cr.psk[0] ^= 1;
	start(&ci, &cr);
	bring_up(0);
	assert_int_equal(I.ups + R.ups, 0);
	assert_int_equal(rej(&R, IKE_REJ_AUTH_FAIL), 1);
	assert_int_equal(rej(&I, IKE_REJ_PEER_ERROR), 1);
	assert_int_equal(I.ike_downs, 1);
	assert_int_equal(R.ike_downs, 1);
	assert_non_null(strstr(I.why, "AUTHENTICATION_FAILED"));
	assert_non_null(strstr(R.why, "authentication"));
	assert_int_equal(status(&I).n + status(&R).n, 0);
	stop();
}

static void
test_wrong_identity(void **state)
{
	struct ike_conn_cfg ci = cfg_i(), cr = mirror(&ci);

	(void)state;
	cr.remote_id.type = IKE_ID_FQDN;
	cr.remote_id.len = 5;
	memcpy(cr.remote_id.data, "a.b.c", 5);
	start(&ci, &cr);
	bring_up(0);
	assert_int_equal(I.ups + R.ups, 0);
	assert_int_equal(rej(&R, IKE_REJ_AUTH_FAIL), 1);
	assert_non_null(strstr(I.why, "AUTHENTICATION_FAILED"));
	stop();
}

/* ---- certificates (auth = pubkey) ---------------------------------------- */

/*
 * Fixtures of control/testdata/make_pki.sh: gw.pem (CN=gw.example.org,
 * O=Example, SAN DNS:gw.example.org; P-256) issued by ca.pem; both ends use
 * the one certificate (each checks the other's against the CA).
 */
struct pki_files {
	struct ike_pki_cred *cred;
	struct ike_pki_trust *trust, *wrong;	/* the CA; gw.pem as an "anchor" */
};

static size_t
slurp(const char *name, uint8_t *buf, size_t cap)
{
	char path[512];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "%s/control/testdata/pki/%s", SOURCE_ROOT, name);
	f = fopen(path, "rb");
	assert_non_null(f);
	n = fread(buf, 1, cap, f);
	fclose(f);
	assert_true(n > 0 && n < cap);
	return n;
}

static struct pki_files
pki_load(void)
{
	uint8_t cert[8192], key[8192], ca[8192];
	size_t cl = slurp("gw.pem", cert, sizeof(cert)), kl = slurp("gw.key", key, sizeof(key));
	size_t al = slurp("ca.pem", ca, sizeof(ca));
	struct pki_files f = { NULL, ike_pki_trust_new(), ike_pki_trust_new() };
	char err[256];

	assert_int_equal(ike_pki_cred_load(cert, cl, key, kl, &f.cred, err, sizeof(err)), 0);
	explicit_bzero(key, sizeof(key));
	assert_int_equal(ike_pki_trust_add_ca(f.trust, ca, al, err, sizeof(err)), 0);
	assert_int_equal(ike_pki_trust_add_ca(f.wrong, cert, cl, err, sizeof(err)), 0);
	return f;
}

static void
pki_free(struct pki_files *f)
{
	ike_pki_cred_free(f->cred);
	ike_pki_trust_free(f->trust);
	ike_pki_trust_free(f->wrong);
}

/* cfg_i() with certificates: ID the subject DN, remote-id a DN pattern. */
static struct ike_conn_cfg
cfg_pki(const struct pki_files *f, const char *remote_pattern)
{
	struct ike_conn_cfg c = cfg_i();
	char err[128];
	size_t n;

	c.psk_len = 0;
	memset(c.psk, 0, sizeof(c.psk));
	c.cred = f->cred;
	c.trust = f->trust;
	c.local_id.type = IKE_ID_DER_ASN1_DN;
	assert_int_equal(ike_pki_cred_subject(f->cred, c.local_id.data, IKE_IDENT_MAX, &n), 0);
	c.local_id.len = (uint8_t)n;
	c.remote_id.type = IKE_ID_DER_ASN1_DN;
	assert_int_equal(ike_pki_dn_parse(remote_pattern, c.remote_id.data, IKE_IDENT_MAX, &n,
					  err, sizeof(err)), 0);
	c.remote_id.len = (uint8_t)n;
	return c;
}

/* mirror() for one certificate at both ends: the same local ID, the same pattern. */
static struct ike_conn_cfg
mirror_pki(const struct ike_conn_cfg *i)
{
	struct ike_conn_cfg r = mirror(i);

	r.local_id = i->local_id;
	r.remote_id = i->remote_id;
	return r;
}

static uint64_t
pki_fails(const struct side *s, enum ike_pki_fail f)
{
	return ike_get_stats(s->ctx)->pki_fail[f];
}

static void
test_pubkey_up(void **state)
{
	struct pki_files f = pki_load();
	struct ike_conn_cfg ci = cfg_pki(&f, "CN=*, O=Example"), cr = mirror_pki(&ci);

	(void)state;
	start(&ci, &cr);
	bring_up(0);
	assert_established();
	assert_mirrored();
	assert_int_equal(rej_total(&I) + rej_total(&R), 0);
	/* the CHILD_SA rekeys as with a PSK (no AUTH there) */
	stop();
	/* An FQDN identity (the certificate's subjectAltName) against a pattern. */
	ci.local_id.type = IKE_ID_FQDN;
	ci.local_id.len = 14;
	memcpy(ci.local_id.data, "gw.example.org", 14);
	ci.remote_id.type = IKE_ID_FQDN;
	ci.remote_id.len = 13;
	memcpy(ci.remote_id.data, "*.example.org", 13);
	cr = mirror_pki(&ci);
	start(&ci, &cr);
	bring_up(0);
	assert_established();
	stop();
	/* No remote-id at the responder: any identity the certificate proves. */
	cr.remote_id.type = 0;
	cr.remote_id.len = 0;
	start(&ci, &cr);
	bring_up(0);
	assert_established();
	stop();
	pki_free(&f);
}

/*
 * Remote access (ike_cp.c): the responder takes any peer address
 * (remote_any) and leases each client an address from its pool in a
 * CFG_REPLY; the road warrior (want_vip) proposes TSi 0.0.0.0/0 and the
 * CHILD_SA is narrowed to its address.  pool: 10.10.0.7/32, one address.
 */
static struct ike_conn_cfg
cfg_ra(const struct ike_conn_cfg *ci)
{
	struct ike_conn_cfg r = mirror_pki(ci);

	r.remote_any = true;
	memset(&r.remote, 0, sizeof(r.remote));
	r.pool[0] = pfx4("10.10.0.7", 32);
	r.n_pool = 1;
	r.dns[0] = addr4("10.2.0.53");
	r.n_dns = 1;
	r.ts_remote = r.pool[0];
	return r;
}

/* A road warrior (I, asking for an address) and a remote = %any responder (R). */
static void
start_ra(const struct pki_files *f, struct ike_conn_cfg *ci, struct ike_conn_cfg *cr)
{
	*ci = cfg_pki(f, "CN=*, O=Example");
	ci->want_vip = true;
	ci->ts_local = pfx4("0.0.0.0", 0);
	*cr = cfg_ra(ci);
	ci->remote = addr4("198.51.100.1");
	start(ci, cr);
}

static void
test_remote_access(void **state)
{
	struct pki_files f = pki_load();
	struct ike_conn_cfg ci, cr;
	struct side first;
	struct walk w;
	char err[128];

	(void)state;
	start_ra(&f, &ci, &cr);
	assert_int_equal(ike_initiate(R.ctx, "t", 0), -EINVAL);	/* it never initiates */
	bring_up(0);
	assert_established();
	assert_int_equal(R.ups, 1);
	assert_int_equal(R.child.ts_remote.plen, 32);		/* the lease, not the pool */
	assert_memory_equal(R.child.ts_remote.addr, "\x0a\x0a\x00\x07", 4);
	assert_int_equal(I.child.ts_local.plen, 32);		/* narrowed for the client too */
	assert_int_equal(ike_get_stats(R.ctx)->pool_exhausted, 0);
	w = status(&R);
	assert_true(w.st.has_vip);
	assert_memory_equal(&w.st.vip, &R.child.ts_remote, sizeof(struct ike_prefix));
	assert_int_equal(w.st.peer_id.type, ci.local_id.type);	/* IDi, for show ike */
	assert_int_equal(w.st.peer_id.len, ci.local_id.len);
	assert_memory_equal(w.st.peer_id.data, ci.local_id.data, ci.local_id.len);
	assert_false(status(&I).st.has_vip);
	/* An IKE SA rekey hands the lease to the new SA: the old one's end keeps it
	 * (the exhaustion below shows it still online). */
	assert_int_equal(ike_sa_rekey(I.ctx, "t", 100), 0);
	pump(100);
	assert_int_equal(status(&R).n, 1);
	assert_int_equal(status(&R).st.ike_rekeys, 1);
	assert_true(status(&R).st.has_vip);
	assert_int_equal(status(&R).st.peer_id.len, ci.local_id.len);	/* moved too */
	/*
	 * A second client with the same identity from another address, which
	 * says no INITIAL_CONTACT (initial-contact = no: it may be one of
	 * several): the one address is online, so INTERNAL_ADDRESS_FAILURE,
	 * counted, no CHILD_SA.  (The first client's context is kept aside; its
	 * callbacks are quiet.)
	 */
	first = I;
	memset(&I, 0, sizeof(I));
	I.ctx = ike_new(&ops, &I);
	ci.local = addr4("192.0.2.2");
	ci.no_initial_contact = true;
	assert_int_equal(ike_conn_add(I.ctx, &ci, err, sizeof(err)), 0);
	assert_int_equal(ike_initiate(I.ctx, "t", 0), 0);
	pump(0);
	assert_int_equal(ike_get_stats(R.ctx)->pool_exhausted, 1);
	assert_int_equal(R.ups, 1);
	assert_int_equal(I.ups, 0);
	/*
	 * The first client's IKE SA ends (its Delete): the lease is free again,
	 * so the same identity connecting anew gets it (were it still online,
	 * that would be a second address: exhausted).
	 */
	ike_free(I.ctx);
	I = first;
	assert_int_equal(ike_terminate(I.ctx, "t", 0), 0);
	pump(0);
	assert_int_equal(status(&R).n, 0);
	bring_up(0);
	assert_int_equal(R.ups, 2);
	assert_memory_equal(R.child.ts_remote.addr, "\x0a\x0a\x00\x07", 4);
	assert_int_equal(ike_get_stats(R.ctx)->pool_exhausted, 1);
	assert_int_equal(ike_get_stats(R.ctx)->initial_contact, 0);
	stop();
	/* No CP request: FAILED_CP_REQUIRED, counted. */
	ci.want_vip = false;
	ci.no_initial_contact = false;
	ci.local = addr4("192.0.2.1");
	start(&ci, &cr);
	bring_up(0);
	assert_int_equal(ike_get_stats(R.ctx)->cp_missing, 1);
	assert_int_equal(R.ups, 0);
	stop();
	pki_free(&f);
}

/*
 * A road warrior that restarts (a new context, the same certificate and
 * identity, another address): its INITIAL_CONTACT ends its IKE SA of before
 * on the remote = %any responder, found among the clients' by identity, and
 * it gets its address again (the lease went with the old SA), not
 * INTERNAL_ADDRESS_FAILURE.
 */
static void
test_initial_contact_ra(void **state)
{
	struct pki_files f = pki_load();
	struct ike_conn_cfg ci, cr;
	char err[128];

	(void)state;
	start_ra(&f, &ci, &cr);
	bring_up(0);
	assert_int_equal(R.ups, 1);
	ike_free(I.ctx);
	memset(&I, 0, sizeof(I));
	I.ctx = ike_new(&ops, &I);
	ci.local = addr4("192.0.2.2");
	assert_int_equal(ike_conn_add(I.ctx, &ci, err, sizeof(err)), 0);
	bring_up(1000);
	assert_int_equal(R.ike_downs, 1);
	assert_non_null(strstr(R.why, "INITIAL_CONTACT"));
	assert_int_equal(R.downs, 1);
	assert_int_equal(R.ups, 2);
	assert_int_equal(I.ups, 1);
	assert_memory_equal(R.child.ts_remote.addr, "\x0a\x0a\x00\x07", 4);
	assert_int_equal(ike_get_stats(R.ctx)->pool_exhausted, 0);
	assert_int_equal(ike_get_stats(R.ctx)->initial_contact, 1);
	assert_int_equal(status(&R).n, 1);
	stop();
	pki_free(&f);
}

/* A refusal by the responder: AUTHENTICATION_FAILED, counted, the SA gone. */
static void
expect_pki_refused(const struct ike_conn_cfg *ci, const struct ike_conn_cfg *cr,
		   enum ike_pki_fail why)
{
	start(ci, cr);
	bring_up(0);
	assert_int_equal(I.ups + R.ups, 0);
	assert_int_equal(rej(&R, IKE_REJ_AUTH_FAIL), 1);
	assert_int_equal(pki_fails(&R, why), 1);
	assert_non_null(strstr(I.why, "AUTHENTICATION_FAILED"));
	assert_int_equal(status(&I).n + status(&R).n, 0);
	stop();
}

static void
test_pubkey_refused(void **state)
{
	struct pki_files f = pki_load();
	struct ike_conn_cfg ci = cfg_pki(&f, "CN=*, O=Example"), cr = mirror_pki(&ci);
	struct ike_conn_cfg psk = cfg_i();
	char err[128];
	size_t n;

	(void)state;
	/* Trust anchors that the peer's chain does not lead to. */
	cr.trust = f.wrong;
	expect_pki_refused(&ci, &cr, IKE_PKI_UNTRUSTED);
	/* A good certificate, but not the identity remote-id asks for. */
	cr = mirror_pki(&ci);
	assert_int_equal(ike_pki_dn_parse("CN=*, O=Other", cr.remote_id.data, IKE_IDENT_MAX, &n,
					  err, sizeof(err)), 0);
	cr.remote_id.len = (uint8_t)n;
	expect_pki_refused(&ci, &cr, IKE_PKI_IDENTITY);
	/* An ID its certificate does not hold (the certificate is good). */
	ci.local_id.type = IKE_ID_FQDN;
	ci.local_id.len = 15;
	memcpy(ci.local_id.data, "gw2.example.org", 15);
	cr = mirror_pki(&ci);
	cr.remote_id.type = 0;		/* any identity the certificate proves */
	expect_pki_refused(&ci, &cr, IKE_PKI_IDENTITY);
	/* A PSK initiator to a certificate responder: no CERT. */
	psk.remote_id = cr.local_id;
	ci = cfg_pki(&f, "CN=*, O=Example");
	cr = mirror_pki(&ci);
	psk.local_id = ci.local_id;
	expect_pki_refused(&psk, &cr, IKE_PKI_NO_CERT);
	pki_free(&f);
}

/* The initiator guesses group 31, the responder wants 19. */
static void
test_invalid_ke(void **state)
{
	struct ike_conn_cfg ci = cfg_i(), cr;

	(void)state;
	ci.n_ike = 2;
	ci.ike[0] = IKE_PROPS[2];
	ci.ike[1] = IKE_PROPS[0];
	cr = mirror(&ci);
	cr.n_ike = 1;
	cr.ike[0] = IKE_PROPS[0];
	start(&ci, &cr);
	bring_up(0);
	assert_established();
	assert_mirrored();
	assert_int_equal(rej(&R, IKE_REJ_INVALID_KE), 1);
	assert_int_equal(rej(&I, IKE_REJ_INVALID_KE), 1);
	assert_int_equal(status(&I).st.dh, IKE_DH_ECP256);
	/* Only the established SA on the responder: the refusal kept nothing. */
	assert_int_equal(status(&R).n, 1);
	stop();
}

/*
 * Proposals of several algorithms of a kind (strongSwan's syntax): the
 * responder takes its own preference among what is offered; the KE guess
 * (x25519) is not among its groups, so one INVALID_KE_PAYLOAD round moves
 * the initiator to MODP-2048.
 */
static void
test_multi_alg_proposal(void **state)
{
	struct ike_conn_cfg ci = cfg_i(), cr;

	(void)state;
	ci.ike[0] = (struct ike_prop_cfg){
		.encr = { { IKE_ENCR_AES_CBC, 128 }, { IKE_ENCR_AES_CBC, 256 } }, .n_encr = 2,
		.integ = { IKE_INTEG_HMAC_SHA2_512_256, IKE_INTEG_HMAC_SHA2_256_128 },
		.n_integ = 2,
		.prf = { IKE_PRF_HMAC_SHA2_384, IKE_PRF_HMAC_SHA2_256 }, .n_prf = 2,
		.dh = { IKE_DH_CURVE25519, IKE_DH_MODP2048 }, .n_dh = 2 };
	ci.esp[0] = (struct ike_prop_cfg){
		.encr = { { IKE_ENCR_AES_GCM_16, 128 }, { IKE_ENCR_AES_GCM_16, 256 } },
		.n_encr = 2 };
	cr = mirror(&ci);
	cr.ike[0] = (struct ike_prop_cfg)PROP_CBC(256, IKE_INTEG_HMAC_SHA2_256_128,
						   IKE_PRF_HMAC_SHA2_256, IKE_DH_ECP256);
	cr.ike[0].dh[0] = IKE_DH_MODP2048;
	cr.ike[0].dh[1] = IKE_DH_ECP256;
	cr.ike[0].n_dh = 2;
	cr.esp[0] = (struct ike_prop_cfg)ESP_AEAD(IKE_ENCR_AES_GCM_16, 256);
	start(&ci, &cr);
	bring_up(0);
	assert_established();
	assert_mirrored();
	assert_int_equal(rej(&R, IKE_REJ_INVALID_KE), 1);
	assert_int_equal(status(&I).st.encr, IKE_ENCR_AES_CBC);
	assert_int_equal(status(&I).st.encr_bits, 256);
	assert_int_equal(status(&I).st.integ, IKE_INTEG_HMAC_SHA2_256_128);
	assert_int_equal(status(&I).st.prf, IKE_PRF_HMAC_SHA2_256);
	assert_int_equal(status(&I).st.dh, IKE_DH_MODP2048);
	assert_int_equal(I.child.encr_bits, 256);
	stop();
}

/*
 * strongSwan 5.9's default proposals on both sides (config_prop.c): the
 * classic one wins, with the first of each kind and the initiator's group.
 */
static void
test_default_proposals(void **state)
{
	struct ike_conn_cfg ci = cfg_i(), cr;

	(void)state;
	ci.ike[0] = (struct ike_prop_cfg){
		.encr = { { IKE_ENCR_AES_CBC, 128 }, { IKE_ENCR_AES_CBC, 256 } }, .n_encr = 2,
		.integ = { IKE_INTEG_HMAC_SHA2_256_128, IKE_INTEG_HMAC_SHA2_384_192,
			   IKE_INTEG_HMAC_SHA2_512_256 }, .n_integ = 3,
		.prf = { IKE_PRF_HMAC_SHA2_256, IKE_PRF_HMAC_SHA2_384, IKE_PRF_HMAC_SHA2_512 },
		.n_prf = 3,
		.dh = { IKE_DH_CURVE25519, IKE_DH_ECP256, IKE_DH_ECP384, IKE_DH_MODP2048 },
		.n_dh = 4 };
	ci.ike[1] = ci.ike[0];
	ci.ike[1].encr[0].id = ci.ike[1].encr[1].id = IKE_ENCR_AES_GCM_16;
	ci.ike[1].n_integ = 0;
	ci.n_ike = 2;
	cr = mirror(&ci);
	start(&ci, &cr);
	bring_up(0);
	assert_established();
	assert_int_equal(rej_total(&I) + rej_total(&R), 0);
	assert_int_equal(status(&R).st.encr, IKE_ENCR_AES_CBC);
	assert_int_equal(status(&R).st.encr_bits, 128);
	assert_int_equal(status(&R).st.integ, IKE_INTEG_HMAC_SHA2_256_128);
	assert_int_equal(status(&R).st.prf, IKE_PRF_HMAC_SHA2_256);
	assert_int_equal(status(&R).st.dh, IKE_DH_CURVE25519);
	stop();
}

static void
test_no_proposal(void **state)
{
	struct ike_conn_cfg ci = cfg_i(), cr = mirror(&ci);

	(void)state;
	cr.ike[0] = IKE_PROPS[3];
	start(&ci, &cr);
	bring_up(0);
	assert_int_equal(rej(&R, IKE_REJ_NO_PROPOSAL), 1);
	assert_int_equal(I.ike_downs, 1);
	assert_non_null(strstr(I.why, "NO_PROPOSAL_CHOSEN"));
	assert_int_equal(R.ike_downs, 0);
	assert_int_equal(status(&I).n + status(&R).n, 0);
	stop();
}

/* The IKE SA comes up, the CHILD_SA does not, and the initiator deletes the IKE SA. */
static void
test_esp_no_proposal(void **state)
{
	struct ike_conn_cfg ci = cfg_i(), cr = mirror(&ci);

	(void)state;
	cr.esp[0] = ESP_PROPS[3];
	start(&ci, &cr);
	bring_up(0);
	assert_int_equal(I.ups + R.ups, 0);
	assert_int_equal(rej(&R, IKE_REJ_NO_PROPOSAL), 1);
	assert_non_null(strstr(I.why, "NO_PROPOSAL_CHOSEN"));
	assert_non_null(strstr(R.why, "deleted by the peer"));
	assert_int_equal(status(&I).n + status(&R).n, 0);
	stop();
}

/*
 * ESN (RFC 4303 2.2.1, RFC 7296 3.3.3): offered, chosen by the responder in
 * the initiator's order among what it accepts, refused where one side wants
 * it and the other does not; a rekey negotiates it again.
 */
static void rekey_once(struct side *a, uint64_t now, uint32_t grace);

static void
test_esn(void **state)
{
	static const struct { uint8_t i, r; int up, esn; } cases[] = {
		{ 0, 0, 1, 0 },
		{ IKE_PROP_ESN_YES, IKE_PROP_ESN_YES, 1, 1 },
		{ IKE_PROP_ESN_YES | IKE_PROP_ESN_NO, IKE_PROP_ESN_YES, 1, 1 },
		{ IKE_PROP_ESN_YES | IKE_PROP_ESN_NO, 0, 1, 0 },
		{ IKE_PROP_ESN_NO, IKE_PROP_ESN_YES | IKE_PROP_ESN_NO, 1, 0 },
		{ IKE_PROP_ESN_YES, IKE_PROP_ESN_YES | IKE_PROP_ESN_NO, 1, 1 },
		{ IKE_PROP_ESN_YES, 0, 0, 0 },
		{ 0, IKE_PROP_ESN_YES, 0, 0 },
	};

	(void)state;
	for (unsigned k = 0; k < N_ELEMS(cases); k++) {
		struct ike_conn_cfg ci = cfg_i(), cr;

		ci.esp[0].esn = cases[k].i;
		cr = mirror(&ci);
		cr.esp[0].esn = cases[k].r;
		start(&ci, &cr);
		bring_up(0);
		if (!cases[k].up) {
			assert_int_equal(I.ups + R.ups, 0);
			assert_int_equal(rej(&R, IKE_REJ_NO_PROPOSAL), 1);
			stop();
			continue;
		}
		assert_established();
		assert_int_equal(I.child.esn, cases[k].esn);
		assert_int_equal(R.child.esn, cases[k].esn);
		/* a CHILD_SA rekey (CREATE_CHILD_SA) agrees on it again */
		rekey_once(&I, 40000, 2000);
		assert_int_equal(I.child.esn, cases[k].esn);
		assert_int_equal(R.child.esn, cases[k].esn);
		stop();
	}
}

static void
test_ts_narrowing(void **state)
{
	struct ike_conn_cfg ci = cfg_i(), cr = mirror(&ci);
	struct ike_prefix want = pfx4("10.2.3.0", 24);

	(void)state;
	cr.ts_local = want;		/* narrower than the initiator's 10.2.0.0/16 */
	cr.ts_remote = pfx4("10.0.0.0", 8);	/* wider than its 10.1.0.0/16 */
	start(&ci, &cr);
	bring_up(0);
	assert_established();
	assert_mirrored();
	assert_memory_equal(&I.child.ts_remote, &want, sizeof(want));
	assert_memory_equal(&R.child.ts_local, &want, sizeof(want));
	assert_memory_equal(&I.child.ts_local, &ci.ts_local, sizeof(want));
	stop();
}

static void
test_ts_unacceptable(void **state)
{
	struct ike_conn_cfg ci = cfg_i(), cr = mirror(&ci);

	(void)state;
	cr.ts_local = pfx4("10.9.0.0", 16);
	start(&ci, &cr);
	bring_up(0);
	assert_int_equal(I.ups + R.ups, 0);
	assert_int_equal(rej(&R, IKE_REJ_TS_UNACCEPTABLE), 1);
	assert_non_null(strstr(I.why, "TS_UNACCEPTABLE"));
	assert_int_equal(R.ike_downs, 1);
	assert_int_equal(status(&I).n + status(&R).n, 0);
	stop();
}

static struct ike_ident
fqdn(const char *name)
{
	struct ike_ident id = { .type = IKE_ID_FQDN, .len = (uint8_t)strlen(name) };

	memcpy(id.data, name, id.len);
	return id;
}

/*
 * Several connections between one pair of addresses (a tester's tunnels to
 * one gateway), told apart by identity: the responder's IKE_SA_INIT takes
 * the first for the addresses; the IKE_AUTH request's IDi moves the SA to
 * the connection of that identity (its PSK and selectors).  An identity no
 * connection has is still refused.
 */
static void
test_conn_by_identity(void **state)
{
	struct ike_conn_cfg ci = cfg_i(), cr, other;
	char err[128];

	(void)state;
	ci.local_id = fqdn("t.tester.example");
	ci.remote_id = fqdn("t.gw.example");
	cr = mirror(&ci);
	other = cr;			/* first for the addresses: another identity and PSK */
	memcpy(other.name, "u", 2);
	other.remote_id = fqdn("u.tester.example");
	memcpy(other.psk, "fedcba9876543210", 16);
	other.ts_remote = pfx4("10.3.0.0", 16);
	memset(&I, 0, sizeof(I));
	memset(&R, 0, sizeof(R));
	I.ctx = ike_new(&ops, &I);
	R.ctx = ike_new(&ops, &R);
	assert_int_equal(ike_conn_add(I.ctx, &ci, err, sizeof(err)), 0);
	/* added last, "u" is the first the responder's list holds */
	assert_int_equal(ike_conn_add(R.ctx, &cr, err, sizeof(err)), 0);
	assert_int_equal(ike_conn_add(R.ctx, &other, err, sizeof(err)), 0);
	bring_up(0);
	assert_established();		/* child_up named "t" on both sides */
	assert_int_equal(rej_total(&I) + rej_total(&R), 0);
	stop();

	ci.local_id = fqdn("nobody.example");	/* no connection has it: refused */
	cr = mirror(&ci);
	cr.remote_id = fqdn("t.tester.example");
	start(&ci, &cr);
	bring_up(0);
	assert_int_equal(I.ups + R.ups, 0);
	assert_int_equal(rej(&R, IKE_REJ_AUTH_FAIL), 1);
	stop();
}

/* Drop the n-th datagram of outbox s (0-based count of those sent). */
static void
run_dropping(struct side *s, unsigned nth)
{
	uint64_t now = 0;

	assert_int_equal(ike_initiate(I.ctx, "t", now), 0);
	for (unsigned step = 0; step < 20; step++) {
		while (I.n || R.n) {
			struct side *from = I.n ? &I : &R, *to = from == &I ? &R : &I;
			unsigned idx = from->sent - from->n;
			struct pkt p = pop(from);

			if (from == s && idx == nth)
				continue;
			deliver(to, &p, now);
		}
		now += 250;
		ike_tick(I.ctx, now);
		ike_tick(R.ctx, now);
	}
}

static void
test_dropped_responses(void **state)
{
	(void)state;
	/* The IKE_SA_INIT response, then the IKE_AUTH response, then each request. */
	for (unsigned k = 0; k < 4; k++) {
		struct ike_conn_cfg ci = cfg_i(), cr = mirror(&ci);

		start(&ci, &cr);
		run_dropping(k < 2 ? &R : &I, k % 2);
		assert_established();
		assert_mirrored();
		assert_int_equal(ike_get_stats(I.ctx)->retransmits, 1);
		/* A lost response is re-sent from the cache; a lost request is just late. */
		assert_int_equal(ike_get_stats(R.ctx)->resent_responses, k < 2 ? 1 : 0);
		assert_int_equal(rej_total(&I) + rej_total(&R), 0);
		stop();
	}
}

/* The same request twice: the same response twice, byte for byte, processed once. */
static void
test_duplicate_request(void **state)
{
	struct ike_conn_cfg ci = cfg_i(), cr = mirror(&ci);
	struct pkt req, a, b;

	(void)state;
	start(&ci, &cr);
	assert_int_equal(ike_initiate(I.ctx, "t", 0), 0);
	for (unsigned x = 0; x < 2; x++) {
		req = pop(&I);
		assert_int_equal(deliver(&R, &req, 0), 0);
		assert_int_equal(deliver(&R, &req, 0), 0);
		assert_int_equal(R.n, 2);
		a = pop(&R);
		b = pop(&R);
		assert_int_equal(a.len, b.len);
		assert_memory_equal(a.data, b.data, a.len);
		assert_int_equal(deliver(&I, &a, 0), 0);
		/* The second copy of the response answers a request already
		 * answered: ignored, counted, no error (RFC 7296 2.1). */
		assert_int_equal(deliver(&I, &b, 0), 0);
	}
	assert_int_equal(R.ups, 1);
	assert_int_equal(ike_get_stats(R.ctx)->resent_responses, 2);
	assert_int_equal(ike_get_stats(I.ctx)->late_responses, 2);
	assert_int_equal(rej(&I, IKE_REJ_BAD_MSGID), 0);
	assert_established();
	assert_mirrored();
	stop();
}

struct snap {
	struct walk i, r;
	unsigned ups, downs;
};

static struct snap
snap(void)
{
	return (struct snap){ status(&I), status(&R), I.ups + R.ups, I.downs + R.downs };
}

static void
assert_unchanged(const struct snap *s)
{
	struct snap now = snap();

	assert_int_equal(now.i.n, s->i.n);
	assert_int_equal(now.r.n, s->r.n);
	assert_int_equal(now.i.st.state, s->i.st.state);
	assert_int_equal(now.r.st.state, s->r.st.state);
	assert_int_equal(now.i.st.peer_next_id, s->i.st.peer_next_id);
	assert_int_equal(now.r.st.peer_next_id, s->r.st.peer_next_id);
	assert_int_equal(now.i.st.next_req_id, s->i.st.next_req_id);
	assert_int_equal(now.ups, s->ups);
	assert_int_equal(now.downs, s->downs);
}

/* Old messages once the SA is up, and an INFORMATIONAL to move the window on. */
static void
test_replay(void **state)
{
	struct ike_conn_cfg ci = cfg_i(), cr = mirror(&ci);
	struct pkt m[4];
	struct snap s;

	(void)state;
	start(&ci, &cr);
	assert_int_equal(ike_initiate(I.ctx, "t", 0), 0);
	for (unsigned k = 0; k < 2; k++) {
		m[2 * k] = pop(&I);
		deliver(&R, &m[2 * k], 0);
		m[2 * k + 1] = pop(&R);
		deliver(&I, &m[2 * k + 1], 0);
	}
	assert_established();
	/* A liveness check moves the responder's window past the IKE_AUTH request. */
	ike_child_close(I.ctx, "t", 0);
	pump(0);
	assert_int_equal(R.downs, 1);
	s = snap();
	assert_int_not_equal(deliver(&R, &m[0], 0), 0);	/* IKE_SA_INIT request */
	assert_int_equal(deliver(&I, &m[1], 0), 0);	/* its response: ignored */
	assert_int_not_equal(deliver(&R, &m[2], 0), 0);	/* IKE_AUTH request */
	assert_int_equal(deliver(&I, &m[3], 0), 0);	/* its response: ignored */
	assert_int_equal(rej(&R, IKE_REJ_BAD_MSGID), 2);
	/* answers to requests answered long ago: nothing read from them */
	assert_int_equal(ike_get_stats(I.ctx)->late_responses, 2);
	assert_int_equal(rej(&I, IKE_REJ_BAD_MSGID), 0);
	assert_int_equal(I.n + R.n, 0);
	assert_unchanged(&s);
	stop();
}

/* Every truncation and every single bit flip of the IKE_AUTH request is refused. */
static void
test_malformed(void **state)
{
	struct ike_conn_cfg ci = cfg_i(), cr = mirror(&ci);
	uint64_t before;
	struct pkt req;
	struct snap s;

	(void)state;
	start(&ci, &cr);
	assert_int_equal(ike_initiate(I.ctx, "t", 0), 0);
	req = pop(&I);
	deliver(&R, &req, 0);
	req = pop(&R);
	deliver(&I, &req, 0);
	req = pop(&I);			/* IKE_AUTH */
	s = snap();
	for (size_t len = 0; len < req.len; len++) {
		uint8_t *copy = malloc(len ? len : 1);

		memcpy(copy, req.data, len);
		assert_int_not_equal(ike_input(R.ctx, &req.dst, &req.src, copy, len, 0), 0);
		free(copy);
	}
	assert_int_equal(rej(&R, IKE_REJ_MALFORMED), req.len);
	before = rej(&R, IKE_REJ_ICV_FAIL);
	for (size_t bit = 0; bit < req.len * 8; bit++) {
		struct pkt bad = req;

		bad.data[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		assert_int_not_equal(deliver(&R, &bad, 0), 0);
	}
	/*
	 * Each bit from the SK payload's IV on is an ICV failure, and so are those
	 * of the associated data that the parser ignores: 6 flag bits (V and the
	 * reserved ones), the minor version, and the SK header's next payload,
	 * critical and reserved bits.
	 */
	assert_int_equal(rej(&R, IKE_REJ_ICV_FAIL) - before,
			 (req.len - IKE_HDR_LEN - 4) * 8 + 6 + 4 + 8 + 8);
	assert_int_equal(R.n, 0);
	assert_unchanged(&s);
	assert_int_equal(deliver(&R, &req, 0), 0);
	pump(0);
	assert_established();
	assert_mirrored();
	stop();
}

/* A corrupted IKE_AUTH response: refused, then the retransmission brings the good one. */
static void
test_response_icv(void **state)
{
	struct ike_conn_cfg ci = cfg_i(), cr = mirror(&ci);
	struct pkt p, bad;

	(void)state;
	start(&ci, &cr);
	assert_int_equal(ike_initiate(I.ctx, "t", 0), 0);
	for (unsigned k = 0; k < 2; k++) {
		p = pop(&I);
		deliver(&R, &p, 0);
		p = pop(&R);
		if (k == 0)
			deliver(&I, &p, 0);
	}
	bad = p;
	bad.data[bad.len - 1] ^= 0x80;		/* the ICV's last byte */
	assert_int_not_equal(deliver(&I, &bad, 0), 0);
	assert_int_equal(rej(&I, IKE_REJ_ICV_FAIL), 1);
	assert_int_equal(status(&I).st.state, IKE_ST_AUTH_SENT);
	assert_int_equal(I.ups, 0);
	ike_tick(I.ctx, 499);
	assert_int_equal(I.n, 0);
	ike_tick(I.ctx, 500);
	assert_int_equal(I.n, 1);
	pump(500);
	assert_established();
	assert_mirrored();
	assert_int_equal(ike_get_stats(R.ctx)->resent_responses, 1);
	stop();
}

/* Nobody answers: tries transmissions, doubling, then ike_down. */
static void
test_give_up(void **state)
{
	struct ike_conn_cfg ci = cfg_i(), cr = mirror(&ci);
	uint64_t at[8];
	unsigned n = 0;

	(void)state;
	ci.retrans_tries = 4;
	start(&ci, &cr);
	assert_int_equal(ike_initiate(I.ctx, "t", 0), 0);
	for (uint64_t now = 0; now <= 20000 && I.ike_downs == 0; now += 50) {
		ike_tick(I.ctx, now);
		while (I.n) {
			struct pkt p = pop(&I);

			assert_true(n < N_ELEMS(at));
			at[n++] = now;
			(void)p;
		}
		if (I.ike_downs)
			assert_int_equal(now, 500 + 1000 + 2000 + 4000);
	}
	assert_int_equal(n, 4);
	assert_int_equal(at[1], 500);
	assert_int_equal(at[2], 1500);
	assert_int_equal(at[3], 3500);
	assert_int_equal(I.ike_downs, 1);
	assert_non_null(strstr(I.why, "no response to IKE_SA_INIT after 4 tries"));
	assert_int_equal(status(&I).n, 0);
	stop();
}

/* Unknown SPIs, and a message with the wrong I flag. */
static void
test_bad_spi_flags(void **state)
{
	struct ike_conn_cfg ci = cfg_i(), cr = mirror(&ci);
	struct pkt req, bad;
	struct snap s;

	(void)state;
	start(&ci, &cr);
	assert_int_equal(ike_initiate(I.ctx, "t", 0), 0);
	req = pop(&I);
	deliver(&R, &req, 0);
	req = pop(&R);
	deliver(&I, &req, 0);
	req = pop(&I);
	s = snap();
	bad = req;
	bad.data[3] ^= 0x40;			/* SPIi */
	assert_int_not_equal(deliver(&R, &bad, 0), 0);
	bad = req;
	bad.data[12] ^= 0x01;			/* SPIr */
	assert_int_not_equal(deliver(&R, &bad, 0), 0);
	assert_int_equal(rej(&R, IKE_REJ_BAD_SPI), 2);
	bad = req;
	bad.data[19] &= (uint8_t)~IKE_F_INITIATOR;
	assert_int_not_equal(deliver(&R, &bad, 0), 0);
	assert_int_equal(rej(&R, IKE_REJ_BAD_FLAGS), 1);
	bad = req;
	bad.data[23] ^= 0x02;			/* message ID 1 -> 3 */
	assert_int_not_equal(deliver(&R, &bad, 0), 0);
	assert_int_equal(rej(&R, IKE_REJ_BAD_MSGID), 1);
	assert_unchanged(&s);
	deliver(&R, &req, 0);
	pump(0);
	assert_established();
	stop();
}

/* Delete the CHILD_SA, then the IKE SA, from either side. */
static void
test_delete(void **state)
{
	(void)state;
	for (unsigned who = 0; who < 2; who++) {
		struct ike_conn_cfg ci = cfg_i(), cr = mirror(&ci);
		struct side *a = who ? &R : &I, *b = who ? &I : &R;
		uint32_t spi_in;

		start(&ci, &cr);
		bring_up(0);
		spi_in = a->child.spi_in;
		assert_int_equal(ike_child_close(a->ctx, "t", 10), 0);
		pump(10);
		assert_int_equal(a->downs, 1);
		assert_int_equal(b->downs, 1);
		assert_int_equal(a->down_in, spi_in);
		assert_int_equal(b->down_out, spi_in);
		assert_int_equal(status(&I).n + status(&R).n, 2);
		assert_int_equal(ike_child_close(a->ctx, "t", 10), -ENOENT);
		assert_int_equal(ike_terminate(a->ctx, "t", 20), 0);
		pump(20);
		assert_int_equal(a->ike_downs, 1);
		assert_int_equal(b->ike_downs, 1);
		assert_string_equal(a->why, "deleted");
		assert_string_equal(b->why, "deleted by the peer");
		assert_int_equal(status(&I).n + status(&R).n, 0);
		assert_int_equal(a->downs + b->downs, 2);
		assert_int_equal(rej_total(&I) + rej_total(&R), 0);
		stop();
	}
}

/*
 * A CHILD_SA named by its SPI (a remote-access client's: clients share their
 * section's name): rekeyed by either of its SPIs, from either side, and its
 * IKE SA ended; an SPI no CHILD_SA has is -ENOENT.
 */
static void
test_by_spi(void **state)
{
	(void)state;
	for (unsigned who = 0; who < 2; who++) {
		struct ike_conn_cfg ci = cfg_i(), cr = mirror(&ci);
		struct side *a = who ? &R : &I, *b = who ? &I : &R;
		uint32_t old_in;

		start(&ci, &cr);
		bring_up(0);
		assert_int_equal(ike_child_rekey_spi(a->ctx, 0x12345678, 10), -ENOENT);
		assert_int_equal(ike_terminate_spi(a->ctx, 0x12345678, 10), -ENOENT);
		old_in = a->child.spi_in;
		assert_int_equal(ike_child_rekey_spi(a->ctx, who ? a->child.spi_out : old_in, 10),
				 0);
		pump(10);
		assert_int_equal(a->ups, 2);
		assert_int_equal(b->ups, 2);
		assert_int_not_equal(a->child.spi_in, old_in);
		assert_int_equal(ike_child_rekey_spi(a->ctx, a->child.spi_in, 10), -EBUSY);
		assert_int_equal(ike_terminate_spi(a->ctx, a->child.spi_out, 20), 0);
		pump(20);
		assert_int_equal(a->ike_downs, 1);
		assert_int_equal(b->ike_downs, 1);
		assert_string_equal(b->why, "deleted by the peer");
		assert_int_equal(status(&I).n + status(&R).n, 0);
		assert_int_equal(rej_total(&I) + rej_total(&R), 0);
		stop();
	}
}

/*
 * A connection removed (a reload), from each side: its SAs end at once with
 * their callbacks, the peer hears one Delete and ends its SA too (the answer
 * finds no SA: bad-spi), the name is gone; added again, it comes up again.
 * A half-open SA goes with nothing sent.
 */
static void
test_conn_remove(void **state)
{
	(void)state;
	for (unsigned who = 0; who < 2; who++) {
		struct ike_conn_cfg ci = cfg_i(), cr = mirror(&ci);
		struct side *a = who ? &R : &I, *b = who ? &I : &R;
		const struct ike_conn_cfg *ca = who ? &cr : &ci;
		char err[128];

		start(&ci, &cr);
		bring_up(0);
		assert_int_equal(ike_conn_remove(a->ctx, "t", 10), 0);
		assert_int_equal(a->downs, 1);
		assert_int_equal(a->ike_downs, 1);
		assert_string_equal(a->why, "connection removed");
		assert_int_equal(status(a).n, 0);
		assert_int_equal(a->n, 1);			/* the Delete */
		pump(10);
		assert_int_equal(b->downs, 1);
		assert_int_equal(b->ike_downs, 1);
		assert_string_equal(b->why, "deleted by the peer");
		assert_int_equal(status(b).n, 0);
		/* its answer: late for an SA that ended here, not refused ([ops] 27.4) */
		assert_int_equal(rej(a, IKE_REJ_BAD_SPI), 0);
		assert_int_equal(ike_get_stats(a->ctx)->after_end, 1);
		assert_int_equal(rej_total(&I) + rej_total(&R), 0);
		assert_int_equal(ike_conn_remove(a->ctx, "t", 20), -ENOENT);
		assert_int_equal(ike_initiate(a->ctx, "t", 20), -ENOENT);
		assert_int_equal(ike_terminate(a->ctx, "t", 20), -ENOENT);
		assert_int_equal(ike_conn_add(a->ctx, ca, err, sizeof(err)), 0);
		bring_up(30);
		assert_established();
		assert_int_equal(I.ups + R.ups, 4);
		/* half-open on the initiator: ends, nothing sent */
		assert_int_equal(ike_terminate(I.ctx, "t", 40), 0);
		pump(40);
		assert_int_equal(ike_initiate(I.ctx, "t", 50), 0);
		assert_int_equal(I.n, 1);
		I.n = 0;				/* IKE_SA_INIT lost */
		assert_int_equal(status(&I).n, 1);
		assert_int_equal(ike_conn_remove(I.ctx, "t", 60), 0);
		assert_int_equal(I.n, 0);
		assert_int_equal(status(&I).n, 0);
		assert_int_equal(ike_conn_remove(R.ctx, "t", 60), 0);
		assert_int_equal(R.n, 0);
		stop();
	}
}

/* Liveness checks: answered while the peer lives; the SA ends when it stops. */
static void
test_dpd(void **state)
{
	struct ike_conn_cfg ci = cfg_i(), cr = mirror(&ci);
	uint64_t now = 0;

	(void)state;
	ci.dpd_ms = 10000;
	start(&ci, &cr);
	bring_up(now);
	for (unsigned k = 0; k < 3; k++) {
		now += 10000;
		ike_tick(I.ctx, now);
		assert_int_equal(I.n, 1);
		pump(now);
		assert_established();
	}
	assert_int_equal(status(&R).st.peer_next_id, 5);	/* INIT, AUTH, 3 checks */
	/* The responder is gone from here on. */
	for (now += 10000; now < 40000 + 10000 + 500 * 7 + 100 && I.ike_downs == 0;
	     now += 100) {
		ike_tick(I.ctx, now);
		I.n = 0;
	}
	assert_int_equal(I.ike_downs, 1);
	assert_int_equal(I.downs, 1);
	assert_non_null(strstr(I.why, "no response to liveness check"));
	stop();
}

/*
 * INITIAL_CONTACT: the initiator starts again (a new context, nothing of
 * before) and sets the tunnel up anew.  Its IKE_AUTH says INITIAL_CONTACT,
 * so the responder ends the IKE SA of before at once (child_down for its
 * CHILD_SA first, no Delete sent) and holds only the new one.  The first
 * set-up (nothing to end) counts none; a responder with no_initial_contact
 * keeps both.
 */
static void
test_initial_contact(void **state)
{
	struct ike_conn_cfg ci = cfg_i(), cr = mirror(&ci);
	uint32_t old_in;
	char err[128];

	(void)state;
	start(&ci, &cr);
	bring_up(0);
	assert_int_equal(ike_get_stats(R.ctx)->initial_contact, 0);	/* nothing before */
	old_in = R.child.spi_in;
	ike_free(I.ctx);			/* the initiator restarts: kill -9 */
	memset(&I, 0, sizeof(I));
	I.ctx = ike_new(&ops, &I);
	assert_int_equal(ike_conn_add(I.ctx, &ci, err, sizeof(err)), 0);
	bring_up(1000);
	assert_int_equal(R.ike_downs, 1);
	assert_non_null(strstr(R.why, "INITIAL_CONTACT"));
	assert_int_equal(R.downs, 1);
	assert_int_equal(R.down_in, old_in);
	assert_int_equal(R.ev[R.n_ev - 2].kind, 'd');	/* the old one went first */
	assert_int_equal(R.ev[R.n_ev - 1].kind, 'u');
	assert_int_equal(R.ups, 2);
	assert_int_equal(ike_get_stats(R.ctx)->initial_contact, 1);
	assert_int_equal(R.sent, 4);			/* two exchanges answered: no Delete */
	assert_established();
	assert_int_equal(R.child.spi_out, I.child.spi_in);
	assert_int_equal(rej_total(&I) + rej_total(&R), 0);
	stop();
	/* A responder with initial-contact = no heeds none: both IKE SAs stay. */
	cr.no_initial_contact = true;
	start(&ci, &cr);
	bring_up(0);
	ike_free(I.ctx);
	memset(&I, 0, sizeof(I));
	I.ctx = ike_new(&ops, &I);
	assert_int_equal(ike_conn_add(I.ctx, &ci, err, sizeof(err)), 0);
	bring_up(1000);
	assert_int_equal(R.ike_downs, 0);
	assert_int_equal(R.downs, 0);
	assert_int_equal(status(&R).n, 2);
	assert_int_equal(ike_get_stats(R.ctx)->initial_contact, 0);
	stop();
}

/* Above the threshold of half-open SAs the responder asks for a cookie. */
static void
test_cookie(void **state)
{
	struct ike_conn_cfg ci = cfg_i(), cr = mirror(&ci);
	struct side other = { 0 };
	char err[64];

	(void)state;
	start(&ci, &cr);
	ike_set_cookie_threshold(R.ctx, 1);
	/* Another initiator leaves a half-open SA on the responder. */
	other.ctx = ike_new(&ops, &other);
	assert_int_equal(ike_conn_add(other.ctx, &ci, err, sizeof(err)), 0);
	assert_int_equal(ike_initiate(other.ctx, "t", 0), 0);
	{
		struct pkt p = other.q[0];

		deliver(&R, &p, 0);
		R.n = 0;
	}
	assert_int_equal(status(&R).st.state, IKE_ST_HALF_OPEN);
	bring_up(0);
	assert_int_equal(rej(&R, IKE_REJ_COOKIE), 1);
	assert_int_equal(status(&R).n, 2);
	assert_int_equal(I.ups, 1);
	assert_int_equal(R.ups, 1);
	assert_mirrored();
	/* The half-open one expires; the established one stays. */
	ike_tick(R.ctx, 30000);
	assert_int_equal(ike_get_stats(R.ctx)->half_open_expired, 1);
	assert_int_equal(status(&R).n, 1);
	assert_int_equal(R.ike_downs, 0);
	ike_free(other.ctx);
	stop();
}

/* NAT detection: the responder sees another source address than the initiator's. */
static void
test_nat_detected(void **state)
{
	struct ike_conn_cfg ci = cfg_i(), cr = mirror(&ci);
	struct ike_addr nat = addr4("203.0.113.7");

	(void)state;
	nat.port = 4711;
	ci.local_id = (struct ike_ident){ IKE_ID_FQDN, 1, "i" };
	ci.remote_id = (struct ike_ident){ IKE_ID_FQDN, 1, "r" };
	cr = mirror(&ci);
	cr.remote = nat;
	start(&ci, &cr);
	assert_int_equal(ike_initiate(I.ctx, "t", 0), 0);
	for (unsigned k = 0; k < 2; k++) {
		struct pkt p = pop(&I);

		p.src = nat;
		deliver(&R, &p, 0);
		p = pop(&R);
		assert_memory_equal(&p.dst, &nat, sizeof(nat));
		p.dst = ci.local;
		deliver(&I, &p, 0);
	}
	assert_int_equal(I.ups + R.ups, 2);
	assert_true(status(&I).st.nat_local && !status(&I).st.nat_remote);
	assert_true(status(&R).st.nat_remote && !status(&R).st.nat_local);
	stop();
}

/*
 * A NAT in front of the initiator, as a NAT does it: its port 500 and 4500
 * each get their own public port, and answers are mapped back.
 */
#define NAT_IP		"203.0.113.7"
#define NAT_P500	4711
#define NAT_P4500	4712

static void
nat_out(struct pkt *p)
{
	uint16_t port = p->src.port == 500 ? NAT_P500 : NAT_P4500;

	assert_true(p->src.port == 500 || p->src.port == 4500);
	p->src = addr4(NAT_IP);
	p->src.port = port;
}

static void
nat_in(struct pkt *p, const struct ike_addr *inside)
{
	uint16_t port = p->dst.port == NAT_P500 ? 500 : 4500;

	assert_true(p->dst.port == NAT_P500 || p->dst.port == NAT_P4500);
	assert_true(ip_is(&p->dst, NAT_IP));
	p->dst = *inside;
	p->dst.port = port;
}

static void
pump_nat(const struct ike_addr *inside, uint64_t now)
{
	for (unsigned guard = 0; (I.n || R.n) && guard < 100; guard++) {
		if (I.n) {
			struct pkt p = pop(&I);

			nat_out(&p);
			assert_int_equal(deliver(&R, &p, now), 0);
		}
		if (R.n) {
			struct pkt p = pop(&R);

			nat_in(&p, inside);
			assert_int_equal(deliver(&I, &p, now), 0);
		}
	}
	assert_int_equal(I.n + R.n, 0);
}

static void
assert_ports(const struct side *s, unsigned k, uint16_t from, uint16_t to)
{
	assert_true(k < s->sent);
	assert_int_equal(s->from[k].port, from);
	assert_int_equal(s->to[k].port, to);
}

static void
assert_encap(const struct ike_child *c, uint16_t local, uint16_t remote)
{
	assert_true(c->udp_encap);
	assert_int_equal(c->udp_local, local);
	assert_int_equal(c->udp_remote, remote);
	assert_int_equal(c->local.port, local);
	assert_int_equal(c->remote.port, remote);
}

/* A NAT detected: IKE_AUTH and all after it on 4500, the CHILD_SA ESP in UDP. */
static void
test_nat_traversal(void **state)
{
	struct ike_conn_cfg ci = cfg_i(), cr;

	(void)state;
	ci.local_id = (struct ike_ident){ IKE_ID_FQDN, 1, "i" };
	ci.remote_id = (struct ike_ident){ IKE_ID_FQDN, 1, "r" };
	cr = mirror(&ci);
	cr.remote = addr4(NAT_IP);
	start(&ci, &cr);
	assert_int_equal(ike_initiate(I.ctx, "t", 0), 0);
	pump_nat(&ci.local, 0);
	assert_int_equal(I.ups + R.ups, 2);
	assert_mirrored();
	assert_ports(&I, 0, 500, 500);		/* IKE_SA_INIT */
	assert_ports(&R, 0, 500, NAT_P500);
	assert_ports(&I, 1, 4500, 4500);	/* IKE_AUTH */
	assert_ports(&R, 1, 4500, NAT_P4500);
	assert_encap(&I.child, 4500, 4500);
	assert_encap(&R.child, 4500, NAT_P4500);
	assert_true(ip_is(&R.child.remote, NAT_IP));
	assert_true(status(&I).st.udp_encap && status(&R).st.udp_encap);
	assert_true(status(&I).st.nat_local && status(&R).st.nat_remote);
	/* Later requests, from either side, stay there. */
	assert_int_equal(ike_child_close(R.ctx, "t", 10), 0);
	pump_nat(&ci.local, 10);
	assert_ports(&R, 2, 4500, NAT_P4500);
	assert_ports(&I, 2, 4500, 4500);
	assert_int_equal(ike_terminate(I.ctx, "t", 20), 0);
	pump_nat(&ci.local, 20);
	assert_ports(&I, 3, 4500, 4500);
	assert_ports(&R, 3, 4500, NAT_P4500);
	assert_int_equal(I.ike_downs + R.ike_downs, 2);
	assert_int_equal(rej_total(&I) + rej_total(&R), 0);
	stop();
}

/* force_encap on either side, no NAT: the same as with one. */
static void
test_force_encap(void **state)
{
	(void)state;
	for (unsigned who = 0; who < 2; who++) {
		struct ike_conn_cfg ci = cfg_i(), cr = mirror(&ci);
		struct walk wi, wr;

		if (who == 0)
			ci.force_encap = true;
		else
			cr.force_encap = true;
		start(&ci, &cr);
		bring_up(0);
		assert_mirrored();
		assert_ports(&I, 0, 500, 500);
		assert_ports(&I, 1, 4500, 4500);
		assert_ports(&R, 1, 4500, 4500);
		assert_encap(&I.child, 4500, 4500);
		assert_encap(&R.child, 4500, 4500);
		wi = status(&I);
		wr = status(&R);
		assert_true(wi.st.udp_encap && wr.st.udp_encap);
		/* The peer of the one that forces it believes it behind a NAT. */
		assert_true(who == 0 ? wr.st.nat_remote && !wi.st.nat_remote :
			    wi.st.nat_remote && !wr.st.nat_remote);
		assert_false(wi.st.nat_local || wr.st.nat_local);
		assert_int_equal(ike_child_close(I.ctx, "t", 10), 0);
		pump(10);
		assert_ports(&I, 2, 4500, 4500);
		assert_ports(&R, 2, 4500, 4500);
		assert_int_equal(rej_total(&I) + rej_total(&R), 0);
		stop();
	}
}

/* No NAT: port 500 throughout, no encapsulation. */
static void
test_no_nat(void **state)
{
	struct ike_conn_cfg ci = cfg_i(), cr = mirror(&ci);

	(void)state;
	start(&ci, &cr);
	bring_up(0);
	assert_established();
	assert_int_equal(ike_child_close(R.ctx, "t", 10), 0);
	pump(10);
	for (unsigned k = 0; k < 3; k++) {
		assert_ports(&I, k, 500, 500);
		assert_ports(&R, k, 500, 500);
	}
	assert_false(I.child.udp_encap || R.child.udp_encap);
	assert_int_equal(I.child.udp_local + I.child.udp_remote + R.child.udp_local +
			 R.child.udp_remote, 0);
	assert_false(status(&I).st.udp_encap || status(&R).st.udp_encap);
	stop();
}

/* The two ends' current children mirror each other (any number of ups). */
static void
assert_pair(void)
{
	const struct ike_child *a = &I.child, *b = &R.child;

	assert_int_equal(a->spi_out, b->spi_in);
	assert_int_equal(a->spi_in, b->spi_out);
	assert_memory_equal(a->enc_out, b->enc_in, a->enc_key_len);
	assert_memory_equal(a->enc_in, b->enc_out, a->enc_key_len);
	assert_memory_not_equal(a->enc_in, a->enc_out, a->enc_key_len);
	assert_memory_equal(a->integ_out, b->integ_in, a->integ_key_len);
	assert_memory_equal(a->integ_in, b->integ_out, a->integ_key_len);
	assert_int_equal(status(&I).st.child_spi_in, a->spi_in);
	assert_int_equal(status(&R).st.child_spi_in, b->spi_in);
}

/* A new child: new SPIs and keys, the selectors and algorithms of the old. */
static void
assert_renewed(const struct ike_child *now, const struct ike_child *old)
{
	assert_true(now->spi_in != old->spi_in && now->spi_out != old->spi_out);
	assert_true(now->spi_in != 0 && now->spi_out != 0);
	assert_int_equal(now->enc_key_len, old->enc_key_len);
	assert_memory_not_equal(now->enc_in, old->enc_in, now->enc_key_len);
	assert_memory_not_equal(now->enc_out, old->enc_out, now->enc_key_len);
	if (now->integ_key_len)
		assert_memory_not_equal(now->integ_in, old->integ_in, now->integ_key_len);
	assert_memory_equal(&now->ts_local, &old->ts_local, sizeof(now->ts_local));
	assert_memory_equal(&now->ts_remote, &old->ts_remote, sizeof(now->ts_remote));
}

/* One rekey by a at now, its grace period, its Delete: make before break on both. */
static void
rekey_once(struct side *a, uint64_t now, uint32_t grace)
{
	struct side *b = a == &I ? &R : &I;
	struct ike_child oa = a->child, ob = b->child;
	unsigned ea = a->n_ev, eb = b->n_ev, da = a->downs, db = b->downs;

	assert_int_equal(ike_child_rekey(a->ctx, "t", now), 0);
	pump(now);
	assert_pair();
	assert_renewed(&a->child, &oa);
	assert_renewed(&b->child, &ob);
	/* Both up on each side: the new one came up, the old one is still there. */
	assert_int_equal(a->downs, da);
	assert_int_equal(b->downs, db);
	assert_int_equal(ike_child_rekey(a->ctx, "t", now), -EBUSY);
	assert_int_equal(ike_child_rekey(b->ctx, "t", now), -EBUSY);
	ike_tick(a->ctx, now + grace - 1);
	ike_tick(b->ctx, now + grace - 1);
	assert_int_equal(a->n + b->n, 0);
	ike_tick(a->ctx, now + grace);
	ike_tick(b->ctx, now + grace);
	assert_int_equal(a->n, 1);
	assert_int_equal(b->n, 0);
	assert_int_equal(a->downs, da + 1);	/* as the Delete goes out */
	pump(now + grace);
	assert_int_equal(b->downs, db + 1);
	assert_int_equal(a->down_in, oa.spi_in);
	assert_int_equal(b->down_in, ob.spi_in);
	assert_int_equal(b->down_out, ob.spi_out);
	if (ea + 2 <= EVMAX && eb + 2 <= EVMAX) {
		assert_true(a->n_ev == ea + 2 && b->n_ev == eb + 2);
		assert_true(a->ev[ea].kind == 'u' && a->ev[ea].spi_in == a->child.spi_in);
		assert_true(a->ev[ea + 1].kind == 'd' && a->ev[ea + 1].spi_in == oa.spi_in);
		assert_true(b->ev[eb].kind == 'u' && b->ev[eb].spi_in == b->child.spi_in);
		assert_true(b->ev[eb + 1].kind == 'd' && b->ev[eb + 1].spi_in == ob.spi_in);
	}
}

/* A rekey from each side, GCM and CBC (in ESP, and in IKE), with the default grace period. */
static void
test_rekey(void **state)
{
	(void)state;
	for (unsigned k = 0; k < 6; k++) {
		struct ike_conn_cfg ci = cfg_i(), cr;
		struct side *a = k % 2 ? &R : &I;

		ci.esp[0] = ESP_PROPS[k < 2 ? 0 : 3];
		if (k >= 4)
			ci.ike[0] = IKE_PROPS[6];	/* the SK payload with AES-CBC */
		cr = mirror(&ci);
		start(&ci, &cr);
		bring_up(0);
		assert_established();
		rekey_once(a, 100, 2000);
		assert_established();
		assert_int_equal(status(&I).st.child_rekeys, 1);
		assert_int_equal(status(&R).st.child_rekeys, 1);
		assert_int_equal(I.ups + R.ups, 4);
		assert_int_equal(rej_total(&I) + rej_total(&R), 0);
		/* The new one is the CHILD_SA from now on: closing it ends it. */
		assert_int_equal(ike_child_close(I.ctx, "t", 3000), 0);
		pump(3000);
		assert_int_equal(I.down_in, I.child.spi_in);
		assert_int_equal(R.down_in, R.child.spi_in);
		assert_int_equal(I.downs + R.downs, 4);
		stop();
		assert_int_equal(I.downs + R.downs, 4);
	}
}

/*
 * PFS (esp-proposals with a group): a CHILD_SA rekey from each side with a
 * KE each way, for every group; the CHILD_SA of IKE_AUTH has none (its keys
 * come from the IKE SA's, 1.2), the rekeyed one the group, the keys agree.
 */
static void
test_rekey_pfs(void **state)
{
	static const uint16_t groups[] = {
		IKE_DH_MODP2048, IKE_DH_ECP256, IKE_DH_ECP384, IKE_DH_CURVE25519,
	};

	(void)state;
	for (unsigned k = 0; k < 2 * N_ELEMS(groups); k++) {
		struct ike_conn_cfg ci = cfg_i(), cr;
		struct side *a = k % 2 ? &R : &I;

		if (k >= 4)
			ci.esp[0] = (struct ike_prop_cfg)ESP_CBC(256, IKE_INTEG_HMAC_SHA2_256_128);
		ci.esp[0].dh[0] = groups[k / 2];
		ci.esp[0].n_dh = 1;
		cr = mirror(&ci);
		start(&ci, &cr);
		bring_up(0);
		assert_established();
		assert_int_equal(I.child.dh, 0);
		rekey_once(a, 100, 2000);
		assert_int_equal(I.child.dh, groups[k / 2]);
		assert_int_equal(R.child.dh, groups[k / 2]);
		rekey_once(a == &I ? &R : &I, 3000, 2000);	/* the group in use again */
		assert_int_equal(R.child.dh, groups[k / 2]);
		assert_int_equal(rej_total(&I) + rej_total(&R), 0);
		stop();
	}
}

/*
 * The rekey's KE is of a group the responder does not take: it answers
 * INVALID_KE_PAYLOAD with its group, and the initiator tries again with it.
 */
static void
test_rekey_pfs_invalid_ke(void **state)
{
	struct ike_conn_cfg ci = cfg_i(), cr;

	(void)state;
	ci.esp[0].dh[0] = IKE_DH_CURVE25519;
	ci.esp[0].dh[1] = IKE_DH_MODP2048;
	ci.esp[0].n_dh = 2;
	cr = mirror(&ci);
	cr.esp[0].dh[0] = IKE_DH_MODP2048;
	cr.esp[0].n_dh = 1;
	start(&ci, &cr);
	bring_up(0);
	assert_established();
	assert_int_equal(ike_child_rekey(I.ctx, "t", 100), 0);
	pump(100);
	assert_pair();
	assert_int_equal(I.child.dh, IKE_DH_MODP2048);
	assert_int_equal(R.child.dh, IKE_DH_MODP2048);
	assert_int_equal(rej(&R, IKE_REJ_INVALID_KE), 1);
	assert_int_equal(rej(&I, IKE_REJ_INVALID_KE), 1);
	assert_int_equal(status(&I).st.child_rekeys, 1);
	stop();
}

/* One side wants PFS, the other not: the rekey is refused, the CHILD_SA stays. */
static void
test_rekey_pfs_mismatch(void **state)
{
	(void)state;
	for (unsigned k = 0; k < 2; k++) {
		struct ike_conn_cfg ci = cfg_i(), cr;
		struct ike_child old;

		cr = mirror(&ci);
		(k ? &cr : &ci)->esp[0].dh[0] = IKE_DH_ECP256;
		(k ? &cr : &ci)->esp[0].n_dh = 1;
		start(&ci, &cr);
		bring_up(0);
		assert_established();
		old = I.child;
		assert_int_equal(ike_child_rekey(I.ctx, "t", 100), 0);
		pump(100);
		assert_int_equal(rej(&R, IKE_REJ_NO_PROPOSAL), 1);
		assert_int_equal(I.child.spi_in, old.spi_in);
		assert_int_equal(status(&I).st.child_rekeys, 0);
		assert_int_equal(status(&I).n, 1);
		stop();
	}
}

/* 100 rekeys in a row, from both sides, with ESP in UDP; ASan checks for leaks. */
static void
test_rekey_100(void **state)
{
	struct ike_conn_cfg ci = cfg_i(), cr;
	uint64_t now = 0;

	(void)state;
	ci.rekey_grace_ms = 500;
	ci.force_encap = true;
	cr = mirror(&ci);
	start(&ci, &cr);
	bring_up(now);
	for (unsigned k = 0; k < 100; k++) {
		now += 1000;
		rekey_once(k % 3 ? &I : &R, now, 500);
		assert_true(I.child.udp_encap && R.child.udp_encap);
	}
	assert_int_equal(I.ups, 101);
	assert_int_equal(R.ups, 101);
	assert_int_equal(I.downs + R.downs, 200);
	assert_int_equal(status(&I).st.child_rekeys, 100);
	assert_int_equal(rej_total(&I) + rej_total(&R), 0);
	assert_int_equal(ike_get_stats(I.ctx)->retransmits, 0);
	stop();
	assert_int_equal(I.downs + R.downs, 202);
}

/* The CREATE_CHILD_SA response is lost: the retransmitted request gets it again. */
static void
test_rekey_lost_response(void **state)
{
	struct ike_conn_cfg ci = cfg_i(), cr = mirror(&ci);
	struct ike_child oi;
	struct pkt p;

	(void)state;
	start(&ci, &cr);
	bring_up(0);
	oi = I.child;
	assert_int_equal(ike_child_rekey(I.ctx, "t", 100), 0);
	p = pop(&I);
	assert_int_equal(deliver(&R, &p, 100), 0);
	assert_int_equal(R.ups, 2);
	(void)pop(&R);
	assert_int_equal(I.ups, 1);
	ike_tick(I.ctx, 599);
	assert_int_equal(I.n, 0);
	ike_tick(I.ctx, 600);
	assert_int_equal(I.n, 1);
	pump(600);
	assert_int_equal(I.ups, 2);
	assert_int_equal(R.ups, 2);		/* processed once */
	assert_int_equal(ike_get_stats(R.ctx)->resent_responses, 1);
	assert_pair();
	assert_renewed(&I.child, &oi);
	ike_tick(I.ctx, 2600);
	pump(2600);
	assert_int_equal(I.downs + R.downs, 2);
	assert_int_equal(rej_total(&I) + rej_total(&R), 0);
	stop();
}

/* child_rekey_ms: the IKE SA's initiator rekeys when the child is that old. */
static void
test_rekey_lifetime(void **state)
{
	struct ike_conn_cfg ci = cfg_i(), cr;

	(void)state;
	ci.child_rekey_ms = 60000;
	ci.rekey_grace_ms = 1000;
	cr = mirror(&ci);
	start(&ci, &cr);
	bring_up(0);
	for (unsigned k = 1; k <= 3; k++) {
		uint64_t due = 60000 * k;

		ike_tick(I.ctx, due - 1);
		ike_tick(R.ctx, due - 1);
		assert_int_equal(I.n + R.n, 0);
		ike_tick(I.ctx, due);
		ike_tick(R.ctx, due);
		assert_int_equal(I.n, 1);
		assert_int_equal(R.n, 0);
		pump(due);
		assert_int_equal(I.ups, 1 + k);
		assert_pair();
		ike_tick(I.ctx, due + 1000);
		pump(due + 1000);
		assert_int_equal(I.downs + R.downs, 2 * k);
	}
	assert_int_equal(rej_total(&I) + rej_total(&R), 0);
	stop();
}

/* The CHILD_SA s has with inbound SPI spi, among its last four child_ups. */
static const struct ike_child *
up_by_spi(const struct side *s, uint32_t spi)
{
	for (unsigned i = 0; i < N_ELEMS(s->hist); i++)
		if (s->hist[i].spi_in == spi && spi != 0)
			return &s->hist[i];
	fail_msg("no child_up with SPI %08x", spi);
	return NULL;
}

/*
 * One round of crossing rekeys (2.8.1), both started at now.  answered_first:
 * I sees the answer to its rekey before R's request (it has to resolve on the
 * request), else both see the peer's request first (pump's order).  Then the
 * loser's Delete of its redundant CHILD_SA, the winner's of the old one after
 * the grace period: one CHILD_SA left, the same on both, mirrored keys.
 */
static void
cross_round(uint64_t now, bool answered_first)
{
	struct walk oi = status(&I), orr = status(&R), wi, wr;
	unsigned di = I.downs, dr = R.downs, ui = I.ups, ur = R.ups;
	const struct ike_child *a, *b;

	assert_int_equal(ike_child_rekey(I.ctx, "t", now), 0);
	assert_int_equal(ike_child_rekey(R.ctx, "t", now), 0);
	if (answered_first) {
		struct pkt ri = pop(&I), rr = pop(&R), ai;

		deliver(&R, &ri, now);		/* R answers I's: R.q = [rr's copy, answer] */
		assert_int_equal(R.n, 1);
		ai = pop(&R);
		deliver(&I, &ai, now);		/* I's made, its old one not yet deleted */
		deliver(&I, &rr, now);		/* R's crosses it: I resolves here */
	}
	pump(now);
	/* Both made on both sides, the redundant one deleted by its initiator. */
	assert_int_equal(I.ups, ui + 2);
	assert_int_equal(R.ups, ur + 2);
	assert_int_equal(I.downs, di + 1);
	assert_int_equal(R.downs, dr + 1);
	assert_int_equal(I.down_in, R.down_out);
	assert_int_equal(rej(&I, IKE_REJ_PEER_ERROR) + rej(&R, IKE_REJ_PEER_ERROR), 0);
	wi = status(&I);
	wr = status(&R);
	assert_int_equal(wi.st.rekey_collisions, oi.st.rekey_collisions + 1);
	assert_int_equal(wr.st.rekey_collisions, orr.st.rekey_collisions + 1);
	/* One won, one lost: they agree on the lowest nonce. */
	assert_int_equal(wi.st.rekey_won - oi.st.rekey_won, wr.st.rekey_lost - orr.st.rekey_lost);
	assert_int_equal(wi.st.rekey_lost - oi.st.rekey_lost, wr.st.rekey_won - orr.st.rekey_won);
	assert_int_equal(ike_child_rekey(I.ctx, "t", now), -EBUSY);
	ike_tick(I.ctx, now + 2000);
	ike_tick(R.ctx, now + 2000);
	pump(now + 2000);
	assert_int_equal(I.downs, di + 2);
	assert_int_equal(R.downs, dr + 2);
	assert_int_equal(I.down_in, oi.st.child_spi_in);	/* the old one, last */
	assert_int_equal(R.down_in, orr.st.child_spi_in);
	wi = status(&I);
	wr = status(&R);
	assert_established();
	assert_int_equal(wi.st.child_spi_out, wr.st.child_spi_in);
	assert_true(wi.st.child_spi_in != oi.st.child_spi_in);
	a = up_by_spi(&I, wi.st.child_spi_in);
	b = up_by_spi(&R, wr.st.child_spi_in);
	assert_int_equal(a->spi_out, b->spi_in);
	assert_memory_equal(a->enc_out, b->enc_in, a->enc_key_len);
	assert_memory_equal(a->enc_in, b->enc_out, a->enc_key_len);
	assert_int_equal(I.n + R.n, 0);
	I.child = *a;			/* the one in use, for rekey_once */
	R.child = *b;
}

/*
 * Both ends rekey the CHILD_SA at once (RFC 7296 2.8.1): both rekeys are
 * made, the lowest nonce's is deleted by its initiator, one CHILD_SA is
 * left.  Twenty rounds in each order: each side wins some (the nonces
 * decide, not the role), and a lone rekey works after.
 */
static void
test_rekey_simultaneous(void **state)
{
	struct ike_conn_cfg ci = cfg_i(), cr = mirror(&ci);
	struct walk wi;

	(void)state;
	start(&ci, &cr);
	bring_up(0);
	for (unsigned k = 0; k < 40; k++)
		cross_round(10000 * (k + 1), k % 2 == 1);
	wi = status(&I);
	assert_int_equal(wi.st.rekey_collisions, 40);
	assert_int_equal(wi.st.rekey_won + wi.st.rekey_lost, 40);
	assert_true(wi.st.rekey_won > 0 && wi.st.rekey_lost > 0);
	assert_int_equal(status(&R).st.rekey_won, wi.st.rekey_lost);
	rekey_once(&I, 500000, 2000);
	assert_int_equal(status(&I).st.rekey_collisions, 40);
	assert_int_equal(rej_total(&I) + rej_total(&R), 0);
	stop();
}

/* ---- several CHILD_SAs per IKE SA ---------------------------------------- */

/* A child connection "name" of "t": selectors lts <-> rts, ESP proposal esp. */
static struct ike_conn_cfg
cfg_kid(const char *name, const char *lts, uint8_t llen, const char *rts, uint8_t rlen,
	struct ike_prop_cfg esp)
{
	struct ike_conn_cfg c = cfg_i();

	snprintf(c.name, sizeof(c.name), "%s", name);
	snprintf(c.ike_sa, sizeof(c.ike_sa), "t");
	c.ts_local = pfx4(lts, llen);
	c.ts_remote = pfx4(rts, rlen);
	c.esp[0] = esp;
	return c;
}

static void
add_conn(struct side *s, const struct ike_conn_cfg *c)
{
	char err[128];

	assert_int_equal(ike_conn_add(s->ctx, c, err, sizeof(err)), 0);
}

/* Side s's CHILD_SA of connection name in its (only) IKE SA, or NULL. */
static const struct ike_child_status *
kid_of(const struct walk *w, const char *name)
{
	for (unsigned i = 0; i < w->st.n_children; i++)
		if (strcmp(w->st.children[i].conn, name) == 0)
			return &w->st.children[i];
	return NULL;
}

#define ESP_PFS(bits, g)	{ .encr = { { IKE_ENCR_AES_GCM_16, bits } }, .n_encr = 1, \
				  .dh = { g }, .n_dh = 1 }

/*
 * Two CHILD_SAs on one IKE SA: "t"'s in IKE_AUTH, then child "k" (another
 * pair of prefixes, AES-256-GCM with PFS over ECP-256) by CREATE_CHILD_SA,
 * asked for before the IKE SA was up.  Each side installs both with
 * mirrored SPIs; the responder picked "k" by its selectors.
 */
static void
test_children_up(void **state)
{
	struct ike_conn_cfg ci = cfg_i(), cr = mirror(&ci);
	struct ike_conn_cfg ki = cfg_kid("k", "10.11.0.0", 24, "10.12.0.0", 24,
					 (struct ike_prop_cfg)ESP_PFS(256, IKE_DH_ECP256));
	struct ike_conn_cfg kr = mirror(&ki);
	const struct ike_child_status *a, *b;
	struct walk wi, wr;

	(void)state;
	start(&ci, &cr);
	add_conn(&I, &ki);
	add_conn(&R, &kr);
	assert_int_equal(ike_initiate(I.ctx, "k", 0), 0);	/* starts "t" first */
	pump(0);
	assert_int_equal(I.ups, 2);
	assert_int_equal(R.ups, 2);
	assert_string_equal(R.conn_up, "k");
	assert_int_equal(R.child.dh, IKE_DH_ECP256);
	assert_int_equal(I.child.encr_bits, 256);
	assert_memory_equal(I.child.enc_out, R.child.enc_in, I.child.enc_key_len);
	assert_memory_equal(&I.child.ts_local, &R.child.ts_remote, sizeof(I.child.ts_local));
	wi = status(&I);
	wr = status(&R);
	assert_int_equal(wi.n, 1);
	assert_int_equal(wi.st.n_children, 2);
	assert_int_equal(wr.st.n_children, 2);
	a = kid_of(&wi, "k");
	b = kid_of(&wr, "k");
	assert_non_null(a);
	assert_non_null(b);
	assert_true(a->up && b->up);
	assert_int_equal(a->spi_in, b->spi_out);
	assert_int_equal(a->spi_out, b->spi_in);
	assert_int_equal(a->dh, IKE_DH_ECP256);
	assert_int_not_equal(a->spi_in, wi.st.child_spi_in);	/* "t"'s is another */
	assert_int_equal(kid_of(&wi, "t")->spi_in, wr.st.child_spi_out);
	assert_int_equal(ike_initiate(I.ctx, "k", 10), -EALREADY);
	assert_int_equal(rej_total(&I) + rej_total(&R), 0);
	stop();
}

/*
 * The responder picks the child connection by the proposed selectors (two
 * children, the second proposed), and narrows a wider proposal to its own
 * /24; the initiator takes the narrowed answer (within its /16).  One that
 * fits none is refused with TS_UNACCEPTABLE and tried again later.
 */
static void
test_children_pick_and_narrow(void **state)
{
	struct ike_conn_cfg ci = cfg_i(), cr = mirror(&ci);
	struct ike_prop_cfg gcm = ESP_PROPS[0];
	struct ike_conn_cfg k1 = cfg_kid("k1", "10.21.0.0", 24, "10.22.0.0", 24, gcm);
	struct ike_conn_cfg k2 = cfg_kid("k2", "10.31.0.0", 24, "10.32.0.0", 24, gcm);
	struct ike_conn_cfg wide = cfg_kid("k2", "10.31.0.0", 16, "10.32.0.0", 16, gcm);
	struct ike_conn_cfg none = cfg_kid("k3", "10.41.0.0", 24, "10.42.0.0", 24, gcm);
	struct ike_conn_cfg r1 = mirror(&k1), r2 = mirror(&k2);
	const struct ike_child_status *a;
	struct walk wi;

	(void)state;
	start(&ci, &cr);
	add_conn(&R, &r1);
	add_conn(&R, &r2);
	add_conn(&I, &wide);
	add_conn(&I, &none);
	bring_up(0);
	assert_int_equal(ike_initiate(I.ctx, "k2", 10), 0);
	pump(10);
	assert_string_equal(R.conn_up, "k2");
	assert_string_equal(I.conn_up, "k2");
	assert_memory_equal(&I.child.ts_local, &k2.ts_local, sizeof(k2.ts_local));	/* /24 */
	assert_memory_equal(&I.child.ts_remote, &k2.ts_remote, sizeof(k2.ts_remote));
	assert_int_equal(ike_initiate(I.ctx, "k3", 20), 0);
	pump(20);
	assert_int_equal(rej(&R, IKE_REJ_TS_UNACCEPTABLE), 1);
	assert_int_equal(I.ups, 2);
	wi = status(&I);
	a = kid_of(&wi, "k3");
	assert_non_null(a);		/* waiting for its retry */
	assert_false(a->up);
	ike_tick(I.ctx, 20000);		/* 10 to 15 s later: asked again, refused again */
	pump(20000);
	assert_int_equal(rej(&R, IKE_REJ_TS_UNACCEPTABLE), 2);
	assert_int_equal(ike_child_close(I.ctx, "k3", 20001), -ENOENT);	/* not up: stops */
	ike_tick(I.ctx, 40000);
	pump(40000);
	assert_int_equal(rej(&R, IKE_REJ_TS_UNACCEPTABLE), 2);
	assert_int_equal(status(&I).st.state, IKE_ST_ESTABLISHED);
	stop();
}

/*
 * PFS for a new CHILD_SA: the initiator proposes Curve25519 first, the
 * responder takes ECP-256 only: INVALID_KE_PAYLOAD naming 19, the same
 * CREATE_CHILD_SA again with a KE of it, made with g^ir of group 19.
 */
static void
test_child_pfs_invalid_ke(void **state)
{
	struct ike_conn_cfg ci = cfg_i(), cr = mirror(&ci);
	struct ike_prop_cfg two = ESP_PFS(128, IKE_DH_CURVE25519), one;
	struct ike_conn_cfg ki, kr;

	(void)state;
	two.dh[1] = IKE_DH_ECP256;
	two.n_dh = 2;
	one = (struct ike_prop_cfg)ESP_PFS(128, IKE_DH_ECP256);
	ki = cfg_kid("k", "10.11.0.0", 24, "10.12.0.0", 24, two);
	kr = mirror(&ki);
	kr.esp[0] = one;
	start(&ci, &cr);
	add_conn(&I, &ki);
	add_conn(&R, &kr);
	bring_up(0);
	assert_int_equal(ike_initiate(I.ctx, "k", 10), 0);
	pump(10);
	assert_int_equal(rej(&R, IKE_REJ_INVALID_KE), 1);
	assert_int_equal(rej(&I, IKE_REJ_INVALID_KE), 1);
	assert_int_equal(I.ups, 2);
	assert_int_equal(I.child.dh, IKE_DH_ECP256);
	assert_int_equal(R.child.dh, IKE_DH_ECP256);
	assert_memory_equal(I.child.enc_in, R.child.enc_out, I.child.enc_key_len);
	stop();
}

/*
 * One CHILD_SA rekeyed, deleted, and the IKE SA rekeyed under both: the
 * other's SPIs stay each time; a Delete of one leaves the IKE SA and the
 * other; the IKE SA rekey carries both CHILD_SAs over unchanged.
 */
static void
test_children_rekey_delete(void **state)
{
	struct ike_conn_cfg ci = cfg_i(), cr = mirror(&ci);
	struct ike_conn_cfg ki = cfg_kid("k", "10.11.0.0", 24, "10.12.0.0", 24,
					 (struct ike_prop_cfg)ESP_PFS(128, IKE_DH_ECP256));
	struct ike_conn_cfg kr;
	struct ike_child_status t0, k0;
	struct walk wi, wr;

	(void)state;
	ci.rekey_grace_ms = cr.rekey_grace_ms = ki.rekey_grace_ms = 1000;
	kr = mirror(&ki);
	start(&ci, &cr);
	add_conn(&I, &ki);
	add_conn(&R, &kr);
	bring_up(0);
	assert_int_equal(ike_initiate(I.ctx, "k", 0), 0);
	pump(0);
	wi = status(&I);
	t0 = *kid_of(&wi, "t");
	k0 = *kid_of(&wi, "k");
	/* "k" rekeyed by the responder (REKEY_SA names it), with PFS */
	assert_int_equal(ike_child_rekey(R.ctx, "k", 100), 0);
	pump(100);
	ike_tick(R.ctx, 2000);		/* the old one's Delete after the grace */
	pump(2000);
	wi = status(&I);
	wr = status(&R);
	assert_int_equal(kid_of(&wi, "t")->spi_in, t0.spi_in);
	assert_int_equal(kid_of(&wi, "t")->spi_out, t0.spi_out);
	assert_int_not_equal(kid_of(&wi, "k")->spi_in, k0.spi_in);
	assert_int_equal(kid_of(&wi, "k")->spi_in, kid_of(&wr, "k")->spi_out);
	assert_int_equal(kid_of(&wi, "k")->rekeys, 1);
	assert_int_equal(kid_of(&wi, "t")->rekeys, 0);
	assert_int_equal(kid_of(&wi, "k")->dh, IKE_DH_ECP256);
	assert_string_equal(I.conn_down, "k");
	/* "t" rekeyed: "k" stays */
	k0 = *kid_of(&wi, "k");
	assert_int_equal(ike_child_rekey(I.ctx, "t", 3000), 0);
	pump(3000);
	ike_tick(I.ctx, 5000);
	pump(5000);
	wi = status(&I);
	assert_int_not_equal(kid_of(&wi, "t")->spi_in, t0.spi_in);
	assert_int_equal(kid_of(&wi, "k")->spi_in, k0.spi_in);
	/* the IKE SA rekeyed: both carried over as they are */
	t0 = *kid_of(&wi, "t");
	assert_int_equal(ike_sa_rekey(I.ctx, "t", 6000), 0);
	pump(6000);
	wi = status(&I);
	assert_int_equal(wi.n, 1);
	assert_int_equal(wi.st.ike_rekeys, 1);
	assert_int_equal(wi.st.n_children, 2);
	assert_int_equal(kid_of(&wi, "t")->spi_in, t0.spi_in);
	assert_int_equal(kid_of(&wi, "k")->spi_in, k0.spi_in);
	/* "k" deleted by the responder: the IKE SA and "t" stay */
	assert_int_equal(ike_child_close(R.ctx, "k", 7000), 0);
	pump(7000);
	wi = status(&I);
	wr = status(&R);
	assert_string_equal(I.conn_down, "k");
	assert_int_equal(wi.st.state, IKE_ST_ESTABLISHED);
	assert_int_equal(wi.st.n_children, 1);
	assert_int_equal(wr.st.n_children, 1);
	assert_int_equal(kid_of(&wi, "t")->spi_in, t0.spi_in);
	assert_null(kid_of(&wi, "k"));
	assert_int_equal(I.ike_downs + R.ike_downs, 0);
	/* made again on the same IKE SA; then all goes with it */
	assert_int_equal(ike_initiate(I.ctx, "k", 8000), 0);
	pump(8000);
	assert_int_equal(status(&R).st.n_children, 2);
	assert_int_equal(ike_terminate(I.ctx, "t", 9000), 0);
	pump(9000);
	assert_int_equal(I.ups, I.downs);
	assert_int_equal(R.ups, R.downs);
	assert_int_equal(rej_total(&I) + rej_total(&R), 0);
	stop();
}

/*
 * A child connection removed (a reload) while its CREATE_CHILD_SA, then its
 * rekey, is out: the CHILD_SAs the answers make at the peer, and the one it
 * had, are deleted there too; nothing is left of it on either side.
 */
static void
test_child_removed_midway(void **state)
{
	struct ike_conn_cfg ci = cfg_i(), cr = mirror(&ci);
	struct ike_conn_cfg ki = cfg_kid("k", "10.11.0.0", 24, "10.12.0.0", 24,
					 (struct ike_prop_cfg)ESP_PFS(128, IKE_DH_ECP256));
	struct ike_conn_cfg kr = mirror(&ki);

	(void)state;
	start(&ci, &cr);
	add_conn(&I, &ki);
	add_conn(&R, &kr);
	bring_up(0);
	assert_int_equal(ike_initiate(I.ctx, "k", 10), 0);	/* out, not answered */
	assert_int_equal(ike_conn_remove(I.ctx, "k", 10), 0);
	pump(10);
	assert_int_equal(R.ups, 2);			/* R made it ... */
	assert_int_equal(R.downs, 1);			/* ... and deleted it at our Delete */
	assert_string_equal(R.conn_down, "k");
	assert_int_equal(I.ups, 1);
	assert_int_equal(status(&R).st.n_children, 1);
	/* again, up this time, and a rekey of it out when it goes */
	add_conn(&I, &ki);
	assert_int_equal(ike_initiate(I.ctx, "k", 20), 0);
	pump(20);
	assert_int_equal(status(&R).st.n_children, 2);
	assert_int_equal(ike_child_rekey(I.ctx, "k", 30), 0);
	assert_int_equal(ike_conn_remove(I.ctx, "k", 30), 0);
	assert_string_equal(I.conn_down, "k");
	pump(30);
	assert_int_equal(status(&R).st.n_children, 1);
	assert_int_equal(R.ups, R.downs + 1);		/* only "t" up at R */
	assert_int_equal(I.ups, I.downs + 1);
	assert_int_equal(status(&I).st.state, IKE_ST_ESTABLISHED);
	assert_int_equal(rej_total(&I) + rej_total(&R), 0);
	stop();
}

/*
 * Lists of subnets: the child proposes two prefixes a side (TSi, TSr of two
 * each); the responder has a narrower second remote one and narrows each:
 * both ends get 2 x 2, the second narrowed to /24; a rekey proposes the
 * narrowed lists again and keeps them.
 */
static void
test_child_ts_lists(void **state)
{
	struct ike_conn_cfg ci = cfg_i(), cr = mirror(&ci);
	struct ike_conn_cfg ki = cfg_kid("k", "10.11.0.0", 24, "10.12.0.0", 24, ESP_PROPS[0]);
	struct ike_conn_cfg kr;
	const struct ike_prefix want = pfx4("10.14.5.0", 24);

	(void)state;
	ki.ts_local_more[0] = pfx4("10.13.0.0", 24);
	ki.ts_remote_more[0] = pfx4("10.14.0.0", 16);
	ki.n_ts_local_more = ki.n_ts_remote_more = 1;
	kr = mirror(&ki);
	kr.ts_local_more[0] = want;		/* narrower than the proposed /16 */
	kr.ts_remote_more[0] = ki.ts_local_more[0];
	start(&ci, &cr);
	add_conn(&I, &ki);
	add_conn(&R, &kr);
	bring_up(0);
	assert_int_equal(ike_initiate(I.ctx, "k", 10), 0);
	pump(10);
	assert_string_equal(R.conn_up, "k");
	for (unsigned round = 0; round < 2; round++) {
		assert_int_equal(I.child.n_ts_local_more, 1);
		assert_int_equal(I.child.n_ts_remote_more, 1);
		assert_memory_equal(&I.child.ts_local_more[0], &ki.ts_local_more[0], sizeof(want));
		assert_memory_equal(&I.child.ts_remote_more[0], &want, sizeof(want));
		assert_int_equal(R.child.n_ts_local_more, 1);
		assert_memory_equal(&R.child.ts_local_more[0], &want, sizeof(want));
		assert_memory_equal(&R.child.ts_remote_more[0], &ki.ts_local_more[0],
				    sizeof(want));
		assert_int_equal(ike_child_rekey(I.ctx, "k", 1000 + 10000 * round), 0);
		pump(1000 + 10000 * round);
		ike_tick(I.ctx, 6000 + 10000 * round);	/* the old one's Delete */
		pump(6000 + 10000 * round);
	}
	assert_int_equal(status(&I).st.child_rekeys, 2);
	assert_int_equal(rej_total(&I) + rej_total(&R), 0);
	stop();
}

/* A route-based tunnel's selectors: 0.0.0.0/0 and ::/0 on each side. */
static void
set_wide(struct ike_conn_cfg *c)
{
	c->ts_local = c->ts_remote = (struct ike_prefix){ .family = AF_INET };
	c->ts_local_more[0] = c->ts_remote_more[0] = (struct ike_prefix){ .family = AF_INET6 };
	c->n_ts_local_more = c->n_ts_remote_more = 1;
}

/*
 * Route-based tunnels (dpvpnd's mode = route): both families in one CHILD_SA
 * (TSi and TSr of two selectors, one a family), kept through a rekey; a
 * narrow IPv4 initiator against a wide responder gets its own selectors;
 * the two families mixed other than as 0.0.0.0/0 with ::/0 are refused.
 */
static void
test_child_ts_wide(void **state)
{
	struct ike_conn_cfg ci = cfg_i(), cr = mirror(&ci);
	struct ike_conn_cfg ki = cfg_kid("kw", "10.11.0.0", 24, "10.12.0.0", 24, ESP_PROPS[0]);
	struct ike_conn_cfg kn = cfg_kid("kn", "10.11.0.0", 24, "10.12.0.0", 24, ESP_PROPS[0]);
	struct ike_conn_cfg kr, bad;
	const struct ike_prefix any4 = { .family = AF_INET }, any6 = { .family = AF_INET6 };
	char err[160];

	(void)state;
	set_wide(&ki);
	kr = mirror(&ki);
	start(&ci, &cr);
	add_conn(&I, &ki);
	add_conn(&R, &kr);
	bring_up(0);
	assert_int_equal(ike_initiate(I.ctx, "kw", 10), 0);
	pump(10);
	assert_string_equal(R.conn_up, "kw");
	for (unsigned round = 0; round < 2; round++) {
		const struct ike_child *c[2] = { &I.child, &R.child };

		for (unsigned s = 0; s < 2; s++) {
			assert_memory_equal(&c[s]->ts_local, &any4, sizeof(any4));
			assert_memory_equal(&c[s]->ts_remote, &any4, sizeof(any4));
			assert_int_equal(c[s]->n_ts_local_more, 1);
			assert_int_equal(c[s]->n_ts_remote_more, 1);
			assert_memory_equal(&c[s]->ts_local_more[0], &any6, sizeof(any6));
			assert_memory_equal(&c[s]->ts_remote_more[0], &any6, sizeof(any6));
		}
		assert_int_equal(ike_child_rekey(I.ctx, "kw", 1000 + 10000 * round), 0);
		pump(1000 + 10000 * round);
		ike_tick(I.ctx, 6000 + 10000 * round);	/* the old one's Delete */
		pump(6000 + 10000 * round);
	}
	assert_int_equal(status(&I).st.child_rekeys, 2);
	/* a narrow initiator, the wide responder: narrowed to what it proposed */
	kr = mirror(&kn);
	set_wide(&kr);
	snprintf(kr.name, sizeof(kr.name), "krn");
	add_conn(&I, &kn);
	add_conn(&R, &kr);
	assert_int_equal(ike_initiate(I.ctx, "kn", 30000), 0);
	pump(30000);
	assert_string_equal(R.conn_up, "krn");
	assert_memory_equal(&R.child.ts_remote, &kn.ts_local, sizeof(kn.ts_local));
	assert_memory_equal(&R.child.ts_local, &kn.ts_remote, sizeof(kn.ts_remote));
	assert_int_equal(R.child.n_ts_local_more + R.child.n_ts_remote_more, 0);
	assert_int_equal(rej_total(&I) + rej_total(&R), 0);
	/* IPv6 after IPv4 only as the two wildcards */
	bad = cfg_kid("kb", "10.11.0.0", 24, "10.12.0.0", 24, ESP_PROPS[0]);
	bad.ts_local_more[0] = any6;
	bad.n_ts_local_more = 1;
	assert_int_not_equal(ike_conn_add(I.ctx, &bad, err, sizeof(err)), 0);
	assert_non_null(strstr(err, "ts_local_more"));
	stop();
}

/* At most IKE_CHILDREN_MAX CHILD_SAs per IKE SA: the next is NO_ADDITIONAL_SAS. */
static void
test_children_max(void **state)
{
	struct ike_conn_cfg ci = cfg_i(), cr = mirror(&ci);
	char name[8], err[128];

	(void)state;
	start(&ci, &cr);
	for (unsigned n = 1; n <= IKE_CHILDREN_MAX; n++) {
		char net[32];
		struct ike_conn_cfg k;

		snprintf(name, sizeof(name), "k%u", n);
		snprintf(net, sizeof(net), "10.%u.0.0", 100 + n);
		k = cfg_kid(name, net, 16, "10.99.0.0", 24, ESP_PROPS[0]);
		k.ts_remote.plen = 24;
		k.ts_remote.addr[2] = (uint8_t)n;
		/* the initiator has them all; the responder can hold 15 beside "t" */
		assert_int_equal(ike_conn_add(I.ctx, &k, err, sizeof(err)),
				 n < IKE_CHILDREN_MAX ? 0 : -EINVAL);
		if (n < IKE_CHILDREN_MAX) {
			struct ike_conn_cfg m = mirror(&k);

			add_conn(&R, &m);
		}
	}
	bring_up(0);
	for (unsigned n = 1; n < IKE_CHILDREN_MAX; n++) {
		snprintf(name, sizeof(name), "k%u", n);
		assert_int_equal(ike_initiate(I.ctx, name, 10), 0);
	}
	pump(10);
	assert_int_equal(status(&I).st.n_children, IKE_CHILDREN_MAX);
	assert_int_equal(status(&R).st.n_children, IKE_CHILDREN_MAX);
	assert_int_equal(I.ups, IKE_CHILDREN_MAX);
	stop();
}

/*
 * A rekey crossing a Delete is refused (the SA is going), whichever side
 * rekeys: the CHILD_SA's, then the IKE SA's.  Nothing is left half-made:
 * every child_up has its child_down, no SA is left, nothing leaks (ASan).
 */
static void
test_rekey_crossing_delete(void **state)
{
	struct ike_conn_cfg ci = cfg_i(), cr = mirror(&ci);

	(void)state;
	for (unsigned k = 0; k < 2; k++) {
		struct side *rk = k ? &R : &I, *del = k ? &I : &R;

		start(&ci, &cr);
		bring_up(0);
		assert_int_equal(ike_child_rekey(rk->ctx, "t", 100), 0);
		assert_int_equal(ike_child_close(del->ctx, "t", 100), 0);
		pump(100);
		assert_int_equal(rej(rk, IKE_REJ_PEER_ERROR), 1);	/* TEMPORARY_FAILURE */
		assert_int_equal(I.ups, I.downs);
		assert_int_equal(R.ups, R.downs);
		assert_false(status(&I).st.child_up || status(&R).st.child_up);
		assert_int_equal(status(&I).st.rekey_collisions, 0);
		ike_tick(I.ctx, 20000);
		ike_tick(R.ctx, 20000);
		pump(20000);
		assert_int_equal(I.ups, I.downs);
		assert_int_equal(ike_sa_rekey(rk->ctx, "t", 30000), 0);
		assert_int_equal(ike_terminate(del->ctx, "t", 30000), 0);
		pump(30000);
		assert_int_equal(status(&I).n + status(&R).n, 0);
		assert_int_equal(I.ike_downs + R.ike_downs, 2);
		assert_int_equal(I.ups + R.ups, I.downs + R.downs);
		stop();
	}
}

/*
 * A refused lifetime rekey (the responder's IKE SA rekey crossed it: both
 * refused) is tried again 10 to 15 s later, at a moment drawn each time:
 * five rounds, the retry found to 100 ms, not all at the same moment.
 */
static void
test_rekey_lifetime_retry(void **state)
{
	struct ike_conn_cfg ci = cfg_i(), cr;
	uint64_t up = 0, delay[5];
	bool differ = false;

	(void)state;
	ci.child_rekey_ms = 60000;
	ci.rekey_grace_ms = 1000;
	cr = mirror(&ci);
	start(&ci, &cr);
	bring_up(0);
	for (unsigned k = 0; k < 5; k++) {
		uint64_t due = up + 60000, t;
		uint32_t spi_in = I.child.spi_in;

		ike_tick(I.ctx, due);
		assert_int_equal(I.n, 1);
		assert_int_equal(ike_sa_rekey(R.ctx, "t", due), 0);
		pump(due);
		assert_int_equal(rej(&I, IKE_REJ_PEER_ERROR), k + 1);
		assert_int_equal(rej(&R, IKE_REJ_PEER_ERROR), k + 1);
		assert_int_equal(I.child.spi_in, spi_in);
		for (t = due + 9900; I.n == 0; t += 100) {
			assert_true(t <= due + 15000);
			ike_tick(I.ctx, t);
		}
		t -= 100;
		assert_true(t >= due + 10000);
		delay[k] = t - due;
		differ |= delay[k] != delay[0];
		pump(t);
		assert_int_equal(I.ups, 2 + k);
		assert_int_not_equal(I.child.spi_in, spi_in);
		assert_pair();
		ike_tick(I.ctx, t + 1000);
		pump(t + 1000);
		assert_int_equal(I.downs + R.downs, 2 * (k + 1));
		up = t;
	}
	assert_true(differ);
	stop();
}

/* ---- IKE SA rekey (2.18) ------------------------------------------------- */

/* One IKE SA on each side, the same one, established, a's the initiator, child up. */
static void
assert_ike_pair(const struct side *a)
{
	struct walk wi = status(&I), wr = status(&R);

	assert_int_equal(wi.n, 1);
	assert_int_equal(wr.n, 1);
	assert_int_equal(wi.st.state, IKE_ST_ESTABLISHED);
	assert_int_equal(wr.st.state, IKE_ST_ESTABLISHED);
	assert_true(wi.st.initiator == (a == &I) && wr.st.initiator == (a == &R));
	assert_memory_equal(wi.st.spi_i, wr.st.spi_i, 8);
	assert_memory_equal(wi.st.spi_r, wr.st.spi_r, 8);
	assert_true(wi.st.child_up && wr.st.child_up);
	assert_int_equal(wi.st.child_spi_in, wr.st.child_spi_out);
	assert_int_equal(wi.st.ike_rekeys, wr.st.ike_rekeys);
}

/*
 * An IKE SA rekey by a at now: new SPIs on both sides, the old SA gone from
 * both, the CHILD_SA the same with no callback, message IDs from 0.
 */
static void
ike_rekey_once(struct side *a, uint64_t now)
{
	struct side *b = a == &I ? &R : &I;
	struct ike_sa_status oa = status(a).st;
	unsigned ups = I.ups + R.ups, downs = I.downs + R.downs;
	unsigned ike_downs = I.ike_downs + R.ike_downs;
	struct ike_sa_status na, nb;

	assert_int_equal(ike_sa_rekey(a->ctx, "t", now), 0);
	assert_int_equal(ike_sa_rekey(a->ctx, "t", now), -EBUSY);
	assert_int_equal(ike_child_rekey(a->ctx, "t", now), -EBUSY);
	pump(now);
	assert_ike_pair(a);
	na = status(a).st;
	nb = status(b).st;
	assert_memory_not_equal(na.spi_i, oa.spi_i, 8);
	assert_memory_not_equal(na.spi_r, oa.spi_r, 8);
	assert_memory_not_equal(na.spi_i, oa.spi_r, 8);
	assert_int_equal(na.ike_rekeys, oa.ike_rekeys + 1);
	assert_int_equal(na.child_spi_in, oa.child_spi_in);
	assert_int_equal(na.child_spi_out, oa.child_spi_out);
	assert_int_equal(na.child_rekeys, oa.child_rekeys);
	assert_true(na.next_req_id == 0 && na.peer_next_id == 0);
	assert_true(nb.next_req_id == 0 && nb.peer_next_id == 0);
	assert_int_equal(I.ups + R.ups, ups);
	assert_int_equal(I.downs + R.downs, downs);
	assert_int_equal(I.ike_downs + R.ike_downs, ike_downs);
}

/*
 * From each side: the old SA's SPIs are unknown afterwards (a replayed
 * liveness check of the old SA is dropped), and liveness checks, a CHILD_SA
 * rekey and the Delete work over the new one.
 */
static void
test_ike_rekey(void **state)
{
	(void)state;
	/* GCM, then CBC with HMAC-SHA2-384 / ECP-384 and HMAC-SHA2-256 / MODP-2048 */
	for (unsigned k = 0; k < 6; k++) {
		struct ike_conn_cfg ci = cfg_i(), cr;
		unsigned who = k % 2;
		struct side *a = who ? &R : &I, *b = who ? &I : &R;
		struct pkt old_dpd;

		ci.ike[0] = IKE_PROPS[k < 2 ? 0 : k < 4 ? 5 : 4];
		ci.dpd_ms = 10000;
		cr = mirror(&ci);
		start(&ci, &cr);
		bring_up(0);
		ike_tick(I.ctx, 10000);
		assert_int_equal(I.n, 1);
		old_dpd = I.q[0];
		pump(10000);
		ike_rekey_once(a, 15000);
		/* for the SA the rekey replaced: late, not refused ([ops] 27.4) */
		assert_int_equal(deliver(&R, &old_dpd, 15001), 0);
		assert_int_equal(rej(&R, IKE_REJ_BAD_SPI), 0);
		assert_int_equal(ike_get_stats(R.ctx)->after_end, 1);
		assert_int_equal(R.n, 0);
		ike_tick(I.ctx, 25000);		/* a liveness check over the new SA */
		assert_int_equal(I.n, 1);
		pump(25000);
		assert_ike_pair(a);
		assert_int_equal(status(&I).st.next_req_id, 1);
		assert_int_equal(status(&R).st.peer_next_id, 1);
		rekey_once(b, 26000, 2000);
		assert_ike_pair(a);
		assert_int_equal(status(&I).st.child_rekeys, 1);
		assert_int_equal(status(&R).st.ike_rekeys, 1);
		assert_int_equal(rej_total(&I) + rej_total(&R), 0);
		assert_int_equal(ike_terminate(b->ctx, "t", 30000), 0);
		pump(30000);
		assert_int_equal(status(&I).n + status(&R).n, 0);
		assert_int_equal(I.ike_downs + R.ike_downs, 2);
		assert_string_equal(b->why, "deleted");
		assert_int_equal(I.downs + R.downs, 4);
		assert_int_equal(I.ups + R.ups, 4);
		stop();
	}
}

/* The rekey's response is lost: the retransmission gets the cached one, one new SA. */
static void
test_ike_rekey_lost_response(void **state)
{
	struct ike_conn_cfg ci = cfg_i(), cr = mirror(&ci);
	struct ike_sa_status o;
	struct pkt p;

	(void)state;
	start(&ci, &cr);
	bring_up(0);
	o = status(&I).st;
	assert_int_equal(ike_sa_rekey(I.ctx, "t", 100), 0);
	p = pop(&I);
	assert_int_equal(deliver(&R, &p, 100), 0);
	assert_int_equal(status(&R).n, 2);	/* the new one, and the old one, rekeyed */
	(void)pop(&R);
	ike_tick(I.ctx, 599);
	assert_int_equal(I.n, 0);
	ike_tick(I.ctx, 600);
	assert_int_equal(I.n, 1);
	pump(600);
	assert_ike_pair(&I);
	assert_memory_not_equal(status(&I).st.spi_i, o.spi_i, 8);
	assert_int_equal(status(&I).st.ike_rekeys, 1);
	assert_int_equal(ike_get_stats(R.ctx)->resent_responses, 1);
	assert_int_equal(ike_get_stats(I.ctx)->retransmits, 1);
	assert_int_equal(I.ups + R.ups + I.downs + R.downs, 2);
	assert_int_equal(rej_total(&I) + rej_total(&R), 0);
	stop();
	assert_int_equal(I.ike_downs + R.ike_downs, 2);
}

/* ike_rekey_ms: the IKE SA's initiator rekeys it when it is that old, and again. */
static void
test_ike_rekey_lifetime(void **state)
{
	struct ike_conn_cfg ci = cfg_i(), cr;

	(void)state;
	ci.ike_rekey_ms = 60000;
	cr = mirror(&ci);
	start(&ci, &cr);
	bring_up(0);
	for (unsigned k = 1; k <= 3; k++) {
		uint64_t due = 60000 * k;

		ike_tick(I.ctx, due - 1);
		ike_tick(R.ctx, due - 1);
		assert_int_equal(I.n + R.n, 0);
		ike_tick(I.ctx, due);
		ike_tick(R.ctx, due);
		assert_int_equal(I.n, 1);
		assert_int_equal(R.n, 0);
		pump(due);
		assert_ike_pair(&I);
		assert_int_equal(status(&R).st.ike_rekeys, k);
	}
	assert_int_equal(I.ups + R.ups + I.downs + R.downs, 2);
	assert_int_equal(rej_total(&I) + rej_total(&R), 0);
	stop();
}

/*
 * One round of crossing IKE SA rekeys (2.8.2) at now: both made, the
 * lowest nonce's deleted by its initiator, the old one by the winner's:
 * one IKE SA left, the same on both, the winner's exchange's initiator its
 * initiator, the CHILD_SA on it with no callback; won and lost agree.
 */
static void
ike_cross_round(uint64_t now)
{
	struct ike_sa_status oi = status(&I).st, orr = status(&R).st, ni, nr;
	unsigned ups = I.ups + R.ups, downs = I.downs + R.downs;
	uint64_t refused = rej(&I, IKE_REJ_PEER_ERROR) + rej(&R, IKE_REJ_PEER_ERROR);

	assert_int_equal(ike_sa_rekey(I.ctx, "t", now), 0);
	assert_int_equal(ike_sa_rekey(R.ctx, "t", now), 0);
	pump(now);
	ni = status(&I).st;
	nr = status(&R).st;
	assert_ike_pair(ni.initiator ? &I : &R);
	assert_memory_not_equal(ni.spi_i, oi.spi_i, 8);
	assert_memory_not_equal(ni.spi_r, oi.spi_r, 8);
	assert_int_equal(ni.ike_rekeys, oi.ike_rekeys + 1);
	assert_int_equal(ni.child_spi_in, oi.child_spi_in);
	assert_int_equal(nr.child_spi_in, orr.child_spi_in);
	assert_true(ni.next_req_id == 0 && nr.next_req_id == 0);
	assert_int_equal(I.ups + R.ups, ups);
	assert_int_equal(I.downs + R.downs, downs);
	assert_int_equal(I.ike_downs + R.ike_downs, 0);
	assert_int_equal(ni.rekey_collisions, oi.rekey_collisions + 1);
	assert_int_equal(nr.rekey_collisions, orr.rekey_collisions + 1);
	assert_int_equal(ni.rekey_won - oi.rekey_won, nr.rekey_lost - orr.rekey_lost);
	assert_int_equal(ni.rekey_lost - oi.rekey_lost, nr.rekey_won - orr.rekey_won);
	/* The winner's exchange made the survivor: its initiator is the winner. */
	assert_true(ni.initiator == (ni.rekey_won > oi.rekey_won));
	assert_int_equal(rej(&I, IKE_REJ_PEER_ERROR) + rej(&R, IKE_REJ_PEER_ERROR), refused);
}

/*
 * Crossing IKE SA rekeys are made and resolved (2.8.2): twenty rounds, each
 * side wins some, nothing leaks; an IKE SA rekey crossing a CHILD_SA rekey
 * is still refused (TEMPORARY_FAILURE), either way, and nothing changes.
 */
static void
test_ike_rekey_crossing(void **state)
{
	struct ike_conn_cfg ci = cfg_i(), cr = mirror(&ci);
	struct ike_sa_status st;

	(void)state;
	start(&ci, &cr);
	bring_up(0);
	for (unsigned k = 0; k < 2; k++) {
		struct side *ike = k ? &R : &I, *child = k ? &I : &R;

		assert_int_equal(ike_sa_rekey(ike->ctx, "t", 200), 0);
		assert_int_equal(ike_child_rekey(child->ctx, "t", 200), 0);
		assert_int_equal(ike_sa_rekey(child->ctx, "t", 200), -EBUSY);
		pump(200);
		assert_int_equal(rej(&I, IKE_REJ_PEER_ERROR), 1 + k);
		assert_int_equal(rej(&R, IKE_REJ_PEER_ERROR), 1 + k);
		assert_established();
		assert_int_equal(status(&I).st.ike_rekeys + status(&R).st.child_rekeys, 0);
	}
	for (unsigned k = 0; k < 20; k++)
		ike_cross_round(1000 * (k + 1));
	st = status(&I).st;
	assert_int_equal(st.ike_rekeys, 20);
	assert_int_equal(st.rekey_won + st.rekey_lost, 20);
	assert_true(st.rekey_won > 0 && st.rekey_lost > 0);
	assert_int_equal(I.ups + R.ups, 2);
	ike_rekey_once(&R, 30000);
	rekey_once(&I, 40000, 2000);
	assert_ike_pair(&R);
	stop();
	assert_int_equal(I.ike_downs + R.ike_downs, 2);
}

/* 50 IKE SA rekeys in a row from both sides, CHILD_SA rekeys between; ASan checks leaks. */
static void
test_ike_rekey_50(void **state)
{
	struct ike_conn_cfg ci = cfg_i(), cr;
	struct side *last = &I;
	uint64_t now = 0;

	(void)state;
	ci.rekey_grace_ms = 500;
	ci.force_encap = true;
	cr = mirror(&ci);
	start(&ci, &cr);
	bring_up(now);
	for (unsigned k = 0; k < 50; k++) {
		now += 1000;
		last = k % 3 ? &I : &R;
		ike_rekey_once(last, now);
		if (k % 10 == 9) {
			now += 1000;
			rekey_once(k % 20 == 9 ? &I : &R, now, 500);
		}
	}
	assert_ike_pair(last);
	assert_int_equal(status(&I).st.ike_rekeys, 50);
	assert_int_equal(status(&R).st.child_rekeys, 5);
	assert_true(status(&I).st.udp_encap && status(&R).st.udp_encap);
	assert_int_equal(I.ups + R.ups, 12);
	assert_int_equal(rej_total(&I) + rej_total(&R), 0);
	assert_int_equal(ike_get_stats(I.ctx)->retransmits, 0);
	stop();
	assert_int_equal(I.ike_downs + R.ike_downs, 2);
	assert_int_equal(I.downs + R.downs, 12);
}

/*
 * A peer made in the test from ike_msg and ike_crypto, which R answers as
 * the initiator: it can put into the SK payload what ike_sa.c never would.
 */
struct tpeer {
	uint8_t spi_i[8], spi_r[8], ni[32], nr[IKE_NONCE_MAX];
	size_t nr_len;
	struct ike_keys k;
	uint8_t init_req[PKT_MAX];
	size_t init_req_len;
};

static void
t_ike_prop(struct ike_proposal *p, const uint8_t *spi)
{
	memset(p, 0, sizeof(*p));
	p->num = 1;
	p->proto = IKE_PROTO_IKE;
	p->spi_len = spi ? 8 : 0;
	if (spi)
		memcpy(p->spi, spi, 8);
	p->tr[0] = (struct ike_transform){ IKE_TR_ENCR, IKE_ENCR_AES_GCM_16, 128 };
	p->tr[1] = (struct ike_transform){ IKE_TR_PRF, IKE_PRF_HMAC_SHA2_256, IKE_KEY_LEN_NONE };
	p->tr[2] = (struct ike_transform){ IKE_TR_DH, IKE_DH_ECP256, IKE_KEY_LEN_NONE };
	p->n_tr = 3;
}

/* Header, then the SK payload around in under SK_ei; the IV is the message ID. */
static size_t
t_seal(const struct tpeer *t, uint8_t exchange, uint32_t id, const struct ike_buf *in,
       uint8_t *out)
{
	struct ike_hdr h = { .exchange = exchange, .flags = IKE_F_INITIATOR, .msg_id = id };
	uint8_t iv[IKE_GCM_IV_LEN] = { [7] = (uint8_t)id };
	struct ike_buf b;
	uint8_t *ct;
	size_t sk;

	memcpy(h.spi_i, t->spi_i, 8);
	memcpy(h.spi_r, t->spi_r, 8);
	ike_buf_init(&b, out, PKT_MAX);
	ike_build_hdr(&b, &h);
	sk = ike_sk_begin(&b, IKE_PL_SK, in->first);
	ike_put_bytes(&b, iv, sizeof(iv));
	ct = ike_reserve(&b, in->len + 1 + IKE_GCM_ICV_LEN);
	ike_pl_end(&b, sk);
	assert_int_equal(ike_finish(&b), 0);
	memcpy(ct, in->p, in->len);
	ct[in->len] = 0;
	assert_int_equal(ike_aead_seal(t->k.sk_ei, t->k.enc_len, iv, out, sk + IKE_GEN_HDR_LEN,
				       ct, in->len + 1, ct), 0);
	return b.len;
}

/* R's answer, decrypted: the type of its first Notify, 0 if none. */
static uint16_t
t_answer(const struct tpeer *t)
{
	struct pkt p = pop(&R);
	uint8_t plain[PKT_MAX];
	struct ike_pl pl[16];
	struct ike_notify nt;
	struct ike_hdr h;
	char err[128];
	unsigned n;
	size_t plen;

	assert_int_equal(ike_hdr_parse(p.data, p.len, &h, err, sizeof(err)), 0);
	assert_int_equal(ike_chain_parse(h.next, p.data + IKE_HDR_LEN, p.len - IKE_HDR_LEN, pl,
					 16, &n, err, sizeof(err)), 0);
	assert_int_equal(pl[n - 1].type, IKE_PL_SK);
	assert_int_equal(ike_aead_open(t->k.sk_er, t->k.enc_len, pl[n - 1].body, p.data,
				       (size_t)(pl[n - 1].body - p.data),
				       pl[n - 1].body + IKE_GCM_IV_LEN,
				       pl[n - 1].len - IKE_GCM_IV_LEN, plain), 0);
	assert_int_equal(ike_sk_unpad(plain, pl[n - 1].len - IKE_GCM_IV_LEN - IKE_GCM_ICV_LEN,
				      &plen), 0);
	assert_int_equal(ike_chain_parse(pl[n - 1].inner_first, plain, plen, pl, 16, &n, err,
					 sizeof(err)), 0);
	for (unsigned i = 0; i < n; i++)
		if (pl[i].type == IKE_PL_NOTIFY &&
		    ike_notify_parse(pl[i].body, pl[i].len, &nt, err, sizeof(err)) == 0)
			return nt.type;
	return 0;
}

static void
t_send(const uint8_t *m, size_t len, int want)
{
	struct ike_addr l = addr4("198.51.100.1"), r = addr4("192.0.2.1");

	assert_int_equal(ike_input(R.ctx, &l, &r, m, len, 0), want);
}

/* IKE_SA_INIT with R: the keys of the new IKE SA into t. */
static void
t_init(struct tpeer *t)
{
	uint8_t pub[IKE_DH_MAX_PUB], gir[IKE_DH_MAX_SECRET];
	size_t publen = sizeof(pub), glen = sizeof(gir);
	struct ike_hdr h = { .exchange = IKE_SA_INIT, .flags = IKE_F_INITIATOR };
	struct ike_proposal prop;
	struct ike_pl pl[16];
	struct ike_dh *dh;
	struct ike_buf b;
	struct ike_ke ke;
	struct pkt p;
	char err[128];
	unsigned n;

	assert_int_equal(ike_random(t->spi_i, 8), 0);
	assert_int_equal(ike_random(t->ni, 32), 0);
	t->spi_i[0] |= 1;		/* not zero */
	assert_int_equal(ike_dh_new(IKE_DH_ECP256, &dh, pub, &publen), 0);
	memcpy(h.spi_i, t->spi_i, 8);
	t_ike_prop(&prop, NULL);
	ike_buf_init(&b, t->init_req, sizeof(t->init_req));
	ike_build_hdr(&b, &h);
	ike_build_sa(&b, &prop, 1);
	ike_build_ke(&b, IKE_DH_ECP256, pub, publen);
	ike_build_nonce(&b, t->ni, sizeof(t->ni));
	assert_int_equal(ike_finish(&b), 0);
	t->init_req_len = b.len;
	t_send(t->init_req, b.len, 0);
	p = pop(&R);
	assert_int_equal(ike_hdr_parse(p.data, p.len, &h, err, sizeof(err)), 0);
	memcpy(t->spi_r, h.spi_r, 8);
	assert_int_equal(ike_chain_parse(h.next, p.data + IKE_HDR_LEN, p.len - IKE_HDR_LEN, pl,
					 16, &n, err, sizeof(err)), 0);
	for (unsigned i = 0; i < n; i++) {
		if (pl[i].type == IKE_PL_KE)
			assert_int_equal(ike_ke_parse(pl[i].body, pl[i].len, &ke, err,
						      sizeof(err)), 0);
		if (pl[i].type == IKE_PL_NONCE) {
			memcpy(t->nr, pl[i].body, pl[i].len);
			t->nr_len = pl[i].len;
		}
	}
	assert_int_equal(ike_dh_derive(dh, ke.data, ke.len, gir, &glen), 0);
	assert_int_equal(ike_derive_sa_keys(IKE_PRF_HMAC_SHA2_256, 16, IKE_INTEG_NONE, t->ni, 32,
					    t->nr, t->nr_len, gir, glen, t->spi_i, t->spi_r, &t->k), 0);
	ike_dh_free(dh);
}

/* IKE_AUTH with R, as cfg_i() would: R's IKE SA and CHILD_SA up. */
static void
t_auth(struct tpeer *t)
{
	static const uint8_t idb[8] = { IKE_ID_IPV4_ADDR, 0, 0, 0, 192, 0, 2, 1 };
	static const uint8_t spi[4] = { 1, 2, 3, 4 };
	uint8_t mac[IKE_PRF_MAX_LEN], auth[IKE_PRF_MAX_LEN], inner[1024], out[PKT_MAX];
	size_t mlen = sizeof(mac), alen = sizeof(auth);
	struct ike_ts tsi = { .type = IKE_TS_IPV4_ADDR_RANGE, .end_port = 65535,
			      .start = { 10, 1 }, .end = { 10, 1, 255, 255 } };
	struct ike_ts tsr = { .type = IKE_TS_IPV4_ADDR_RANGE, .end_port = 65535,
			      .start = { 10, 2 }, .end = { 10, 2, 255, 255 } };
	struct ike_proposal esp = { .num = 1, .proto = IKE_PROTO_ESP, .spi_len = 4, .n_tr = 2 };
	struct ike_iov v[3];
	struct ike_buf in;

	memcpy(esp.spi, spi, 4);
	esp.tr[0] = (struct ike_transform){ IKE_TR_ENCR, IKE_ENCR_AES_GCM_16, 128 };
	esp.tr[1] = (struct ike_transform){ IKE_TR_ESN, IKE_ESN_NO, IKE_KEY_LEN_NONE };
	assert_int_equal(ike_id_mac(IKE_PRF_HMAC_SHA2_256, t->k.sk_pi, t->k.prf_len, idb,
				    sizeof(idb), mac, &mlen), 0);
	v[0] = (struct ike_iov){ t->init_req, t->init_req_len };
	v[1] = (struct ike_iov){ t->nr, t->nr_len };
	v[2] = (struct ike_iov){ mac, mlen };
	assert_int_equal(ike_psk_auth(IKE_PRF_HMAC_SHA2_256, (const uint8_t *)"0123456789abcdef",
				      16, v, 3, auth, &alen), 0);
	ike_buf_init(&in, inner, sizeof(inner));
	ike_build_id(&in, IKE_PL_IDI, &(struct ike_id){ .type = IKE_ID_IPV4_ADDR,
							 .data = idb + 4, .len = 4 });
	ike_build_auth(&in, &(struct ike_auth){ IKE_AUTH_SHARED_KEY_MIC, auth, alen });
	ike_build_sa(&in, &esp, 1);
	ike_build_ts(&in, IKE_PL_TSI, &tsi, 1);
	ike_build_ts(&in, IKE_PL_TSR, &tsr, 1);
	t_send(out, t_seal(t, IKE_AUTH, 1, &in, out), 0);
	assert_int_equal(t_answer(t), 0);
	assert_int_equal(R.ups, 1);
}

/* An IKE SA rekey request with message ID id and the KE payload given. */
static void
t_ike_rekey(const struct tpeer *t, uint32_t id, uint16_t group, const uint8_t *ke,
	    size_t ke_len, int want)
{
	static const uint8_t spi[8] = { 9, 9, 9, 9, 9, 9, 9, 9 };
	uint8_t inner[1024], out[PKT_MAX], nonce[32];
	struct ike_proposal prop;
	struct ike_buf in;

	memset(nonce, 0x5a, sizeof(nonce));
	t_ike_prop(&prop, spi);
	ike_buf_init(&in, inner, sizeof(inner));
	ike_build_sa(&in, &prop, 1);
	ike_build_nonce(&in, nonce, sizeof(nonce));
	ike_build_ke(&in, group, ke, ke_len);
	t_send(out, t_seal(t, IKE_CREATE_CHILD_SA, id, &in, out), want);
}

/*
 * Malformed KE payloads in an IKE SA rekey request (too short, a point off
 * the curve, another group): refused and counted, the IKE SA unchanged;
 * then a good one is taken.
 */
static void
test_ike_rekey_bad_ke(void **state)
{
	struct ike_conn_cfg ci = cfg_i(), cr = mirror(&ci);
	uint8_t bad[64], pub[IKE_DH_MAX_PUB];
	size_t publen = sizeof(pub);
	struct ike_dh *dh;
	struct tpeer t;

	(void)state;
	start(&ci, &cr);
	memset(&t, 0, sizeof(t));
	t_init(&t);
	t_auth(&t);
	memset(bad, 0xff, sizeof(bad));
	t_ike_rekey(&t, 2, IKE_DH_ECP256, bad, 10, 0);
	assert_int_equal(t_answer(&t), IKE_N_INVALID_SYNTAX);
	t_ike_rekey(&t, 3, IKE_DH_ECP256, bad, 64, 0);
	assert_int_equal(t_answer(&t), IKE_N_INVALID_SYNTAX);
	assert_int_equal(rej(&R, IKE_REJ_MALFORMED), 2);
	t_ike_rekey(&t, 4, IKE_DH_CURVE25519, bad, 32, 0);
	assert_int_equal(t_answer(&t), IKE_N_INVALID_KE_PAYLOAD);
	assert_int_equal(rej(&R, IKE_REJ_INVALID_KE), 1);
	assert_int_equal(status(&R).n, 1);
	assert_int_equal(status(&R).st.ike_rekeys, 0);
	assert_int_equal(status(&R).st.peer_next_id, 5);
	assert_int_equal(ike_dh_new(IKE_DH_ECP256, &dh, pub, &publen), 0);
	t_ike_rekey(&t, 5, IKE_DH_ECP256, pub, publen, 0);
	ike_dh_free(dh);
	assert_int_equal(t_answer(&t), 0);
	assert_int_equal(status(&R).n, 2);	/* the new one; the old one awaits its Delete */
	assert_int_equal(R.ups + R.downs + R.ike_downs, 1);
	/* No Delete of the old one comes: it goes after 30 s, with no callback. */
	ike_tick(R.ctx, 29999);
	assert_int_equal(status(&R).n, 2);
	ike_tick(R.ctx, 30000);
	assert_int_equal(status(&R).n, 1);
	assert_int_equal(status(&R).st.ike_rekeys, 1);
	assert_int_equal(R.n + R.downs + R.ike_downs, 0);
	ike_keys_wipe(&t.k);
	stop();
	assert_int_equal(R.ike_downs, 1);
	assert_int_equal(R.downs, 1);
}

/*
 * IKE_SA_INIT requests for MODP-2048 with hostile public values (0, 1, all
 * ones: above p, and 255 bytes): each a counted drop, no SA kept, nothing
 * sent back; never a crash.  Then a good one gets its answer.
 */
static void
test_init_bad_modp_ke(void **state)
{
	struct ike_addr l = addr4("198.51.100.1"), r = addr4("192.0.2.1");
	struct ike_conn_cfg ci = cfg_i(), cr;
	uint8_t msg[1024], y[256], pub[IKE_DH_MAX_PUB], ni[32];
	size_t publen = sizeof(pub);
	struct ike_proposal prop;
	struct ike_dh *dh;

	(void)state;
	ci.ike[0] = (struct ike_prop_cfg)PROP_GCM(128, IKE_PRF_HMAC_SHA2_256, IKE_DH_MODP2048);
	cr = mirror(&ci);
	start(&ci, &cr);
	memset(ni, 0x33, sizeof(ni));
	assert_int_equal(ike_dh_new(IKE_DH_MODP2048, &dh, pub, &publen), 0);
	t_ike_prop(&prop, NULL);
	prop.tr[2].id = IKE_DH_MODP2048;
	for (unsigned k = 0; k < 5; k++) {
		struct ike_hdr h = { .exchange = IKE_SA_INIT, .flags = IKE_F_INITIATOR,
				     .spi_i = { 1, 2, 3, (uint8_t)(k + 1) } };
		struct ike_buf b;

		memset(y, k == 2 ? 0xff : 0, sizeof(y));
		y[255] = k == 1 ? 1 : y[255];
		ike_buf_init(&b, msg, sizeof(msg));
		ike_build_hdr(&b, &h);
		ike_build_sa(&b, &prop, 1);
		ike_build_ke(&b, IKE_DH_MODP2048, k == 4 ? pub : y, k == 3 ? 255 : 256);
		ike_build_nonce(&b, ni, sizeof(ni));
		assert_int_equal(ike_finish(&b), 0);
		(void)ike_input(R.ctx, &l, &r, msg, b.len, 0);
		if (k < 4) {
			assert_int_equal(rej(&R, IKE_REJ_MALFORMED), k + 1);
			assert_int_equal(R.n, 0);
			assert_int_equal(status(&R).n, 0);
		}
	}
	assert_int_equal(R.n, 1);		/* the good one's answer */
	assert_int_equal(status(&R).n, 1);
	ike_dh_free(dh);
	stop();
}

/* A CHILD_SA rekey request (PFS, group g) of the CHILD_SA t_auth made, with the KE given. */
static void
t_child_rekey(const struct tpeer *t, uint32_t id, uint16_t g, uint16_t ke_group,
	      const uint8_t *ke, size_t ke_len)
{
	static const uint8_t old[4] = { 1, 2, 3, 4 }, spi[4] = { 5, 6, 7, 8 };
	struct ike_ts tsi = { .type = IKE_TS_IPV4_ADDR_RANGE, .end_port = 65535,
			      .start = { 10, 1 }, .end = { 10, 1, 255, 255 } };
	struct ike_ts tsr = { .type = IKE_TS_IPV4_ADDR_RANGE, .end_port = 65535,
			      .start = { 10, 2 }, .end = { 10, 2, 255, 255 } };
	struct ike_proposal esp = { .num = 1, .proto = IKE_PROTO_ESP, .spi_len = 4, .n_tr = 3 };
	struct ike_notify nt = { .proto = IKE_PROTO_ESP, .spi_len = 4, .type = IKE_N_REKEY_SA,
				 .spi = old };
	uint8_t inner[1024], out[PKT_MAX], nonce[32];
	struct ike_buf in;

	memset(nonce, 0x6b, sizeof(nonce));
	memcpy(esp.spi, spi, 4);
	esp.tr[0] = (struct ike_transform){ IKE_TR_ENCR, IKE_ENCR_AES_GCM_16, 128 };
	esp.tr[1] = (struct ike_transform){ IKE_TR_DH, g, IKE_KEY_LEN_NONE };
	esp.tr[2] = (struct ike_transform){ IKE_TR_ESN, IKE_ESN_NO, IKE_KEY_LEN_NONE };
	ike_buf_init(&in, inner, sizeof(inner));
	ike_build_notify(&in, &nt);
	ike_build_sa(&in, &esp, 1);
	ike_build_nonce(&in, nonce, sizeof(nonce));
	if (ke != NULL)
		ike_build_ke(&in, ke_group, ke, ke_len);
	ike_build_ts(&in, IKE_PL_TSI, &tsi, 1);
	ike_build_ts(&in, IKE_PL_TSR, &tsr, 1);
	t_send(out, t_seal(t, IKE_CREATE_CHILD_SA, id, &in, out), 0);
}

/*
 * Hostile KE payloads in a PFS CHILD_SA rekey (MODP-2048 configured): none,
 * another group, a wrong size, 0, 1, p - 1 as y: each refused with a
 * counted reason and an error Notify, the CHILD_SA unchanged; then a good
 * one is taken.
 */
static void
test_rekey_pfs_bad_ke(void **state)
{
	struct ike_conn_cfg ci = cfg_i(), cr;
	uint8_t bad[256], pub[IKE_DH_MAX_PUB];
	size_t publen = sizeof(pub);
	struct ike_dh *dh;
	struct tpeer t;

	(void)state;
	ci.esp[0].dh[0] = IKE_DH_MODP2048;
	ci.esp[0].n_dh = 1;
	cr = mirror(&ci);
	start(&ci, &cr);
	memset(&t, 0, sizeof(t));
	t_init(&t);
	t_auth(&t);
	t_child_rekey(&t, 2, IKE_DH_MODP2048, 0, NULL, 0);
	assert_int_equal(t_answer(&t), IKE_N_INVALID_KE_PAYLOAD);
	t_child_rekey(&t, 3, IKE_DH_MODP2048, IKE_DH_ECP256, bad, 64);
	assert_int_equal(t_answer(&t), IKE_N_INVALID_KE_PAYLOAD);
	assert_int_equal(rej(&R, IKE_REJ_INVALID_KE), 2);
	memset(bad, 0x11, sizeof(bad));
	t_child_rekey(&t, 4, IKE_DH_MODP2048, IKE_DH_MODP2048, bad, 255);
	assert_int_equal(t_answer(&t), IKE_N_INVALID_SYNTAX);
	memset(bad, 0, sizeof(bad));
	t_child_rekey(&t, 5, IKE_DH_MODP2048, IKE_DH_MODP2048, bad, 256);
	assert_int_equal(t_answer(&t), IKE_N_INVALID_SYNTAX);
	bad[255] = 1;
	t_child_rekey(&t, 6, IKE_DH_MODP2048, IKE_DH_MODP2048, bad, 256);
	assert_int_equal(t_answer(&t), IKE_N_INVALID_SYNTAX);
	memset(bad, 0xff, sizeof(bad));
	t_child_rekey(&t, 7, IKE_DH_MODP2048, IKE_DH_MODP2048, bad, 256);
	assert_int_equal(t_answer(&t), IKE_N_INVALID_SYNTAX);
	assert_int_equal(rej(&R, IKE_REJ_MALFORMED), 4);
	t_child_rekey(&t, 8, IKE_DH_ECP256, IKE_DH_ECP256, bad, 64);	/* not our group */
	assert_int_equal(t_answer(&t), IKE_N_NO_PROPOSAL_CHOSEN);
	assert_int_equal(R.ups, 1);
	assert_int_equal(status(&R).st.child_rekeys, 0);
	assert_int_equal(ike_dh_new(IKE_DH_MODP2048, &dh, pub, &publen), 0);
	t_child_rekey(&t, 9, IKE_DH_MODP2048, IKE_DH_MODP2048, pub, publen);
	ike_dh_free(dh);
	assert_int_equal(t_answer(&t), 0);
	assert_int_equal(R.ups, 2);
	assert_int_equal(R.child.dh, IKE_DH_MODP2048);
	assert_int_equal(status(&R).st.child_rekeys, 1);
	ike_keys_wipe(&t.k);
	stop();
}

static void
test_conn_add_checks(void **state)
{
	struct ike_ctx *ctx = ike_new(&ops, &I);
	struct ike_conn_cfg c = cfg_i();
	char err[128];

	(void)state;
	assert_int_equal(ike_conn_add(ctx, &c, err, sizeof(err)), 0);
	assert_int_equal(ike_conn_add(ctx, &c, err, sizeof(err)), -EEXIST);
	c.name[0] = 'u';
	c.ike[0].dh[0] = 2;		/* MODP-1024 */
	assert_int_equal(ike_conn_add(ctx, &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "ike[0]:"));
	c = cfg_i();
	c.name[0] = 'u';
	c.esp[0].integ[0] = IKE_INTEG_HMAC_SHA2_256_128;	/* with GCM */
	c.esp[0].n_integ = 1;
	assert_int_equal(ike_conn_add(ctx, &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "esp[0]:"));
	c = cfg_i();
	c.name[0] = 'u';
	c.ike[0].n_prf = 0;
	assert_int_equal(ike_conn_add(ctx, &c, err, sizeof(err)), -EINVAL);
	c.ike[0] = (struct ike_prop_cfg)PROP_CBC(128, IKE_INTEG_HMAC_SHA1_96, IKE_PRF_HMAC_SHA2_256,
						  IKE_DH_ECP256);
	assert_int_equal(ike_conn_add(ctx, &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "integrity"));
	c = cfg_i();
	c.name[0] = 'u';
	c.psk_len = 0;
	assert_int_equal(ike_conn_add(ctx, &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "psk:"));
	assert_int_equal(ike_initiate(ctx, "nope", 0), -ENOENT);
	ike_free(ctx);
}

/* ---- IKE fragmentation (RFC 7383) -------------------------------------- */

static const struct ike_stats *
st(const struct side *s)
{
	return ike_get_stats(s->ctx);
}

static uint64_t
frag_drops(const struct side *s, enum ike_frag_drop d)
{
	return st(s)->frag_drop[d];
}

static uint64_t
frag_drops_total(const struct side *s)
{
	uint64_t t = 0;

	for (unsigned d = 0; d < IKE_FRAG_DROP_N; d++)
		t += frag_drops(s, d);
	return t;
}

/* The Fragment Number and Total of datagram p, which must be an SKF message. */
static void
skf_of(const struct pkt *p, unsigned *number, unsigned *total)
{
	assert_true(p->len > 36);
	assert_int_equal(p->data[16], IKE_PL_SKF);
	*number = (unsigned)p->data[32] << 8 | p->data[33];
	*total = (unsigned)p->data[34] << 8 | p->data[35];
}

/* IKE_SA_INIT both ways: I's outbox then holds its IKE_AUTH request. */
static void
init_only(uint64_t now)
{
	struct pkt p;

	assert_int_equal(ike_initiate(I.ctx, "t", now), 0);
	p = pop(&I);
	assert_int_equal(deliver(&R, &p, now), 0);
	p = pop(&R);
	assert_int_equal(deliver(&I, &p, now), 0);
}

/*
 * A tiny fragment size at both ends, every IKE proposal (GCM and CBC), with
 * a certificate (a PSK's IKE_AUTH fits in 256 bytes): IKE_AUTH goes as
 * fragments both ways, each within the size, and comes up with nothing
 * dropped.
 */
static void
test_frag_up(void **state)
{
	struct pki_files f = pki_load();

	(void)state;
	for (unsigned i = 0; i < N_ELEMS(IKE_PROPS); i++) {
		{
			struct ike_conn_cfg ci = cfg_pki(&f, "CN=*, O=Example"), cr;
			unsigned n, total;
			uint64_t tx;

			ci.ike[0] = IKE_PROPS[i];
			ci.esp[0].dh[0] = IKE_DH_MODP2048;
			ci.esp[0].n_dh = 1;
			ci.fragment_size = IKE_FRAG_SIZE_MIN;
			cr = mirror_pki(&ci);
			start(&ci, &cr);
			init_only(0);
			assert_true(I.n > 1);
			for (unsigned q = 0; q < I.n; q++) {
				skf_of(&I.q[q], &n, &total);
				assert_int_equal(n, q + 1);
				assert_int_equal(total, I.n);
				assert_true(I.q[q].len + 28 <= IKE_FRAG_SIZE_MIN);
			}
			pump(0);
			assert_established();
			assert_mirrored();
			assert_true(st(&I)->frag_tx > 1 && st(&R)->frag_tx > 1);
			assert_int_equal(st(&R)->frag_rx, st(&I)->frag_tx);
			assert_int_equal(st(&I)->frag_rx, st(&R)->frag_tx);
			assert_int_equal(st(&I)->frag_reassembled, 1);
			assert_int_equal(st(&R)->frag_reassembled, 1);
			assert_int_equal(rej_total(&I) + rej_total(&R), 0);
			assert_int_equal(frag_drops_total(&I) + frag_drops_total(&R), 0);
			/* later exchanges too: CHILD_SA rekeys (PFS: a 256-byte KE each),
			 * before and after an IKE SA rekey, which keeps fragmentation on */
			tx = st(&I)->frag_tx;
			assert_int_equal(ike_child_rekey(I.ctx, "t", 1), 0);
			pump(1);
			assert_int_equal(status(&I).st.child_rekeys, 1);
			assert_true(st(&I)->frag_tx > tx);
			ike_tick(I.ctx, 3000);	/* the old CHILD_SA's Delete */
			pump(3000);
			assert_int_equal(ike_sa_rekey(I.ctx, "t", 3001), 0);
			pump(3001);
			assert_int_equal(status(&I).st.ike_rekeys, 1);
			tx = st(&I)->frag_tx;
			assert_int_equal(ike_child_rekey(I.ctx, "t", 3002), 0);
			pump(3002);
			assert_true(st(&I)->frag_tx > tx);
			assert_int_equal(rej_total(&I) + rej_total(&R), 0);
			assert_int_equal(frag_drops_total(&I) + frag_drops_total(&R), 0);
			stop();
		}
	}
	pki_free(&f);
}

/* Small messages, the default size, or one side with fragmentation off: none. */
static void
test_frag_not_used(void **state)
{
	struct pki_files f = pki_load();
	struct ike_conn_cfg ci = cfg_pki(&f, "CN=*, O=Example"), cr = mirror_pki(&ci);

	(void)state;
	start(&ci, &cr);	/* 1280: our test certificate's IKE_AUTH fits */
	bring_up(0);
	assert_established();
	assert_int_equal(st(&I)->frag_tx + st(&R)->frag_tx, 0);
	stop();
	for (unsigned side = 0; side < 2; side++) {
		ci.fragment_size = cr.fragment_size = IKE_FRAG_SIZE_MIN;
		ci.no_fragmentation = side == 0;
		cr.no_fragmentation = side == 1;
		start(&ci, &cr);
		bring_up(0);
		assert_established();
		assert_int_equal(st(&I)->frag_tx + st(&R)->frag_tx, 0);
		assert_int_equal(I.sent + R.sent, 4);
		stop();
	}
	pki_free(&f);
}

/*
 * A fragment of the request lost: the retransmission sends them all again,
 * the ones in already count as duplicates, and the SA comes up.  Then a
 * fragment of the response lost: I's retransmitted fragment 1 has R send
 * its whole response again (2.6.1), the other fragments count late.
 */
static void
test_frag_lost(void **state)
{
	struct pki_files f = pki_load();
	struct ike_conn_cfg ci = cfg_pki(&f, "CN=*, O=Example"), cr;
	unsigned nreq, nresp;
	struct pkt p;

	(void)state;
	ci.fragment_size = IKE_FRAG_SIZE_MIN;
	cr = mirror_pki(&ci);
	start(&ci, &cr);
	init_only(0);
	nreq = I.n;
	assert_true(nreq >= 3);
	for (unsigned q = 0; q < nreq; q++) {
		p = pop(&I);
		if (q != 1)
			assert_int_equal(deliver(&R, &p, 0), 0);
	}
	assert_int_equal(R.n, 0);		/* incomplete: no answer */
	assert_int_equal(status(&R).st.state, IKE_ST_HALF_OPEN);
	ike_tick(I.ctx, 500);
	assert_int_equal(I.n, nreq);		/* all of them again */
	assert_int_equal(st(&I)->retransmits, 1);
	pump(500);
	assert_established();
	/* fragment 1 again is a duplicate, 2 completes it, the rest come late */
	assert_int_equal(frag_drops(&R, IKE_FRAG_DUPLICATE), 1);
	assert_int_equal(frag_drops(&R, IKE_FRAG_LATE), nreq - 2);
	assert_int_equal(st(&R)->frag_reassembled, 1);
	stop();

	/* the response's last fragment lost */
	start(&ci, &cr);
	init_only(0);
	while (I.n) {
		p = pop(&I);
		deliver(&R, &p, 0);
	}
	nresp = R.n;
	assert_true(nresp >= 2);
	for (unsigned q = 0; q + 1 < nresp; q++) {
		p = pop(&R);
		assert_int_equal(deliver(&I, &p, 0), 0);
	}
	(void)pop(&R);
	assert_int_equal(status(&I).st.state, IKE_ST_AUTH_SENT);
	ike_tick(I.ctx, 500);
	assert_int_equal(I.n, nreq);
	while (I.n) {
		p = pop(&I);
		assert_int_equal(deliver(&R, &p, 500), 0);
	}
	assert_int_equal(R.n, nresp);		/* the whole response again, once */
	assert_int_equal(st(&R)->resent_responses, 1);
	assert_int_equal(frag_drops(&R, IKE_FRAG_LATE), nreq - 1);
	pump(500);
	assert_established();
	assert_int_equal(frag_drops(&I, IKE_FRAG_DUPLICATE), nresp - 1);
	stop();
	pki_free(&f);
}

/* p with its SKF Fragment Number and Total Fragments set. */
static struct pkt
skf_set(const struct pkt *in, unsigned number, unsigned total)
{
	struct pkt p = *in;

	p.data[32] = (uint8_t)(number >> 8);
	p.data[33] = (uint8_t)number;
	p.data[34] = (uint8_t)(total >> 8);
	p.data[35] = (uint8_t)total;
	return p;
}

/*
 * Hostile fragments: each a counted drop, none kept, and the real ones
 * still make the SA.  Then an incomplete message let go after the timeout,
 * and a fragment where fragmentation was not negotiated.
 */
static void
test_frag_hostile(void **state)
{
	struct pki_files f = pki_load();
	struct ike_conn_cfg ci = cfg_pki(&f, "CN=*, O=Example"), cr;
	struct pkt frag[QMAX], p;
	unsigned n;

	(void)state;
	ci.fragment_size = IKE_FRAG_SIZE_MIN;
	cr = mirror_pki(&ci);
	start(&ci, &cr);
	init_only(0);
	n = I.n;
	for (unsigned q = 0; q < n; q++)
		frag[q] = pop(&I);
	p = skf_set(&frag[0], 1, 0);		/* total 0 */
	assert_true(deliver(&R, &p, 0) < 0);
	p = skf_set(&frag[0], 0, n);		/* number 0 */
	assert_true(deliver(&R, &p, 0) < 0);
	p = skf_set(&frag[0], n + 1, n);	/* number > total */
	assert_true(deliver(&R, &p, 0) < 0);
	assert_int_equal(frag_drops(&R, IKE_FRAG_MALFORMED), 3);
	p = skf_set(&frag[0], 1, 40);		/* too many: its ICV fails first */
	assert_true(deliver(&R, &p, 0) < 0);
	p = frag[1];
	p.data[p.len - 1] ^= 1;			/* the ICV */
	assert_true(deliver(&R, &p, 0) < 0);
	assert_int_equal(frag_drops(&R, IKE_FRAG_ICV_FAIL), 2);
	p = frag[1];
	p.len = 30;				/* SKF shorter than its fields */
	p.data[27] = 30;
	p.data[30] = 0;
	p.data[31] = 2;
	assert_true(deliver(&R, &p, 0) < 0);
	assert_int_equal(st(&R)->frag_rx, 0);	/* nothing authenticated yet */
	assert_int_equal(deliver(&R, &frag[0], 0), 0);
	assert_int_equal(deliver(&R, &frag[0], 0), -EBADMSG);	/* duplicate */
	assert_int_equal(frag_drops(&R, IKE_FRAG_DUPLICATE), 1);
	for (unsigned q = 1; q < n; q++)
		assert_int_equal(deliver(&R, &frag[q], 0), 0);
	pump(0);
	assert_established();
	assert_int_equal(st(&R)->frag_reassembled, 1);
	stop();

	/* fragment 1 alone, then nothing: let go after the timeout */
	start(&ci, &cr);
	init_only(0);
	p = pop(&I);
	assert_int_equal(deliver(&R, &p, 0), 0);
	ike_tick(R.ctx, IKE_FRAG_TIMEOUT_MS - 1);
	assert_int_equal(frag_drops(&R, IKE_FRAG_TIMEOUT), 0);
	ike_tick(R.ctx, IKE_FRAG_TIMEOUT_MS);
	assert_int_equal(frag_drops(&R, IKE_FRAG_TIMEOUT), 1);
	stop();

	/* R does not offer fragmentation: I's IKE_AUTH goes whole (SK) */
	cr.no_fragmentation = true;
	start(&ci, &cr);
	init_only(0);
	assert_int_equal(I.n, 1);		/* I saw no FRAGMENTATION_SUPPORTED: SK */
	stop();
	pki_free(&f);
}

/*
 * I's own SA seals fragments made to order (ike_frag_seal with another
 * fragment size, junk inner bytes), so they authenticate at R: a total that
 * changes within a message, a message over 64 KiB.  Each is a counted drop,
 * and the real IKE_AUTH still makes the SA.
 */
static size_t
forge(struct ike_sa *sa, size_t inner_len, uint16_t fsize, uint8_t *out, size_t cap)
{
	static uint8_t junk[70000];
	uint16_t keep = sa->conn->cfg.fragment_size;
	struct ike_buf in;
	struct ike_hdr h;
	size_t len;

	memset(junk, 0x5a, sizeof(junk));
	ike_buf_init(&in, junk, sizeof(junk));
	in.len = inner_len;
	in.first = IKE_PL_NOTIFY;
	ike_hdr_for(sa, &h, IKE_AUTH, false, 1);
	sa->conn->cfg.fragment_size = fsize;
	assert_int_equal(ike_frag_seal(sa, &h, &in, out, cap, &len), 0);
	sa->conn->cfg.fragment_size = keep;
	return len;
}

/* Fragment k (from 0) of what forge made, to R. */
static int
forged_to_r(const uint8_t *m, unsigned k, uint64_t now)
{
	size_t off = 0, len;

	for (;;) {
		len = (size_t)m[off] << 8 | m[off + 1];
		if (k-- == 0)
			break;
		off += 2 + len;
	}
	return ike_input(R.ctx, &I.q[0].dst, &I.q[0].src, m + off + 2, len, now);
}

static void
test_frag_forged(void **state)
{
	static uint8_t a[8192], b[8192], big[80000];
	struct pki_files f = pki_load();
	struct ike_conn_cfg ci = cfg_pki(&f, "CN=*, O=Example"), cr;
	struct ike_sa *sa;

	(void)state;
	ci.fragment_size = IKE_FRAG_SIZE_MIN;
	cr = mirror_pki(&ci);
	start(&ci, &cr);
	init_only(0);
	assert_true(I.n > 1);
	sa = I.ctx->sas;
	assert_non_null(sa);
	forge(sa, 1000, 256, a, sizeof(a));
	forge(sa, 1000, 600, b, sizeof(b));
	assert_int_equal(forged_to_r(a, 0, 0), 0);		/* kept */
	assert_true(forged_to_r(b, 1, 0) < 0);			/* another total */
	assert_int_equal(frag_drops(&R, IKE_FRAG_TOTAL_CHANGED), 1);
	assert_int_equal(st(&R)->frag_rx, 2);			/* both authenticated */
	ike_tick(R.ctx, IKE_FRAG_TIMEOUT_MS);			/* a's fragment let go */
	assert_int_equal(frag_drops(&R, IKE_FRAG_TIMEOUT), 1);
	/* two fragments of 65 KiB and 5 KiB: over IKE_FRAG_BYTES_MAX, all let go */
	forge(sa, 70000, 65535, big, sizeof(big));
	assert_int_equal(forged_to_r(big, 0, IKE_FRAG_TIMEOUT_MS), 0);
	assert_true(forged_to_r(big, 1, IKE_FRAG_TIMEOUT_MS) < 0);
	assert_int_equal(frag_drops(&R, IKE_FRAG_TOO_BIG), 2);
	assert_int_equal(st(&R)->frag_reassembled, 0);
	/* the real IKE_AUTH, in order */
	pump(IKE_FRAG_TIMEOUT_MS);
	assert_established();
	assert_int_equal(st(&R)->frag_reassembled, 1);
	stop();
	pki_free(&f);
}

/* ---- keeping IKE SAs across a restart of the owner (ike_keep.c) ---------- */

struct kept {
	uint8_t rec[IKE_KEEP_MAX];
	size_t len;
	unsigned calls, gone;
};

static void
keep_fn(void *arg, const char *conn, const uint8_t *spi_i, const uint8_t *spi_r,
	const uint8_t *rec, size_t len)
{
	struct kept *k = arg;

	assert_true(conn == NULL ? rec == NULL : strcmp(conn, "t") == 0);
	assert_non_null(spi_i);
	assert_non_null(spi_r);
	k->calls++;
	if (rec == NULL) {
		assert_int_equal(len, 0);
		k->gone++;
		return;
	}
	assert_true(len > 0 && len <= IKE_KEEP_MAX);
	memcpy(k->rec, rec, len);
	k->len = len;
}

static struct kept kept_i, kept_r;	/* what each side's owner keeps */

static struct kept *
kept_of(const struct side *s)
{
	return s == &I ? &kept_i : &kept_r;
}

/* Records on from now: the side's owner keeps the last one given. */
static void
keep_on(struct side *s)
{
	memset(kept_of(s), 0, sizeof(struct kept));
	ike_keep_start(s->ctx, keep_fn, kept_of(s));
}

/* s's record now (the last one given, and what changed since), k a copy. */
static void
take(struct side *s, struct kept *k)
{
	ike_keep_take(s->ctx);
	*k = *kept_of(s);
	kept_of(s)->calls = kept_of(s)->gone = 0;
}

/*
 * s's process dies (kill -9: nothing sent, nothing ended) and a new one with
 * connection c takes the IKE SA up from record k.  The import's result.
 */
static int
restart_side(struct side *s, const struct ike_conn_cfg *c, const struct kept *k, uint64_t now,
	     char *err, size_t elen)
{
	struct ike_ctx *old = s->ctx;
	unsigned downs = s->downs, ike_downs = s->ike_downs;
	int rc;

	s->ctx = ike_new(&ops, s);
	assert_non_null(s->ctx);
	assert_int_equal(ike_conn_add(s->ctx, c, err, elen), 0);
	keep_on(s);
	s->n_kept = 0;
	rc = ike_sa_import(s->ctx, k->rec, k->len, now, err, elen);
	ike_free(old);			/* what a dead process leaves: nothing sent */
	s->downs = downs;
	s->ike_downs = ike_downs;
	s->n = 0;
	return rc;
}

/*
 * The initiator's owner restarts, then the responder's: each takes the IKE
 * SA up from its record, and liveness checks, a CHILD_SA rekey and an IKE
 * SA rekey go on with the peer as if nothing happened (no reject, no new
 * IKE_SA_INIT); records follow every change, and the replaced SA's goes.
 */
static void
test_keep_restart(void **state)
{
	struct ike_conn_cfg ci = cfg_i(), cr = mirror(&ci);
	static struct kept k;
	uint64_t now = 0;
	char err[128];

	(void)state;
	ci.dpd_ms = cr.dpd_ms = 10000;
	start(&ci, &cr);
	keep_on(&I);
	keep_on(&R);
	bring_up(now);
	for (struct side *s = &I; s != NULL; s = s == &I ? &R : NULL) {
		const struct ike_conn_cfg *c = s == &I ? &ci : &cr;
		uint32_t spi_in = s->child.spi_in, spi_out = s->child.spi_out;
		unsigned ups = s->ups, sent = s->sent;
		uint64_t iv = s->last_iv;

		take(s, &k);
		assert_true(k.calls >= 1 && k.len > 0);
		assert_int_equal(restart_side(s, c, &k, now, err, sizeof(err)), 0);
		assert_int_equal(s->n_kept, 1);		/* told, with no new child_up */
		assert_int_equal(s->ups, ups);
		assert_int_equal(s->kept.spi_in, spi_in);
		assert_int_equal(s->kept.spi_out, spi_out);
		assert_int_equal(s->kept.enc_key_len, 0);	/* no keys in a record */
		assert_int_equal(s->sent, sent);		/* nothing sent by the import */
		assert_established();
		now += 10000;				/* liveness checks both ways */
		ike_tick(I.ctx, now);
		ike_tick(R.ctx, now);
		pump(now);
		assert_established();
		assert_true(s->last_iv > iv + 1000);	/* IVs moved on past the old owner's */
		assert_int_equal(rej_total(&I) + rej_total(&R), 0);
		assert_int_equal(ike_child_rekey(s->ctx, "t", now), 0);	/* the restarted side's */
		pump(now);
		now += 3000;				/* the old CHILD_SA's Delete */
		ike_tick(I.ctx, now);
		ike_tick(R.ctx, now);
		pump(now);
		assert_int_equal(status(s).st.child_rekeys, 1 + (s == &R));
		assert_int_equal(ike_sa_rekey(s->ctx, "t", now), 0);
		pump(now);
		assert_int_equal(status(&I).n, 1);
		assert_int_equal(status(&R).n, 1);
		assert_int_equal(rej_total(&I) + rej_total(&R), 0);
		take(s, &k);				/* the new SA's record, the old one's gone */
		assert_int_equal(k.gone, 1);
		assert_true(k.len > 0);
	}
	assert_int_equal(status(&I).st.ike_rekeys, 2);
	stop();
}

/*
 * A liveness check out when the owner died: kept with its bytes and sent
 * again at once by the new owner; the peer answers a first copy, and a
 * copy of a request it answered already with its cached answer.
 */
static void
test_keep_dpd_in_flight(void **state)
{
	struct ike_conn_cfg ci = cfg_i(), cr = mirror(&ci);
	static struct kept k;
	char err[128];

	(void)state;
	ci.dpd_ms = 10000;
	for (int answered = 0; answered < 2; answered++) {
		start(&ci, &cr);
		keep_on(&I);
		bring_up(0);
		ike_tick(I.ctx, 10000);
		assert_int_equal(I.n, 1);
		take(&I, &k);
		if (answered) {				/* R answered; the answer is lost */
			struct pkt p = pop(&I);

			deliver(&R, &p, 10000);
			R.n = 0;
		}
		assert_int_equal(restart_side(&I, &ci, &k, 10001, err, sizeof(err)), 0);
		ike_tick(I.ctx, 10001);
		assert_int_equal(I.n, 1);		/* sent again at once */
		pump(10001);
		assert_established();
		assert_int_equal(status(&R).st.peer_next_id, 3);	/* INIT, AUTH, the check */
		assert_int_equal(ike_get_stats(R.ctx)->resent_responses, (uint64_t)answered);
		assert_int_equal(rej_total(&I) + rej_total(&R), 0);
		ike_tick(I.ctx, 20001);			/* the next check: a new message ID */
		pump(20001);
		assert_int_equal(status(&R).st.peer_next_id, 4);
		assert_int_equal(rej_total(&I) + rej_total(&R), 0);
		stop();
	}
}

/* Records that are not taken up: each refused with why, nothing made. */
static void
test_keep_refused(void **state)
{
	struct ike_conn_cfg ci = cfg_i(), cr = mirror(&ci), moved = ci;
	static struct kept k;
	char err[128];

	(void)state;
	start(&ci, &cr);
	keep_on(&I);
	bring_up(0);
	take(&I, &k);
	/* garbage, a cut record, a connection whose peer moved */
	k.rec[0] ^= 0xff;
	assert_int_equal(ike_sa_import(R.ctx, k.rec, k.len, 0, err, sizeof(err)), -EINVAL);
	k.rec[0] ^= 0xff;
	assert_int_equal(ike_sa_import(R.ctx, k.rec, k.len - 1, 0, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "do not add up"));
	assert_int_equal(ike_sa_import(I.ctx, k.rec, k.len, 0, err, sizeof(err)), -EEXIST);
	/* every byte of the record changed in turn: taken up or refused, never a
	 * crash or a leak (the ASan pass runs this too) */
	for (size_t i = 0; i < k.len; i++) {
		struct ike_ctx *x = ike_new(&ops, &I);
		uint8_t was = k.rec[i];
		int rc;

		assert_int_equal(ike_conn_add(x, &ci, err, sizeof(err)), 0);
		k.rec[i] ^= (uint8_t)(0x5a + i);
		rc = ike_sa_import(x, k.rec, k.len, 0, err, sizeof(err));
		assert_true(rc == 0 || rc == -EINVAL || rc == -ESTALE || rc == -EAGAIN ||
			    rc == -EEXIST);
		k.rec[i] = was;
		ike_free(x);
	}
	I.n = 0;
	moved.remote = addr4("198.51.100.2");
	assert_int_equal(restart_side(&I, &moved, &k, 0, err, sizeof(err)), -ESTALE);
	assert_non_null(strstr(err, "addresses changed"));
	assert_int_equal(status(&I).n, 0);
	assert_int_equal(I.n_kept, 0);
	stop();
	/* a CHILD_SA rekey of ours out: half done, a new IKE SA is the way */
	start(&ci, &cr);
	keep_on(&I);
	bring_up(0);
	assert_int_equal(ike_child_rekey(I.ctx, "t", 100), 0);
	take(&I, &k);
	assert_int_equal(restart_side(&I, &ci, &k, 100, err, sizeof(err)), -EAGAIN);
	assert_non_null(strstr(err, "half done"));
	assert_int_equal(status(&I).n, 0);
	stop();
}

/* A remote-access client's IKE SA: taken up with its lease, which stays online. */
static void
test_keep_remote_access(void **state)
{
	struct pki_files f = pki_load();
	struct ike_conn_cfg ci, cr;
	static struct kept k;
	struct side first;
	char err[128];

	(void)state;
	start_ra(&f, &ci, &cr);
	keep_on(&R);
	bring_up(0);
	take(&R, &k);
	assert_int_equal(restart_side(&R, &cr, &k, 0, err, sizeof(err)), 0);
	assert_int_equal(R.n_kept, 1);
	assert_memory_equal(R.kept.ts_remote.addr, "\x0a\x0a\x00\x07", 4);
	assert_true(status(&R).st.has_vip);
	assert_int_equal(status(&R).st.peer_id.len, ci.local_id.len);
	assert_int_equal(ike_child_rekey(I.ctx, "t", 100), 0);	/* the client rekeys */
	pump(100);
	assert_int_equal(rej_total(&I) + rej_total(&R), 0);
	/* the /32 pool's one address is online again: a second client (no
	 * INITIAL_CONTACT) is refused */
	first = I;
	memset(&I, 0, sizeof(I));
	I.ctx = ike_new(&ops, &I);
	ci.local = addr4("192.0.2.2");
	ci.no_initial_contact = true;
	assert_int_equal(ike_conn_add(I.ctx, &ci, err, sizeof(err)), 0);
	bring_up(0);
	assert_int_equal(ike_get_stats(R.ctx)->pool_exhausted, 1);
	ike_free(I.ctx);
	I = first;
	stop();
	pki_free(&f);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_up_all_proposals),
		cmocka_unit_test(test_proposal_order),
		cmocka_unit_test(test_wrong_psk),
		cmocka_unit_test(test_wrong_identity),
		cmocka_unit_test(test_pubkey_up),
		cmocka_unit_test(test_remote_access),
		cmocka_unit_test(test_initial_contact_ra),
		cmocka_unit_test(test_pubkey_refused),
		cmocka_unit_test(test_frag_up),
		cmocka_unit_test(test_frag_not_used),
		cmocka_unit_test(test_frag_lost),
		cmocka_unit_test(test_frag_hostile),
		cmocka_unit_test(test_frag_forged),
		cmocka_unit_test(test_invalid_ke),
		cmocka_unit_test(test_multi_alg_proposal),
		cmocka_unit_test(test_default_proposals),
		cmocka_unit_test(test_no_proposal),
		cmocka_unit_test(test_esp_no_proposal),
		cmocka_unit_test(test_esn),
		cmocka_unit_test(test_by_spi),
		cmocka_unit_test(test_ts_narrowing),
		cmocka_unit_test(test_ts_unacceptable),
		cmocka_unit_test(test_conn_by_identity),
		cmocka_unit_test(test_dropped_responses),
		cmocka_unit_test(test_duplicate_request),
		cmocka_unit_test(test_replay),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_response_icv),
		cmocka_unit_test(test_give_up),
		cmocka_unit_test(test_bad_spi_flags),
		cmocka_unit_test(test_delete),
		cmocka_unit_test(test_conn_remove),
		cmocka_unit_test(test_dpd),
		cmocka_unit_test(test_initial_contact),
		cmocka_unit_test(test_cookie),
		cmocka_unit_test(test_nat_detected),
		cmocka_unit_test(test_nat_traversal),
		cmocka_unit_test(test_force_encap),
		cmocka_unit_test(test_no_nat),
		cmocka_unit_test(test_rekey),
		cmocka_unit_test(test_rekey_pfs),
		cmocka_unit_test(test_rekey_pfs_invalid_ke),
		cmocka_unit_test(test_rekey_pfs_mismatch),
		cmocka_unit_test(test_rekey_pfs_bad_ke),
		cmocka_unit_test(test_init_bad_modp_ke),
		cmocka_unit_test(test_rekey_100),
		cmocka_unit_test(test_rekey_lost_response),
		cmocka_unit_test(test_rekey_lifetime),
		cmocka_unit_test(test_rekey_simultaneous),
		cmocka_unit_test(test_children_up),
		cmocka_unit_test(test_children_pick_and_narrow),
		cmocka_unit_test(test_child_pfs_invalid_ke),
		cmocka_unit_test(test_children_rekey_delete),
		cmocka_unit_test(test_children_max),
		cmocka_unit_test(test_child_removed_midway),
		cmocka_unit_test(test_child_ts_lists),
		cmocka_unit_test(test_child_ts_wide),
		cmocka_unit_test(test_rekey_crossing_delete),
		cmocka_unit_test(test_ike_rekey),
		cmocka_unit_test(test_ike_rekey_lost_response),
		cmocka_unit_test(test_ike_rekey_lifetime),
		cmocka_unit_test(test_rekey_lifetime_retry),
		cmocka_unit_test(test_ike_rekey_crossing),
		cmocka_unit_test(test_ike_rekey_50),
		cmocka_unit_test(test_ike_rekey_bad_ke),
		cmocka_unit_test(test_conn_add_checks),
		cmocka_unit_test(test_keep_restart),
		cmocka_unit_test(test_keep_dpd_in_flight),
		cmocka_unit_test(test_keep_refused),
		cmocka_unit_test(test_keep_remote_access),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
