/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_ike_scale.c - 10 000 IKE SAs between two contexts ([ikepki] issue 16,
 * requirement 6): a tester's PSK tunnels to one gateway, one pair of
 * addresses, told apart by identity.  What it proves without a clock:
 * each message finds its SA in a bucket of a few (ctx->probes, the SAs
 * compared), not by a scan of all; each IKE_AUTH moves the SA to the
 * connection of its IDi among 10 000 (the right name at child_up, its own
 * selectors); SAs ended in the middle of the table leave it whole.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ike_sa.h"
#include "ike_int.h"	/* ctx->probes */

#define N_CONNS		10000
#define QMAX		8
#define PKT_MAX		2048
/*
 * A message's lookup compares the SAs of its bucket: 10 000 in 16 384
 * buckets are ~0.6 a bucket, the fullest ~6 (balls into bins); the list
 * this replaced compared up to all 10 000.
 */
#define PROBES_MAX	12
#define PROBES_MEAN_MAX	2.0

struct pkt {
	struct ike_addr src, dst;
	size_t len;
	uint8_t data[PKT_MAX];
};

struct side {
	struct ike_ctx *ctx;
	struct pkt q[QMAX];
	unsigned n;
	unsigned ups, downs, wrong;	/* wrong: a child_up whose selector is not its conn's */
};

static struct side I, R;

static unsigned
index_of(const char *conn)
{
	return (unsigned)strtoul(conn + 1, NULL, 10);	/* "t%u" */
}

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
}

/* Tunnel i's remote selector (seen from the initiator): 10.128.0.0 + i, a /32. */
static void
host_of(unsigned i, uint8_t out[4])
{
	uint32_t a = htonl(0x0a800000u + i);

	memcpy(out, &a, 4);
}

static void
cb_child_up(void *opaque, const char *conn, const struct ike_child *c)
{
	struct side *s = opaque;
	uint8_t want[4];

	host_of(index_of(conn), want);
	s->ups++;
	if (memcmp(s == &I ? c->ts_remote.addr : c->ts_local.addr, want, 4) != 0)
		s->wrong++;
}

static void
cb_child_down(void *opaque, const char *conn, uint32_t spi_in, uint32_t spi_out,
	      const struct ike_prefix *ts_remote)
{
	(void)ts_remote;
	(void)conn;
	(void)spi_in;
	(void)spi_out;
	((struct side *)opaque)->downs++;
}

static void
cb_ike_down(void *opaque, const char *conn, const char *why)
{
	(void)opaque;
	(void)conn;
	(void)why;
}

static void
cb_log(void *opaque, const char *conn, const char *msg)
{
	(void)opaque;
	if (getenv("IKE_SA_TEST_LOG") != NULL)
		fprintf(stderr, "%s: %s\n", conn, msg);
}

static const struct ike_ops ops = {
	.send = cb_send, .child_up = cb_child_up, .child_down = cb_child_down,
	.ike_down = cb_ike_down, .log = cb_log,
};

static struct ike_addr
addr4(const char *ip)
{
	struct ike_addr a = { .family = AF_INET, .port = 500 };

	assert_int_equal(inet_pton(AF_INET, ip, a.ip), 1);
	return a;
}

static struct ike_ident
fqdn(unsigned i, const char *side)
{
	struct ike_ident id = { .type = IKE_ID_FQDN };

	id.len = (uint8_t)snprintf((char *)id.data, sizeof(id.data), "t%u.%s.dpvpn.test", i,
				   side);
	return id;
}

/* Tunnel i as the initiator (tester) has it; mirrored for the responder. */
static struct ike_conn_cfg
conn_cfg(unsigned i, bool initiator)
{
	struct ike_conn_cfg c = { .psk_len = 16, .n_ike = 1, .n_esp = 1, .retrans_ms = 500,
				  .retrans_tries = 3 };
	struct ike_prefix net = { .family = AF_INET, .plen = 24 }, host = { .family = AF_INET,
									    .plen = 32 };
	struct ike_addr a = addr4("192.0.2.1"), b = addr4("198.51.100.1");

	snprintf(c.name, sizeof(c.name), "t%u", i);
	memcpy(c.psk, "0123456789abcdef", 16);
	c.ike[0] = (struct ike_prop_cfg){ .encr = { { IKE_ENCR_AES_GCM_16, 128 } }, .n_encr = 1,
					  .prf = { IKE_PRF_HMAC_SHA2_256 }, .n_prf = 1,
					  .dh = { IKE_DH_CURVE25519 }, .n_dh = 1 };
	c.esp[0] = (struct ike_prop_cfg){ .encr = { { IKE_ENCR_AES_GCM_16, 128 } }, .n_encr = 1 };
	inet_pton(AF_INET, "10.1.0.0", net.addr);
	host_of(i, host.addr);
	c.local = initiator ? a : b;
	c.remote = initiator ? b : a;
	c.local_id = fqdn(i, initiator ? "tester" : "dut");
	c.remote_id = fqdn(i, initiator ? "dut" : "tester");
	c.ts_local = initiator ? net : host;
	c.ts_remote = initiator ? host : net;
	return c;
}

static struct pkt
pop(struct side *s)
{
	struct pkt p = s->q[0];

	memmove(&s->q[0], &s->q[1], (s->n - 1) * sizeof(s->q[0]));
	s->n--;
	return p;
}

/* Both outboxes moved until empty; each ike_input's SAs compared, at most PROBES_MAX. */
static void
pump(uint64_t *max_probes, uint64_t *messages)
{
	for (unsigned guard = 0; (I.n || R.n) && guard < 20; guard++) {
		struct side *to = I.n ? &R : &I, *from = I.n ? &I : &R;
		struct pkt p = pop(from);
		uint64_t before = to->ctx->probes;

		ike_input(to->ctx, &p.dst, &p.src, p.data, p.len, 0);
		if (to->ctx->probes - before > *max_probes)
			*max_probes = to->ctx->probes - before;
		(*messages)++;
	}
	assert_int_equal(I.n + R.n, 0);
}

static double
probes_mean(uint64_t messages)
{
	return (double)(I.ctx->probes + R.ctx->probes) / (double)messages;
}

static void
count_sa(void *arg, const struct ike_sa_status *st)
{
	if (st->state == IKE_ST_ESTABLISHED && st->child_up)
		(*(unsigned *)arg)++;
}

static unsigned
established(const struct side *s)
{
	unsigned n = 0;

	ike_sa_walk(s->ctx, count_sa, &n);
	return n;
}

/* ike_sa_walk_conn: the SAs of one connection, by name, and no other. */
struct of_conn {
	const char *name;
	unsigned n, other;
};

static void
count_of(void *arg, const struct ike_sa_status *st)
{
	struct of_conn *o = arg;

	o->n++;
	o->other += strcmp(st->conn, o->name) != 0;
}

static void
test_ten_thousand_sas(void **state)
{
	uint64_t max_probes = 0, messages = 0;
	char err[128], name[16];

	(void)state;
	memset(&I, 0, sizeof(I));
	memset(&R, 0, sizeof(R));
	I.ctx = ike_new(&ops, &I);
	R.ctx = ike_new(&ops, &R);
	assert_non_null(I.ctx);
	assert_non_null(R.ctx);
	for (unsigned i = 0; i < N_CONNS; i++) {
		struct ike_conn_cfg ci = conn_cfg(i, true), cr = conn_cfg(i, false);

		assert_int_equal(ike_conn_add(I.ctx, &ci, err, sizeof(err)), 0);
		assert_int_equal(ike_conn_add(R.ctx, &cr, err, sizeof(err)), 0);
	}
	for (unsigned i = 0; i < N_CONNS; i++) {
		snprintf(name, sizeof(name), "t%u", i);
		assert_int_equal(ike_initiate(I.ctx, name, 0), 0);
		pump(&max_probes, &messages);
	}
	assert_int_equal(I.ups, N_CONNS);
	assert_int_equal(R.ups, N_CONNS);
	assert_int_equal(I.wrong + R.wrong, 0);	/* each SA on its identity's connection */
	assert_int_equal(established(&I), N_CONNS);
	assert_int_equal(established(&R), N_CONNS);
	assert_in_range(messages, 4 * N_CONNS, 4 * N_CONNS);	/* 2 exchanges, no resend */
	assert_in_range(max_probes, 1, PROBES_MAX);
	assert_true(probes_mean(messages) < PROBES_MEAN_MAX);

	/* every 7th ended (a Delete each way): the table stays whole around them */
	for (unsigned i = 0; i < N_CONNS; i += 7) {
		snprintf(name, sizeof(name), "t%u", i);
		assert_int_equal(ike_terminate(I.ctx, name, 0), 0);
		pump(&max_probes, &messages);
	}
	assert_int_equal(established(&I), N_CONNS - (N_CONNS + 6) / 7);
	assert_int_equal(established(&R), N_CONNS - (N_CONNS + 6) / 7);
	assert_int_equal(R.downs, (N_CONNS + 6) / 7);
	for (unsigned i = 0; i < N_CONNS; i += 7) {	/* and up again */
		snprintf(name, sizeof(name), "t%u", i);
		assert_int_equal(ike_initiate(I.ctx, name, 0), 0);
		pump(&max_probes, &messages);
	}
	assert_int_equal(established(&R), N_CONNS);
	assert_int_equal(I.wrong + R.wrong, 0);
	assert_in_range(max_probes, 1, PROBES_MAX);
	for (unsigned i = 0; i < N_CONNS; i += 997) {	/* show tunnels' walk of one tunnel */
		struct of_conn o = { .name = name };

		snprintf(name, sizeof(name), "t%u", i);
		assert_int_equal(ike_sa_walk_conn(R.ctx, name, count_of, &o), 0);
		assert_int_equal(o.n, 1);
		assert_int_equal(o.other, 0);
	}
	assert_int_equal(ike_sa_walk_conn(R.ctx, "nosuch", count_of,
					  &(struct of_conn){ .name = "nosuch" }), -ENOENT);
	assert_true(probes_mean(messages) < PROBES_MEAN_MAX);
	print_message("%" PRIu64 " messages, %.2f SAs compared a message, at most %" PRIu64 "\n",
		      messages, probes_mean(messages), max_probes);
	ike_free(I.ctx);
	ike_free(R.ctx);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ten_thousand_sas),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
