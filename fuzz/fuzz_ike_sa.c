/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_ike_sa.c - the IKE state machine (ike/ike_sa.c) as a responder and
 * as an initiator facing a hostile peer: what reaches it unauthenticated
 * (IKE_SA_INIT requests and responses, cookies, INVALID_KE_PAYLOAD, NAT
 * detection, error notifies, messages for unknown or half-open SAs, SK
 * payloads that must fail their ICV) and its timers.
 *
 * An input is a list of events:
 *
 *   op (1) | length (2, big endian) | datagram
 *
 *   op & 3 == 0: the datagram to the responder context, from the peer's
 *                address (op & 4: from port 4500 instead of 500)
 *   op & 3 == 1: the datagram to the initiator context (which sent
 *                IKE_SA_INIT when the input began), its SPIs patched to the
 *                ones that context chose when op & 8 (so a response is
 *                taken as one to our request)
 *   op & 3 == 2: time passes (length: milliseconds x 16), both contexts tick;
 *                then op & 16: the responder's connection removed and added
 *                again (a reload that changed it), op & 32: the initiator's,
 *                which initiates again
 *   op & 3 == 3: the initiator's last datagram sent is given to the responder
 *                (a real request, then whatever the fuzzer did before it)
 *
 * Each context also has "fuzz-k", a second CHILD_SA of "fuzz"'s IKE SA
 * (ike_sa = fuzz, other selectors, ESP with PFS): the initiator asks for it
 * with the IKE SA (CREATE_CHILD_SA once established), the responder picks
 * it for a peer's CREATE_CHILD_SA whose selectors fit; a reload re-adds it.
 *
 * Every context is freed at the end of an input: LeakSanitizer sees anything
 * it did not free, ASan any read outside a datagram (each is an exact-size
 * heap copy).
 */
#include <arpa/inet.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "ike_msg.h"
#include "ike_sa.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint8_t last[4096];	/* the initiator's last datagram sent */
static size_t last_len;
static uint8_t spi_i[8];	/* the SPI the initiator chose */

static void
on_send(void *opaque, const struct ike_addr *local, const struct ike_addr *remote,
	const uint8_t *msg, size_t len)
{
	(void)local;
	(void)remote;
	if (opaque == NULL || len > sizeof(last))	/* the responder's answers: dropped */
		return;
	memcpy(last, msg, len);
	last_len = len;
	if (len >= IKE_HDR_LEN)
		memcpy(spi_i, msg, sizeof(spi_i));
}

static void on_child_up(void *o, const char *c, const struct ike_child *ch)
{
	(void)o; (void)c; (void)ch;
}

static void on_child_down(void *o, const char *c, uint32_t in, uint32_t out,
			  const struct ike_prefix *ts)
{
	(void)o; (void)c; (void)in; (void)out; (void)ts;
}

static void on_ike_down(void *o, const char *c, const char *why)
{
	(void)o; (void)c; (void)why;
}

static const struct ike_ops ops = {
	.send = on_send, .child_up = on_child_up, .child_down = on_child_down,
	.ike_down = on_ike_down,
};

static void
addr(struct ike_addr *a, const char *ip, uint16_t port)
{
	memset(a, 0, sizeof(*a));
	a->family = AF_INET;
	inet_pton(AF_INET, ip, a->ip);
	a->port = port;
}

static void
conn(struct ike_conn_cfg *c, bool initiator)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->name, sizeof(c->name), "fuzz");
	addr(&c->local, initiator ? "198.19.0.1" : "198.19.0.2", 500);
	addr(&c->remote, initiator ? "198.19.0.2" : "198.19.0.1", 500);
	memcpy(c->psk, "fuzz-psk-0123456789abcdef", 25);
	c->psk_len = 25;
	c->ike[0] = (struct ike_prop_cfg){ .encr = { { IKE_ENCR_AES_GCM_16, 128 } }, .n_encr = 1,
					   .prf = { IKE_PRF_HMAC_SHA2_256 }, .n_prf = 1,
					   .dh = { IKE_DH_ECP256 }, .n_dh = 1 };
	c->ike[1] = (struct ike_prop_cfg){ .encr = { { IKE_ENCR_AES_GCM_16, 256 } }, .n_encr = 1,
					   .prf = { IKE_PRF_HMAC_SHA2_256 }, .n_prf = 1,
					   .dh = { IKE_DH_CURVE25519 }, .n_dh = 1 };
	/* issue 16: CBC with HMAC-SHA2 and the other groups, several of a kind */
	c->ike[2] = (struct ike_prop_cfg){
		.encr = { { IKE_ENCR_AES_CBC, 128 }, { IKE_ENCR_AES_CBC, 256 } }, .n_encr = 2,
		.integ = { IKE_INTEG_HMAC_SHA2_256_128, IKE_INTEG_HMAC_SHA2_384_192,
			   IKE_INTEG_HMAC_SHA2_512_256 }, .n_integ = 3,
		.prf = { IKE_PRF_HMAC_SHA2_384, IKE_PRF_HMAC_SHA2_512 }, .n_prf = 2,
		.dh = { IKE_DH_MODP2048, IKE_DH_ECP384 }, .n_dh = 2 };
	c->n_ike = 3;
	c->esp[0] = (struct ike_prop_cfg){ .encr = { { IKE_ENCR_AES_GCM_16, 128 } }, .n_encr = 1 };
	c->esp[1] = (struct ike_prop_cfg){ .encr = { { IKE_ENCR_AES_CBC, 256 } }, .n_encr = 1,
					   .integ = { IKE_INTEG_HMAC_SHA1_96 }, .n_integ = 1,
					   .dh = { IKE_DH_ECP256 }, .n_dh = 1 };
	c->n_esp = 2;
	c->ts_local = (struct ike_prefix){ .family = AF_INET, .plen = 24,
					   .addr = { 198, 18, initiator ? 1 : 2, 0 } };
	c->ts_remote = (struct ike_prefix){ .family = AF_INET, .plen = 24,
					    .addr = { 198, 18, initiator ? 2 : 1, 0 } };
	c->retrans_ms = 500;
	c->retrans_tries = 3;
	c->dpd_ms = 2000;
}

/* "fuzz-k": a child connection of "fuzz" (ike_sa), 10.1/16 <-> 10.2/16, PFS. */
static void
kid(struct ike_conn_cfg *c, bool initiator)
{
	conn(c, initiator);
	snprintf(c->name, sizeof(c->name), "fuzz-k");
	snprintf(c->ike_sa, sizeof(c->ike_sa), "fuzz");
	c->esp[0].dh[0] = IKE_DH_CURVE25519;
	c->esp[0].n_dh = 1;
	c->ts_local = (struct ike_prefix){ .family = AF_INET, .plen = 16,
					   .addr = { 10, initiator ? 1 : 2, 0, 0 } };
	c->ts_remote = (struct ike_prefix){ .family = AF_INET, .plen = 16,
					    .addr = { 10, initiator ? 2 : 1, 0, 0 } };
}

static void
add(struct ike_ctx *ctx, bool initiator)
{
	struct ike_conn_cfg c;
	char err[128];

	conn(&c, initiator);
	if (ike_conn_add(ctx, &c, err, sizeof(err)) != 0) {
		fprintf(stderr, "fuzz_ike_sa: %s\n", err);
		abort();
	}
	kid(&c, initiator);
	if (ike_conn_add(ctx, &c, err, sizeof(err)) != 0) {
		fprintf(stderr, "fuzz_ike_sa: %s\n", err);
		abort();
	}
}

static struct ike_ctx *
context(bool initiator)
{
	struct ike_ctx *ctx = ike_new(&ops, initiator ? (void *)1 : NULL);

	if (ctx == NULL)
		abort();
	add(ctx, initiator);
	ike_set_cookie_threshold(ctx, 4);
	return ctx;
}

/* A reload that changed the connection: removed (its SAs end), added again. */
static void
readd(struct ike_ctx *ctx, bool initiator, uint64_t now)
{
	if (ike_conn_remove(ctx, "fuzz", now) != 0)	/* "fuzz-k" goes with it */
		abort();
	add(ctx, initiator);
}

static void
deliver(struct ike_ctx *ctx, const uint8_t *msg, size_t len, bool to_initiator,
	uint16_t port, uint64_t now)
{
	struct ike_addr local, remote;
	uint8_t *copy = malloc(len ? len : 1);

	if (copy == NULL)
		return;
	memcpy(copy, msg, len);
	addr(&local, to_initiator ? "198.19.0.1" : "198.19.0.2", port);
	addr(&remote, to_initiator ? "198.19.0.2" : "198.19.0.1", port);
	ike_input(ctx, &local, &remote, copy, len, now);
	free(copy);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ike_ctx *resp = context(false), *init = context(true);
	uint64_t now = 1000;
	size_t at = 0;

	last_len = 0;
	ike_initiate(init, "fuzz", now);
	ike_initiate(init, "fuzz-k", now);	/* waits for the IKE SA */
	while (size - at >= 3) {
		uint8_t op = data[at];
		size_t len = (size_t)data[at + 1] << 8 | data[at + 2];
		uint8_t msg[4096];

		at += 3;
		if ((op & 3) == 2) {
			now += len * 16;
			ike_tick(resp, now);
			ike_tick(init, now);
			if (op & 16)
				readd(resp, false, now);
			if (op & 32) {
				readd(init, true, now);
				ike_initiate(init, "fuzz", now);
				ike_initiate(init, "fuzz-k", now);
			}
			continue;
		}
		if ((op & 3) == 3) {
			if (last_len)
				deliver(resp, last, last_len, false, 500, now);
			continue;
		}
		len = len < size - at ? len : size - at;
		len = len < sizeof(msg) ? len : sizeof(msg);
		memcpy(msg, data + at, len);
		at += len;
		if ((op & 3) == 1 && (op & 8) && len >= IKE_HDR_LEN)
			memcpy(msg, spi_i, sizeof(spi_i));
		deliver((op & 3) == 0 ? resp : init, msg, len, (op & 3) == 1,
			(op & 4) ? 4500 : 500, now);
	}
	ike_free(resp);
	ike_free(init);
	return 0;
}
