/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_ike_msg.c - the IKEv2 message codec (ike/ike_msg.c) on datagrams
 * as they come off the IKE channel: the header, the payload chain, and every
 * payload parser on the payloads of its type (an SK body is parsed as a chain
 * too, as if it had been decrypted; so is an SKF fragment 1's data, RFC 7383,
 * after its Fragment Number and Total Fragments are checked).  What parses is built again with the
 * builder and parsed back: the result must be what was read (a round trip,
 * so the builder and the parser cannot disagree on a field): SA, TS, CERT,
 * CERTREQ and CP payloads.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ike_msg.h"

#define MAX_PL		64
#define MAX_PROPS	16
#define MAX_TS		16

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static __attribute__((noreturn)) void
die(const char *what)
{
	fprintf(stderr, "fuzz_ike_msg: %s\n", what);
	abort();
}

/* The builder's output must parse back into what it was made from. */
static void
sa_round_trip(const struct ike_proposal *p, unsigned n, uint8_t exchange)
{
	static uint8_t mem[65536];
	static struct ike_proposal again[MAX_PROPS];
	struct ike_buf b;
	struct ike_pl pl[2];
	unsigned k, m;
	char err[256];

	for (unsigned i = 0; i < n; i++)	/* only what the builder can express */
		for (unsigned t = 0; t < p[i].n_tr; t++)
			if (p[i].tr[t].key_len == IKE_KEY_LEN_UNUSABLE)
				return;
	ike_buf_init(&b, mem, sizeof(mem));
	ike_build_sa(&b, p, n);
	if (b.overflow)
		return;
	if (ike_chain_parse(IKE_PL_SA, mem, b.len, pl, 2, &k, err, sizeof(err)) != 0 || k != 1)
		die("built SA payload: chain");
	if (ike_sa_parse(pl[0].body, pl[0].len, exchange, again, MAX_PROPS, &m, err,
			 sizeof(err)) != 0)
		die("built SA payload does not parse");
	if (m != n)
		die("SA round trip: proposal count");
	for (unsigned i = 0; i < n; i++) {
		if (again[i].num != p[i].num || again[i].proto != p[i].proto ||
		    again[i].spi_len != p[i].spi_len || again[i].n_tr != p[i].n_tr ||
		    memcmp(again[i].spi, p[i].spi, p[i].spi_len) != 0)
			die("SA round trip: proposal");
		for (unsigned t = 0; t < p[i].n_tr; t++)
			if (again[i].tr[t].type != p[i].tr[t].type ||
			    again[i].tr[t].id != p[i].tr[t].id ||
			    again[i].tr[t].key_len != p[i].tr[t].key_len)
				die("SA round trip: transform");
	}
}

static void
ts_round_trip(uint8_t type, const struct ike_ts *ts, unsigned n)
{
	static uint8_t mem[8192];
	struct ike_ts again[MAX_TS];
	struct ike_buf b;
	struct ike_pl pl[2];
	unsigned k, m;
	char err[256];

	for (unsigned i = 0; i < n; i++)	/* unknown selector types are not rebuilt */
		if (ts[i].type != IKE_TS_IPV4_ADDR_RANGE && ts[i].type != IKE_TS_IPV6_ADDR_RANGE)
			return;
	ike_buf_init(&b, mem, sizeof(mem));
	ike_build_ts(&b, type, ts, n);
	if (b.overflow)
		return;
	if (ike_chain_parse(type, mem, b.len, pl, 2, &k, err, sizeof(err)) != 0 || k != 1 ||
	    ike_ts_parse(pl[0].body, pl[0].len, again, MAX_TS, &m, err, sizeof(err)) != 0)
		die("built TS payload does not parse");
	if (m != n || memcmp(again, ts, n * sizeof(*ts)) != 0)
		die("TS round trip");
}

/* CERT and CERTREQ bodies are built again and must come back the same. */
static void
cert_round_trip(const struct ike_pl *p, const struct ike_cert *c)
{
	static uint8_t mem[65536 + 8];
	struct ike_pl pl[2];
	struct ike_buf b;
	unsigned k;
	char err[256];

	ike_buf_init(&b, mem, sizeof(mem));
	ike_build_cert(&b, p->type, c);
	if (b.overflow || ike_chain_parse(p->type, mem, b.len, pl, 2, &k, err, sizeof(err)) != 0 ||
	    k != 1 || pl[0].len != p->len || memcmp(pl[0].body, p->body, p->len) != 0)
		die("CERT/CERTREQ round trip");
}

/* SIGNATURE_HASH_ALGORITHMS: every id below 32 in the mask, and back. */
static void
sig_hashes(const struct ike_notify *nt)
{
	uint8_t out[64];
	uint32_t mask, again;
	size_t n;
	char err[256];

	if (ike_sig_hashes_parse(nt->data, nt->data_len, &mask, err, sizeof(err)) != 0)
		return;
	n = ike_sig_hashes_build(mask, out, sizeof(out));
	if (mask != 0 && (n == 0 || ike_sig_hashes_parse(out, n, &again, err, sizeof(err)) != 0 ||
			  again != mask))
		die("SIGNATURE_HASH_ALGORITHMS round trip");
}

static void chain(uint8_t first, const uint8_t *p, size_t len, uint8_t exchange, int depth);

/* An Encrypted Fragment: its fields in range, its data inside the payload. */
static void
skf(const struct ike_pl *p)
{
	struct ike_skf s;
	char err[256];

	if (ike_skf_parse(p, 32, &s, err, sizeof(err)) != 0)
		return;
	if (s.number == 0 || s.total == 0 || s.number > s.total || s.total > 32)
		die("SKF number/total out of range");
	if (s.data + s.len != p->body + p->len || s.len + IKE_SKF_HDR_LEN != p->len)
		die("SKF data not its payload's");
}

/* CP: built again from the attributes read, the same body must come out. */
static void
cp_round_trip(const struct ike_pl *p, const struct ike_cp *cp)
{
	static uint8_t mem[65536 + 8];
	struct ike_pl pl[2];
	struct ike_buf b;
	unsigned k;
	char err[256];

	for (unsigned i = 0; i < cp->n; i++)
		if (cp->attr[i].value + cp->attr[i].len > p->body + p->len)
			die("CP attribute past its payload");
	/* the reserved bits (CP header, attribute R bit) are not kept: compare parses */
	ike_buf_init(&b, mem, sizeof(mem));
	ike_build_cp(&b, cp);
	if (b.overflow || ike_chain_parse(IKE_PL_CP, mem, b.len, pl, 2, &k, err, sizeof(err)) != 0 ||
	    k != 1 || pl[0].len != p->len)
		die("CP round trip: length");
	{
		static struct ike_cp again;

		if (ike_cp_parse(pl[0].body, pl[0].len, &again, err, sizeof(err)) != 0 ||
		    again.cfg_type != cp->cfg_type || again.n != cp->n)
			die("CP round trip: does not parse back");
		for (unsigned i = 0; i < cp->n; i++)
			if (again.attr[i].type != cp->attr[i].type ||
			    again.attr[i].len != cp->attr[i].len ||
			    memcmp(again.attr[i].value, cp->attr[i].value, cp->attr[i].len) != 0)
				die("CP round trip: attribute");
	}
}

static void
payload(const struct ike_pl *p, uint8_t exchange)
{
	static struct ike_cp cp;
	struct ike_cert c;
	static struct ike_proposal props[MAX_PROPS];
	struct ike_ts ts[MAX_TS];
	struct ike_notify nt;
	struct ike_delete d;
	struct ike_auth a;
	struct ike_ke ke;
	struct ike_id id;
	unsigned n;
	char err[256];

	switch (p->type) {
	case IKE_PL_SA:
		if (ike_sa_parse(p->body, p->len, exchange, props, MAX_PROPS, &n, err,
				 sizeof(err)) == 0)
			sa_round_trip(props, n, exchange);
		break;
	case IKE_PL_KE:
		if (ike_ke_parse(p->body, p->len, &ke, err, sizeof(err)) == 0 &&
		    ke.data + ke.len > p->body + p->len)
			die("KE data past its payload");
		break;
	case IKE_PL_NONCE:
		ike_nonce_parse(p->body, p->len, err, sizeof(err));
		break;
	case IKE_PL_NOTIFY:
		if (ike_notify_parse(p->body, p->len, &nt, err, sizeof(err)) != 0)
			break;
		if (nt.data + nt.data_len > p->body + p->len)
			die("Notify data past its payload");
		if (nt.type == IKE_N_SIGNATURE_HASH_ALGORITHMS)
			sig_hashes(&nt);
		break;
	case IKE_PL_CERT:
	case IKE_PL_CERTREQ:
		if ((p->type == IKE_PL_CERT ? ike_cert_parse : ike_certreq_parse)(p->body, p->len,
				&c, err, sizeof(err)) != 0)
			break;
		if (c.data + c.len != p->body + p->len)
			die("CERT data not its payload's");
		cert_round_trip(p, &c);
		break;
	case IKE_PL_IDI:
	case IKE_PL_IDR:
		if (ike_id_parse(p->body, p->len, &id, err, sizeof(err)) == 0 &&
		    (id.data + id.len > p->body + p->len || id.body != p->body ||
		     id.body_len != p->len))
			die("ID data past its payload, or IDx' not the body");
		break;
	case IKE_PL_AUTH:
		if (ike_auth_parse(p->body, p->len, &a, err, sizeof(err)) == 0 &&
		    a.data + a.len > p->body + p->len)
			die("AUTH data past its payload");
		break;
	case IKE_PL_DELETE:
		if (ike_delete_parse(p->body, p->len, &d, err, sizeof(err)) == 0 &&
		    d.spis + (size_t)d.count * d.spi_len > p->body + p->len)
			die("Delete SPIs past the payload");
		break;
	case IKE_PL_TSI:
	case IKE_PL_TSR:
		if (ike_ts_parse(p->body, p->len, ts, MAX_TS, &n, err, sizeof(err)) == 0)
			ts_round_trip(p->type, ts, n);
		break;
	case IKE_PL_SKF:
		skf(p);
		break;
	case IKE_PL_CP:
		if (ike_cp_parse(p->body, p->len, &cp, err, sizeof(err)) == 0)
			cp_round_trip(p, &cp);
		break;
	default:
		break;
	}
}

static void
chain(uint8_t first, const uint8_t *p, size_t len, uint8_t exchange, int depth)
{
	struct ike_pl pl[MAX_PL];
	unsigned n = 0;
	char err[256];
	int rc = ike_chain_parse(first, p, len, pl, MAX_PL, &n, err, sizeof(err));

	if (rc != 0 && rc != -ENOTSUP)
		return;
	if (n > MAX_PL || (rc == -ENOTSUP && n == 0))
		die("chain: payload count");
	if (rc == -ENOTSUP && !pl[n - 1].critical)
		die("chain: -ENOTSUP on a payload that is not critical");
	for (unsigned i = 0; i < n; i++) {
		if (pl[i].body < p || pl[i].body + pl[i].len > p + len)
			die("chain: a payload body outside the message");
		if ((pl[i].type == IKE_PL_SK || pl[i].type == IKE_PL_SKF) && i != n - 1)
			die("chain: SK not last");
		if (rc == 0)
			payload(&pl[i], exchange);
	}
	/* an SK body, as if decrypted: the inner chain starts with inner_first */
	if (rc == 0 && n > 0 && pl[n - 1].type == IKE_PL_SK && depth == 0)
		chain(pl[n - 1].inner_first, pl[n - 1].body, pl[n - 1].len, exchange, 1);
	/* fragment 1 of an SKF: what follows its two fields, as if decrypted */
	if (rc == 0 && n > 0 && pl[n - 1].type == IKE_PL_SKF && depth == 0 &&
	    pl[n - 1].len >= IKE_SKF_HDR_LEN)
		chain(pl[n - 1].inner_first, pl[n - 1].body + IKE_SKF_HDR_LEN,
		      pl[n - 1].len - IKE_SKF_HDR_LEN, exchange, 1);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ike_hdr h;
	char err[256];
	uint8_t *copy;

	/* an exact-size heap copy: ASan sees any read past the datagram */
	copy = malloc(size ? size : 1);
	if (copy == NULL)
		return 0;
	memcpy(copy, data, size);
	if (ike_hdr_parse(copy, size, &h, err, sizeof(err)) == 0) {
		if (h.length != size)
			die("header: length is not the datagram's");
		chain(h.next, copy + IKE_HDR_LEN, size - IKE_HDR_LEN, h.exchange, 0);
	}
	free(copy);
	return 0;
}
