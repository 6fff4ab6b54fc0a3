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
#include "ike_sa.h"

#define QMAX		32
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
	unsigned ups, downs, ike_downs;
	struct ike_child child;		/* the last child_up */
	uint32_t down_in, down_out;
	char why[128];
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
	p = &s->q[s->n++];
	p->src = *local;
	p->dst = *remote;
	p->len = len;
	memcpy(p->data, msg, len);
	s->sent++;
}

static void
cb_child_up(void *opaque, const char *conn, const struct ike_child *c)
{
	struct side *s = opaque;

	assert_string_equal(conn, "t");
	s->ups++;
	s->child = *c;
}

static void
cb_child_down(void *opaque, const char *conn, uint32_t spi_in, uint32_t spi_out)
{
	struct side *s = opaque;

	assert_string_equal(conn, "t");
	s->downs++;
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

static const struct ike_ops ops = {
	.send = cb_send, .child_up = cb_child_up, .child_down = cb_child_down,
	.ike_down = cb_ike_down, .log = cb_log,
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

static struct ike_prefix
pfx4(const char *ip, uint8_t plen)
{
	struct ike_prefix p = { .family = AF_INET, .plen = plen };

	assert_int_equal(inet_pton(AF_INET, ip, p.addr), 1);
	return p;
}

static const struct ike_prop_ike IKE_PROPS[] = {
	{ 128, IKE_DH_ECP256 }, { 256, IKE_DH_ECP256 },
	{ 128, IKE_DH_CURVE25519 }, { 256, IKE_DH_CURVE25519 },
};

static const struct ike_prop_esp ESP_PROPS[] = {
	{ IKE_ENCR_AES_GCM_16, 128, 0 }, { IKE_ENCR_AES_GCM_16, 256, 0 },
	{ IKE_ENCR_AES_CBC, 128, IKE_INTEG_HMAC_SHA2_256_128 },
	{ IKE_ENCR_AES_CBC, 256, IKE_INTEG_HMAC_SHA2_256_128 },
};

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
			assert_int_equal(status(&I).st.dh, IKE_PROPS[i].dh);
			assert_int_equal(status(&R).st.encr_bits, IKE_PROPS[i].encr_bits);
			assert_int_equal(I.child.encr, ESP_PROPS[e].encr);
			assert_int_equal(I.child.integ, ESP_PROPS[e].integ);
			assert_int_equal(I.child.enc_key_len, ESP_PROPS[e].encr_bits / 8 +
					 (ESP_PROPS[e].integ ? 0 : 4));
			assert_int_equal(I.child.integ_key_len, ESP_PROPS[e].integ ? 32 : 0);
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
		/* The second copy of the response is one too many. */
		assert_int_not_equal(deliver(&I, &b, 0), 0);
	}
	assert_int_equal(R.ups, 1);
	assert_int_equal(ike_get_stats(R.ctx)->resent_responses, 2);
	assert_int_equal(rej(&I, IKE_REJ_BAD_MSGID), 2);
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
	assert_int_not_equal(deliver(&I, &m[1], 0), 0);	/* its response */
	assert_int_not_equal(deliver(&R, &m[2], 0), 0);	/* IKE_AUTH request */
	assert_int_not_equal(deliver(&I, &m[3], 0), 0);	/* its response */
	assert_int_equal(rej(&R, IKE_REJ_BAD_MSGID), 2);
	assert_int_equal(rej(&I, IKE_REJ_BAD_MSGID), 2);
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
	c.ike[0].dh = 14;
	assert_int_equal(ike_conn_add(ctx, &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "ike:"));
	c = cfg_i();
	c.name[0] = 'u';
	c.esp[0].integ = IKE_INTEG_HMAC_SHA2_256_128;
	assert_int_equal(ike_conn_add(ctx, &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "esp:"));
	c = cfg_i();
	c.name[0] = 'u';
	c.psk_len = 0;
	assert_int_equal(ike_conn_add(ctx, &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "psk:"));
	assert_int_equal(ike_initiate(ctx, "nope", 0), -ENOENT);
	ike_free(ctx);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_up_all_proposals),
		cmocka_unit_test(test_proposal_order),
		cmocka_unit_test(test_wrong_psk),
		cmocka_unit_test(test_wrong_identity),
		cmocka_unit_test(test_invalid_ke),
		cmocka_unit_test(test_no_proposal),
		cmocka_unit_test(test_esp_no_proposal),
		cmocka_unit_test(test_ts_narrowing),
		cmocka_unit_test(test_ts_unacceptable),
		cmocka_unit_test(test_dropped_responses),
		cmocka_unit_test(test_duplicate_request),
		cmocka_unit_test(test_replay),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_response_icv),
		cmocka_unit_test(test_give_up),
		cmocka_unit_test(test_bad_spi_flags),
		cmocka_unit_test(test_delete),
		cmocka_unit_test(test_dpd),
		cmocka_unit_test(test_cookie),
		cmocka_unit_test(test_nat_detected),
		cmocka_unit_test(test_conn_add_checks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
