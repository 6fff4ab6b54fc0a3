/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_ike_msg.c - table-driven tests of the IKEv2 codec (ike_msg.c):
 *  - messages: each is a header and a list of payloads.  Those with a vector
 *    (bytes built by scapy, testdata/ike_msg_vectors.h) are parsed and every
 *    field compared with the list, then built from the list and compared byte
 *    for byte; the others are built, parsed and compared (round trips);
 *  - malformed: a vector with fields overwritten, or a message built on
 *    purpose, and the one error (code and message) it must give;
 *  - loops over every truncation and over single-byte changes of the vectors,
 *    each in a heap block of exactly its size so that ASan sees any read
 *    outside it, and over every buffer size too small for a message.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ike_msg.h"
#include "testdata/ike_msg_strongswan.h"
#include "testdata/ike_msg_vectors.h"

#define MAX_PL		16
#define MAX_PROP	8
#define MAX_TS		8
#define MAX_ITEMS	12
#define ERR_LEN		256
#define MSG_MAX		2048
#define N_ELEMS(a)	(sizeof(a) / sizeof((a)[0]))

enum kind { K_SA, K_KE, K_NONCE, K_NOTIFY, K_ID, K_AUTH, K_TS, K_DELETE, K_RAW, K_SK };

/* One payload of a message as the builder takes it and the parser must give it back. */
struct item {
	enum kind kind;
	uint8_t type;			/* ID, TS, RAW, SK: the payload type */
	bool critical;			/* RAW */
	const struct ike_proposal *prop;	/* SA */
	const struct ike_ts *ts;	/* TS */
	unsigned n;			/* SA, TS */
	struct ike_notify nt;
	struct ike_id id;
	struct ike_auth auth;
	struct ike_delete del;
	uint16_t group;			/* KE */
	uint8_t inner_first;		/* SK */
	const uint8_t *data;		/* KE, NONCE, RAW, SK */
	size_t len;
};

struct msg_case {
	const char *name;
	const uint8_t *vec;		/* scapy's bytes; NULL: a round trip only */
	size_t vec_len;
	uint8_t first;			/* IKE_PL_NONE: a whole message, else a bare chain */
	struct ike_hdr h;
	struct item it[MAX_ITEMS];
	unsigned n;
};

#define BYTES(a)	.data = (a), .len = sizeof(a)
#define IV4(a, b, c, d)	{ a, b, c, d }
#define SPI_R1		{ 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18 }
#define SPI_I1		{ 1, 2, 3, 4, 5, 6, 7, 8 }

static const struct ike_proposal sa_init_prop[] = {
	{ .num = 1, .proto = IKE_PROTO_IKE, .n_tr = 4, .tr = {
		{ IKE_TR_ENCR, IKE_ENCR_AES_GCM_16, 256 },
		{ IKE_TR_PRF, IKE_PRF_HMAC_SHA2_256, -1 },
		{ IKE_TR_DH, IKE_DH_ECP256, -1 }, { IKE_TR_DH, IKE_DH_CURVE25519, -1 } } },
	{ .num = 2, .proto = IKE_PROTO_IKE, .n_tr = 4, .tr = {
		{ IKE_TR_ENCR, IKE_ENCR_AES_CBC, 128 },
		{ IKE_TR_PRF, IKE_PRF_HMAC_SHA2_256, -1 },
		{ IKE_TR_INTEG, IKE_INTEG_HMAC_SHA2_256_128, -1 },
		{ IKE_TR_DH, IKE_DH_ECP256, -1 } } },
};

static const struct ike_proposal esp_prop[] = {
	{ .num = 1, .proto = IKE_PROTO_ESP, .spi_len = 4, .spi = { 0xc0, 0x01, 0x02, 0x03 },
	  .n_tr = 2, .tr = { { IKE_TR_ENCR, IKE_ENCR_AES_GCM_16, 256 },
			     { IKE_TR_ESN, IKE_ESN_NO, -1 } } },
};

static const struct ike_ts tsi[] = {
	{ IKE_TS_IPV4_ADDR_RANGE, 0, 0, 65535, IV4(10, 1, 0, 0), IV4(10, 1, 0, 255) },
	{ IKE_TS_IPV6_ADDR_RANGE, 17, 500, 500,
	  { 0x20, 0x01, 0x0d, 0xb8, 0, 1 }, { 0x20, 0x01, 0x0d, 0xb8, 0, 1, [14] = 0xff, 0xff } },
};

static const struct ike_ts tsr[] = {
	{ IKE_TS_IPV4_ADDR_RANGE, 6, 1024, 2047, IV4(10, 2, 0, 0), IV4(10, 2, 255, 255) },
};

static const uint8_t idr_v4[] = { 198, 19, 0, 2 };

/* Round trips only. */
static const struct ike_proposal rekey_prop[] = {
	{ .num = 1, .proto = IKE_PROTO_IKE, .spi_len = 8, .spi = { 9, 8, 7, 6, 5, 4, 3, 2 },
	  .n_tr = 4, .tr = { { IKE_TR_ENCR, IKE_ENCR_AES_CBC, 256 },
			     { IKE_TR_INTEG, IKE_INTEG_HMAC_SHA2_256_128, -1 },
			     { IKE_TR_PRF, IKE_PRF_HMAC_SHA2_256, -1 },
			     { IKE_TR_DH, IKE_DH_CURVE25519, -1 } } },
};

/* AH and ESP together (one number: AND), then ESP alone. */
static const struct ike_proposal child_prop[] = {
	{ .num = 1, .proto = IKE_PROTO_AH, .spi_len = 4, .spi = { 0xa0, 0, 0, 1 }, .n_tr = 2,
	  .tr = { { IKE_TR_INTEG, IKE_INTEG_HMAC_SHA2_256_128, -1 },
		  { IKE_TR_ESN, IKE_ESN_YES, -1 } } },
	{ .num = 1, .proto = IKE_PROTO_ESP, .spi_len = 4, .spi = { 0xe0, 0, 0, 1 }, .n_tr = 1,
	  .tr = { { IKE_TR_ENCR, IKE_ENCR_AES_CBC, 128 } } },
	{ .num = 2, .proto = IKE_PROTO_ESP, .spi_len = 4, .spi = { 0xe0, 0, 0, 2 }, .n_tr = 3,
	  .tr = { { IKE_TR_ENCR, IKE_ENCR_AES_GCM_16, 128 }, { IKE_TR_ESN, IKE_ESN_NO, -1 },
		  { IKE_TR_ESN, IKE_ESN_YES, -1 } } },
};

static struct ike_proposal max_prop[1];	/* IKE_MAX_TRANSFORMS transforms, filled in main */

static const struct ike_ts child_tsi[] = {
	{ IKE_TS_IPV6_ADDR_RANGE, 0, 65535, 0, { 0x20, 0x01, 0x0d, 0xb8 },
	  { 0x20, 0x01, 0x0d, 0xb8, [4] = 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	    0xff, 0xff, 0xff, 0xff } },
	{ IKE_TS_IPV4_ADDR_RANGE, 1, 8, 8, IV4(192, 0, 2, 7), IV4(192, 0, 2, 7) },
};

static const struct ike_ts all_v4[] = {
	{ IKE_TS_IPV4_ADDR_RANGE, 0, 0, 65535, IV4(0, 0, 0, 0), IV4(255, 255, 255, 255) },
};

static const uint8_t id_v6[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 1 };
static const uint8_t key_id[] = { 'k', 'e', 'y', 0, 0xff };
static const uint8_t nonce16[16] = { 1 };
static uint8_t nonce256[256];
static const uint8_t nonce257[257];	/* one too many, for make_nonce() */
static const uint8_t ke32[32] = { [31] = 0x31 };
static const uint8_t spis3[12] = { 0xe0, 0, 0, 1, 0xe0, 0, 0, 2, 0xe0, 0, 0, 3 };
static const uint8_t cookie[16] = { 0xc0, 0x0c, [15] = 0x1e };
static const uint8_t vendor[] = "dpvpn";
static const uint8_t unknown[] = { 1, 2, 3 };
static const uint8_t skf_body[] = { 0, 1, 0, 2, 0xaa, 0xbb, 0xcc, 0xdd };

static const struct msg_case msgs[] = {
	{ "vector IKE_SA_INIT request", ike_v_sa_init, sizeof(ike_v_sa_init), IKE_PL_NONE,
	  { SPI_I1, { 0 }, 0, 0, IKE_SA_INIT, IKE_F_INITIATOR, 0, 0 }, {
		{ K_SA, .prop = sa_init_prop, .n = 2 },
		{ K_KE, .group = IKE_DH_ECP256, BYTES(ike_v_ke_data) },
		{ K_NONCE, BYTES(ike_v_nonce) },
		{ K_NOTIFY, .nt = { 0, 0, IKE_N_NAT_DETECTION_SOURCE_IP, NULL, ike_v_natd_src,
				    sizeof(ike_v_natd_src) } },
		{ K_NOTIFY, .nt = { 0, 0, IKE_N_NAT_DETECTION_DESTINATION_IP, NULL,
				    ike_v_natd_dst, sizeof(ike_v_natd_dst) } } }, 5 },
	{ "vector IKE_AUTH (SK)", ike_v_ike_auth, sizeof(ike_v_ike_auth), IKE_PL_NONE,
	  { SPI_I1, SPI_R1, 0, 0, IKE_AUTH, IKE_F_INITIATOR, 1, 0 }, {
		{ K_SK, .type = IKE_PL_SK, .inner_first = IKE_PL_IDI, BYTES(ike_v_sk_body) } },
	  1 },
	{ "vector INFORMATIONAL (Delete)", ike_v_informational, sizeof(ike_v_informational),
	  IKE_PL_NONE, { SPI_I1, SPI_R1, 0, 0, IKE_INFORMATIONAL, 0, 7, 0 }, {
		{ K_DELETE, .del = { IKE_PROTO_ESP, 4, 2, ike_v_del_spis } },
		{ K_DELETE, .del = { IKE_PROTO_IKE, 0, 0, NULL } } }, 2 },
	{ "vector IKE_AUTH inner chain", ike_v_inner, sizeof(ike_v_inner), IKE_PL_IDI,
	  { .exchange = IKE_AUTH }, {
		{ K_ID, .type = IKE_PL_IDI, .id = { IKE_ID_FQDN, ike_v_id_fqdn,
						    sizeof(ike_v_id_fqdn), NULL, 0 } },
		{ K_ID, .type = IKE_PL_IDR, .id = { IKE_ID_IPV4_ADDR, idr_v4, 4, NULL, 0 } },
		{ K_AUTH, .auth = { IKE_AUTH_SHARED_KEY_MIC, ike_v_auth_data,
				    sizeof(ike_v_auth_data) } },
		{ K_SA, .prop = esp_prop, .n = 1 },
		{ K_TS, .type = IKE_PL_TSI, .ts = tsi, .n = 2 },
		{ K_TS, .type = IKE_PL_TSR, .ts = tsr, .n = 1 },
		{ K_NOTIFY, .nt = { 0, 0, IKE_N_INITIAL_CONTACT, NULL, NULL, 0 } },
		{ K_NOTIFY, .nt = { IKE_PROTO_ESP, 4, IKE_N_REKEY_SA, ike_v_rekey_spi,
				    NULL, 0 } } }, 8 },
	{ "round trip CREATE_CHILD_SA IKE rekey", NULL, 0, IKE_PL_NONE,
	  { SPI_I1, SPI_R1, 0, 0, IKE_CREATE_CHILD_SA, IKE_F_INITIATOR, 2, 0 }, {
		{ K_SA, .prop = rekey_prop, .n = 1 },
		{ K_NONCE, BYTES(nonce16) },
		{ K_KE, .group = IKE_DH_CURVE25519, BYTES(ke32) } }, 3 },
	{ "round trip CREATE_CHILD_SA child", NULL, 0, IKE_PL_NONE,
	  { SPI_I1, SPI_R1, 0, 0, IKE_CREATE_CHILD_SA, IKE_F_RESPONSE, 0xfffffffe, 0 }, {
		{ K_SA, .prop = child_prop, .n = 3 },
		{ K_NOTIFY, .nt = { IKE_PROTO_ESP, 4, IKE_N_REKEY_SA, spis3, NULL, 0 } },
		{ K_NONCE, BYTES(nonce256) },
		{ K_TS, .type = IKE_PL_TSI, .ts = child_tsi, .n = 2 },
		{ K_TS, .type = IKE_PL_TSR, .ts = all_v4, .n = 1 } }, 5 },
	{ "round trip INFORMATIONAL, all payload kinds", NULL, 0, IKE_PL_NONE,
	  { SPI_I1, SPI_R1, 0, 0, IKE_INFORMATIONAL, IKE_F_INITIATOR | IKE_F_RESPONSE, 3, 0 }, {
		{ K_ID, .type = IKE_PL_IDI, .id = { IKE_ID_KEY_ID, key_id, sizeof(key_id),
						    NULL, 0 } },
		{ K_ID, .type = IKE_PL_IDR, .id = { IKE_ID_IPV6_ADDR, id_v6, 16, NULL, 0 } },
		{ K_AUTH, .auth = { IKE_AUTH_SHARED_KEY_MIC, cookie, 1 } },
		{ K_NOTIFY, .nt = { IKE_PROTO_ESP, 4, IKE_N_CHILD_SA_NOT_FOUND, spis3,
				    cookie, 6 } },
		{ K_DELETE, .del = { IKE_PROTO_ESP, 4, 3, spis3 } },
		{ K_DELETE, .del = { IKE_PROTO_AH, 4, 1, spis3 + 8 } },
		{ K_RAW, .type = IKE_PL_VENDOR, .critical = true, BYTES(vendor) },
		{ K_RAW, .type = 60, BYTES(unknown) },
		{ K_RAW, .type = IKE_PL_CP, .data = NULL, .len = 0 },
		{ K_NOTIFY, .nt = { 0, 0, IKE_N_COOKIE, NULL, cookie, sizeof(cookie) } } },
	  10 },
	{ "round trip IKE_SA_INIT, 32 transforms", NULL, 0, IKE_PL_NONE,
	  { SPI_I1, { 0 }, 0, 0, IKE_SA_INIT, IKE_F_INITIATOR, 0, 0 }, {
		{ K_SA, .prop = max_prop, .n = 1 },
		{ K_NONCE, BYTES(nonce256) } }, 2 },
	{ "round trip IKE_SA_INIT response, COOKIE", NULL, 0, IKE_PL_NONE,
	  { SPI_I1, { 0 }, 0, 0, IKE_SA_INIT, IKE_F_RESPONSE, 0, 0 }, {
		{ K_NOTIFY, .nt = { 0, 0, IKE_N_COOKIE, NULL, cookie, sizeof(cookie) } } }, 1 },
	{ "round trip IKE_AUTH, SKF", NULL, 0, IKE_PL_NONE,
	  { SPI_I1, SPI_R1, 0, 0, IKE_AUTH, IKE_F_INITIATOR, 1, 0 }, {
		{ K_SK, .type = IKE_PL_SKF, .inner_first = IKE_PL_IDI, BYTES(skf_body) } }, 1 },
	{ "round trip INFORMATIONAL, empty SK", NULL, 0, IKE_PL_NONE,
	  { SPI_I1, SPI_R1, 0, 0, IKE_INFORMATIONAL, IKE_F_RESPONSE, 9, 0 }, {
		{ K_SK, .type = IKE_PL_SK, .inner_first = IKE_PL_NONE, BYTES(skf_body) } }, 1 },
};

enum { V_SA_INIT, V_IKE_AUTH, V_INFORMATIONAL, V_INNER, N_VECTORS };

static uint8_t
item_type(const struct item *it)
{
	static const uint8_t types[] = {
		[K_SA] = IKE_PL_SA, [K_KE] = IKE_PL_KE, [K_NONCE] = IKE_PL_NONCE,
		[K_NOTIFY] = IKE_PL_NOTIFY, [K_AUTH] = IKE_PL_AUTH, [K_DELETE] = IKE_PL_DELETE,
	};

	return it->type ? it->type : types[it->kind];
}

static void
build_item(struct ike_buf *b, const struct item *it)
{
	uint8_t *ct;
	size_t start;

	switch (it->kind) {
	case K_SA: ike_build_sa(b, it->prop, it->n); break;
	case K_KE: ike_build_ke(b, it->group, it->data, it->len); break;
	case K_NONCE: ike_build_nonce(b, it->data, it->len); break;
	case K_NOTIFY: ike_build_notify(b, &it->nt); break;
	case K_ID: ike_build_id(b, it->type, &it->id); break;
	case K_AUTH: ike_build_auth(b, &it->auth); break;
	case K_TS: ike_build_ts(b, it->type, it->ts, it->n); break;
	case K_DELETE: ike_build_delete(b, &it->del); break;
	case K_RAW:
		start = ike_pl_begin(b, it->type, it->critical);
		ike_put_bytes(b, it->data, it->len);
		ike_pl_end(b, start);
		break;
	case K_SK:
		/* As the caller will: the ciphertext is written into reserved room. */
		start = ike_sk_begin(b, it->type, it->inner_first);
		ct = ike_reserve(b, it->len);
		if (ct != NULL)
			memcpy(ct, it->data, it->len);
		ike_pl_end(b, start);
		break;
	}
}

/* Build c into mem: a whole message (finished) or a bare chain; its length. */
static size_t
build_msg(const struct msg_case *c, uint8_t *mem, size_t cap)
{
	struct ike_buf b;

	ike_buf_init(&b, mem, cap);
	if (c->first == IKE_PL_NONE)
		ike_build_hdr(&b, &c->h);
	for (unsigned i = 0; i < c->n; i++)
		build_item(&b, &c->it[i]);
	if (c->first == IKE_PL_NONE)
		assert_int_equal(ike_finish(&b), 0);
	else
		assert_int_equal(b.first, c->first);
	assert_false(b.overflow);
	return b.len;
}

static void
expect_bytes(const uint8_t *got, size_t glen, const uint8_t *want, size_t wlen)
{
	assert_int_equal(glen, wlen);
	if (wlen != 0)
		assert_memory_equal(got, want, wlen);
}

static void
expect_sa(const struct ike_pl *pl, uint8_t exchange, const struct ike_proposal *want,
	  unsigned wn)
{
	struct ike_proposal got[MAX_PROP];
	char err[ERR_LEN] = "";
	unsigned n;

	assert_int_equal(ike_sa_parse(pl->body, pl->len, exchange, got, MAX_PROP, &n, err,
				      sizeof(err)), 0);
	assert_int_equal(n, wn);
	for (unsigned i = 0; i < n; i++) {
		assert_int_equal(got[i].num, want[i].num);
		assert_int_equal(got[i].proto, want[i].proto);
		expect_bytes(got[i].spi, got[i].spi_len, want[i].spi, want[i].spi_len);
		assert_int_equal(got[i].n_tr, want[i].n_tr);
		for (unsigned t = 0; t < got[i].n_tr; t++) {
			assert_int_equal(got[i].tr[t].type, want[i].tr[t].type);
			assert_int_equal(got[i].tr[t].id, want[i].tr[t].id);
			assert_int_equal(got[i].tr[t].key_len, want[i].tr[t].key_len);
		}
	}
}

static void
expect_ts(const struct ike_pl *pl, const struct ike_ts *want, unsigned wn)
{
	struct ike_ts got[MAX_TS];
	char err[ERR_LEN] = "";
	unsigned n;

	assert_int_equal(ike_ts_parse(pl->body, pl->len, got, MAX_TS, &n, err, sizeof(err)), 0);
	assert_int_equal(n, wn);
	for (unsigned i = 0; i < n; i++) {
		size_t alen = want[i].type == IKE_TS_IPV4_ADDR_RANGE ? 4 : 16;

		assert_int_equal(got[i].type, want[i].type);
		assert_int_equal(got[i].ip_proto, want[i].ip_proto);
		assert_int_equal(got[i].start_port, want[i].start_port);
		assert_int_equal(got[i].end_port, want[i].end_port);
		assert_memory_equal(got[i].start, want[i].start, alen);
		assert_memory_equal(got[i].end, want[i].end, alen);
	}
}

static void
expect_notify(const struct ike_pl *pl, const struct ike_notify *want)
{
	struct ike_notify got;
	char err[ERR_LEN] = "";

	assert_int_equal(ike_notify_parse(pl->body, pl->len, &got, err, sizeof(err)), 0);
	assert_int_equal(got.proto, want->proto);
	assert_int_equal(got.type, want->type);
	expect_bytes(got.spi, got.spi_len, want->spi, want->spi_len);
	expect_bytes(got.data, got.data_len, want->data, want->data_len);
}

static void
expect_id_auth_delete(const struct ike_pl *pl, const struct item *it)
{
	struct ike_delete d;
	struct ike_auth a;
	struct ike_id id;
	char err[ERR_LEN] = "";

	if (it->kind == K_ID) {
		assert_int_equal(ike_id_parse(pl->body, pl->len, &id, err, sizeof(err)), 0);
		assert_int_equal(id.type, it->id.type);
		expect_bytes(id.data, id.len, it->id.data, it->id.len);
		/* IDx' for AUTH: the body, generic header excluded (section 2.15). */
		assert_ptr_equal(id.body, pl->body);
		assert_int_equal(id.body_len, pl->len);
	} else if (it->kind == K_AUTH) {
		assert_int_equal(ike_auth_parse(pl->body, pl->len, &a, err, sizeof(err)), 0);
		assert_int_equal(a.method, it->auth.method);
		expect_bytes(a.data, a.len, it->auth.data, it->auth.len);
	} else {
		assert_int_equal(ike_delete_parse(pl->body, pl->len, &d, err, sizeof(err)), 0);
		assert_int_equal(d.proto, it->del.proto);
		assert_int_equal(d.count, it->del.count);
		expect_bytes(d.spis, (size_t)d.count * d.spi_len, it->del.spis,
			     (size_t)it->del.count * it->del.spi_len);
		for (unsigned i = 0; i < d.count; i++)
			assert_int_equal(ike_delete_spi(&d, i),
					 (uint32_t)it->del.spis[4 * i] << 24 |
					 (uint32_t)it->del.spis[4 * i + 1] << 16 |
					 (uint32_t)it->del.spis[4 * i + 2] << 8 |
					 it->del.spis[4 * i + 3]);
	}
}

static void
expect_item(const struct ike_pl *pl, uint8_t exchange, const struct item *it)
{
	char err[ERR_LEN] = "";
	struct ike_ke ke;

	assert_int_equal(pl->type, item_type(it));
	assert_int_equal(pl->critical, it->kind == K_RAW && it->critical);
	switch (it->kind) {
	case K_SA: expect_sa(pl, exchange, it->prop, it->n); break;
	case K_KE:
		assert_int_equal(ike_ke_parse(pl->body, pl->len, &ke, err, sizeof(err)), 0);
		assert_int_equal(ke.group, it->group);
		expect_bytes(ke.data, ke.len, it->data, it->len);
		break;
	case K_NONCE:
		assert_int_equal(ike_nonce_parse(pl->body, pl->len, err, sizeof(err)), 0);
		expect_bytes(pl->body, pl->len, it->data, it->len);
		break;
	case K_NOTIFY: expect_notify(pl, &it->nt); break;
	case K_ID: case K_AUTH: case K_DELETE: expect_id_auth_delete(pl, it); break;
	case K_TS: expect_ts(pl, it->ts, it->n); break;
	case K_RAW: expect_bytes(pl->body, pl->len, it->data, it->len); break;
	case K_SK:
		assert_int_equal(pl->inner_first, it->inner_first);
		expect_bytes(pl->body, pl->len, it->data, it->len);
		break;
	}
}

/* Parse m as c says it is, and compare every field with c. */
static void
expect_msg(const struct msg_case *c, const uint8_t *m, size_t len)
{
	struct ike_pl pl[MAX_PL];
	char err[ERR_LEN] = "";
	uint8_t first = c->first;
	struct ike_hdr h;
	unsigned n;
	int rc;

	if (first == IKE_PL_NONE) {
		assert_int_equal(ike_hdr_parse(m, len, &h, err, sizeof(err)), 0);
		assert_memory_equal(h.spi_i, c->h.spi_i, IKE_SPI_LEN);
		assert_memory_equal(h.spi_r, c->h.spi_r, IKE_SPI_LEN);
		assert_int_equal(h.next, item_type(&c->it[0]));
		assert_int_equal(h.version, IKE_VERSION);
		assert_int_equal(h.exchange, c->h.exchange);
		assert_int_equal(h.flags, c->h.flags);
		assert_int_equal(h.msg_id, c->h.msg_id);
		assert_int_equal(h.length, len);
		first = h.next;
		m += IKE_HDR_LEN;
		len -= IKE_HDR_LEN;
	}
	rc = ike_chain_parse(first, m, len, pl, MAX_PL, &n, err, sizeof(err));
	if (rc != 0)
		fail_msg("%s: %s", c->name, err);
	assert_int_equal(n, c->n);
	for (unsigned i = 0; i < n; i++)
		expect_item(&pl[i], c->h.exchange, &c->it[i]);
}

static void test_msg(void **state)
{
	const struct msg_case *c = *state;
	uint8_t mem[MSG_MAX];
	size_t len;

	if (c->vec != NULL)
		expect_msg(c, c->vec, c->vec_len);
	len = build_msg(c, mem, sizeof(mem));
	if (c->vec != NULL)
		expect_bytes(mem, len, c->vec, c->vec_len);
	expect_msg(c, mem, len);
}

/* Every parser over m: the first error, or 0. */
static int
parse_body(const struct ike_pl *pl, uint8_t exchange, char *err, size_t elen)
{
	struct ike_proposal prop[MAX_PROP];
	struct ike_ts ts[MAX_TS];
	struct ike_notify nt;
	struct ike_delete d;
	struct ike_auth a;
	struct ike_ke ke;
	struct ike_id id;
	unsigned n;

	switch (pl->type) {
	case IKE_PL_SA:
		return ike_sa_parse(pl->body, pl->len, exchange, prop, MAX_PROP, &n, err, elen);
	case IKE_PL_KE: return ike_ke_parse(pl->body, pl->len, &ke, err, elen);
	case IKE_PL_NONCE: return ike_nonce_parse(pl->body, pl->len, err, elen);
	case IKE_PL_NOTIFY: return ike_notify_parse(pl->body, pl->len, &nt, err, elen);
	case IKE_PL_IDI: case IKE_PL_IDR: return ike_id_parse(pl->body, pl->len, &id, err, elen);
	case IKE_PL_AUTH: return ike_auth_parse(pl->body, pl->len, &a, err, elen);
	case IKE_PL_DELETE: return ike_delete_parse(pl->body, pl->len, &d, err, elen);
	case IKE_PL_TSI: case IKE_PL_TSR:
		return ike_ts_parse(pl->body, pl->len, ts, MAX_TS, &n, err, elen);
	default: return 0;
	}
}

static int
parse_all(const uint8_t *m, size_t len, uint8_t first, char *err, size_t elen)
{
	uint8_t exchange = IKE_AUTH;
	struct ike_pl pl[MAX_PL];
	struct ike_hdr h;
	unsigned n;
	int rc;

	if (first == IKE_PL_NONE) {
		rc = ike_hdr_parse(m, len, &h, err, elen);
		if (rc != 0)
			return rc;
		first = h.next;
		exchange = h.exchange;
		m += IKE_HDR_LEN;
		len -= IKE_HDR_LEN;
	}
	rc = ike_chain_parse(first, m, len, pl, MAX_PL, &n, err, elen);
	for (unsigned i = 0; rc == 0 && i < n; i++)
		rc = parse_body(&pl[i], exchange, err, elen);
	return rc;
}

/*
 * Malformed (and a few odd but valid) messages.  A patch writes val (size
 * bytes, big-endian) at off from the start of payload pl of the vector (its
 * generic header; -1: the IKE header).  grow adds zero bytes at the end (or
 * removes some); the header's length follows unless keep_len.
 */
struct patch {
	int pl;
	uint16_t off;
	uint8_t size;
	uint32_t val;
};

struct bad_case {
	const char *name;
	int base;			/* index into msgs[] (a vector) */
	struct patch p[3];
	int grow;
	bool keep_len;
	void (*make)(struct ike_buf *b, int arg);	/* instead of base: build it */
	int arg;
	int rc;
	const char *err;		/* a part of the message */
};

#define HDR		(-1)
#define P(pl, off, size, val)	{ pl, off, size, val }
/* Offsets in the vectors (see make_ike_msg_vectors.py): SA body at 4, its proposal at 4. */
#define PROP1		4
#define PROP2		(4 + 44)
#define TR1		(PROP1 + 8)

static void
hdr(struct ike_buf *b, uint8_t exchange)
{
	struct ike_hdr h = { SPI_I1, SPI_R1, 0, 0, exchange, IKE_F_INITIATOR, 1, 0 };

	ike_build_hdr(b, &h);
}

static void
make_nonce(struct ike_buf *b, int len)
{
	hdr(b, IKE_SA_INIT);
	ike_build_nonce(b, nonce257, (size_t)len);
}

/* A KE, ID or AUTH payload of its 4-byte fixed part only. */
static void
make_empty(struct ike_buf *b, int type)
{
	size_t start;

	hdr(b, IKE_AUTH);
	start = ike_pl_begin(b, (uint8_t)type, false);
	if (type == IKE_PL_KE)
		ike_put32(b, (uint32_t)IKE_DH_ECP256 << 16);
	else
		ike_put32(b, (uint32_t)(type == IKE_PL_IDI ? IKE_ID_FQDN : IKE_AUTH_SHARED_KEY_MIC)
			  << 24);
	ike_pl_end(b, start);
}

static const struct ike_ts bad_ts[] = {
	{ IKE_TS_IPV4_ADDR_RANGE, 0, 0, 65535, IV4(10, 0, 0, 2), IV4(10, 0, 0, 1) },
	{ IKE_TS_IPV6_ADDR_RANGE, 0, 0, 65535, { 0x20, 0x01, [15] = 2 },
	  { 0x20, 0x01, [15] = 1 } },
	{ IKE_TS_IPV4_ADDR_RANGE, 6, 20, 10, IV4(10, 0, 0, 1), IV4(10, 0, 0, 1) },
	{ IKE_TS_IPV4_ADDR_RANGE, 0, 65535, 0, IV4(10, 0, 0, 1), IV4(10, 0, 0, 1) },
};

static void
make_ts(struct ike_buf *b, int which)
{
	hdr(b, IKE_AUTH);
	ike_build_ts(b, IKE_PL_TSI, &bad_ts[which], 1);
}

/*
 * An SA payload of one proposal written by hand (the builder refuses what it
 * cannot encode): arg is SA_ARG(protocol, SPI size, transform count, exchange),
 * the SPI zeros and no transform actually there.
 */
#define SA_ARG(proto, spi_len, n_tr, exchange) \
	((proto) << 24 | (spi_len) << 16 | (n_tr) << 8 | (exchange))

static void
make_sa(struct ike_buf *b, int arg)
{
	const uint8_t spi_len = (uint8_t)(arg >> 16);
	uint8_t spi[255] = { 0 };
	size_t start;

	hdr(b, (uint8_t)arg);
	start = ike_pl_begin(b, IKE_PL_SA, false);
	ike_put16(b, 0);			/* last proposal */
	ike_put16(b, (uint16_t)(8 + spi_len));
	ike_put8(b, 1);
	ike_put8(b, (uint8_t)(arg >> 24));
	ike_put8(b, spi_len);
	ike_put8(b, (uint8_t)(arg >> 8));
	ike_put_bytes(b, spi, spi_len);
	ike_pl_end(b, start);
}


static const struct bad_case bads[] = {
	{ "header: length above the datagram", V_SA_INIT, { P(HDR, 24, 4, 285) },
	  .keep_len = true, .rc = -EBADMSG, .err = "ike.length: 285, datagram 284" },
	{ "header: length below the datagram", V_SA_INIT, { P(HDR, 24, 4, 280) },
	  .keep_len = true, .rc = -EBADMSG, .err = "ike.length: 280, datagram 284" },
	{ "header: shorter than itself", V_SA_INIT, .grow = -264, .keep_len = true,
	  .rc = -EBADMSG, .err = "ike: datagram of 20 bytes, the header alone is 28" },
	{ "header: major version 3", V_SA_INIT, { P(HDR, 17, 1, 0x30) }, .rc = -EPROTO,
	  .err = "ike.version: 0x30, major version 3 above 2" },
	{ "header: major version 1", V_SA_INIT, { P(HDR, 17, 1, 0x10) }, .rc = -EBADMSG,
	  .err = "ike.version: 0x10, major version 1 is not IKEv2" },
	{ "header: minor version ignored", V_SA_INIT, { P(HDR, 17, 1, 0x2f) } },
	{ "header: reserved flags ignored", V_SA_INIT, { P(HDR, 19, 1, 0xcf) } },
	{ "header: zero spi_i", V_SA_INIT, { P(HDR, 0, 4, 0), P(HDR, 4, 4, 0) },
	  .rc = -EBADMSG, .err = "ike.spi_i: zero" },
	{ "chain: payload length 0", V_SA_INIT, { P(1, 2, 2, 0) }, .rc = -EBADMSG,
	  .err = "payload 2 (KE).length: 0, 164 bytes left" },
	{ "chain: payload length 3", V_SA_INIT, { P(1, 2, 2, 3) }, .rc = -EBADMSG,
	  .err = "payload 2 (KE).length: 3, 164 bytes left" },
	{ "chain: payload length past the end", V_SA_INIT, { P(4, 2, 2, 29) },
	  .rc = -EBADMSG, .err = "payload 5 (Notify).length: 29, 28 bytes left" },
	{ "chain: trailing bytes", V_SA_INIT, .grow = 4, .rc = -EBADMSG,
	  .err = "payload 5 (Notify): 4 bytes after the last payload" },
	{ "chain: ends before a payload it announces", V_SA_INIT,
	  { P(4, 0, 1, IKE_PL_NOTIFY) }, .rc = -EBADMSG,
	  .err = "payload 6 (Notify): 0 bytes left, its header is 4" },
	{ "chain: SK not last (trailing bytes)", V_IKE_AUTH, .grow = 4, .rc = -EBADMSG,
	  .err = "payload 1 (SK): 4 bytes after it, it must be the last" },
	{ "chain: SK not last (a payload after it)", V_IKE_AUTH, { P(0, 2, 2, 84) },
	  .rc = -EBADMSG, .err = "payload 1 (SK): 8 bytes after it, it must be the last" },
	{ "chain: unknown critical payload", V_SA_INIT, { P(2, 0, 1, 60), P(3, 1, 1, 0x80) },
	  .rc = -ENOTSUP, .err = "payload 4: type 60 is unknown and critical" },
	{ "chain: unknown payload, not critical, kept", V_SA_INIT, { P(2, 0, 1, 60) } },
	{ "chain: critical bit on a known payload", V_SA_INIT, { P(3, 1, 1, 0x80) } },
	{ "chain: reserved bits ignored", V_SA_INIT, { P(3, 1, 1, 0x7f) } },
	{ "sa: first proposal number 2", V_SA_INIT, { P(0, PROP1 + 4, 1, 2) },
	  .rc = -EBADMSG, .err = "sa.proposal[1].num: 2, expected 1" },
	{ "sa: proposal number skips one", V_SA_INIT, { P(0, PROP2 + 4, 1, 3) },
	  .rc = -EBADMSG, .err = "sa.proposal[2].num: 3, expected the previous or 2" },
	{ "sa: proposal number repeated (AND)", V_SA_INIT, { P(0, PROP2 + 4, 1, 1) } },
	{ "sa: transform count above the transforms", V_SA_INIT, { P(0, PROP1 + 7, 1, 5) },
	  .rc = -EBADMSG, .err = "sa.proposal[1].transforms: 5, but transform 4 is marked last" },
	{ "sa: transform count below the transforms", V_SA_INIT, { P(0, PROP1 + 7, 1, 3) },
	  .rc = -EBADMSG,
	  .err = "sa.proposal[1].transforms: 3, but transform 3 is marked not last" },
	{ "sa: transform count 0", V_SA_INIT, { P(0, PROP1 + 7, 1, 0) }, .rc = -EBADMSG,
	  .err = "sa.proposal[1]: 36 bytes after transform 0 (transforms: 0)" },
	{ "sa: transform count above the maximum", V_SA_INIT, { P(0, PROP1 + 7, 1, 65) },
	  .rc = -EBADMSG, .err = "sa.proposal[1].transforms: 65, at most 64" },
	{ "sa: bad transform marker", V_SA_INIT, { P(0, TR1, 1, 1) }, .rc = -EBADMSG,
	  .err = "sa.proposal[1].transform[1].last: 1, expected 3" },
	{ "sa: bad proposal marker", V_SA_INIT, { P(0, PROP1, 1, 1) }, .rc = -EBADMSG,
	  .err = "sa.proposal[1].last: 1, expected 0 (last) or 2 (more)" },
	{ "sa: more proposals announced than present", V_SA_INIT, { P(0, PROP2, 1, 2) },
	  .rc = -EBADMSG, .err = "sa.proposal[3]: 0 bytes left, its header is 8" },
	{ "sa: bytes after the last proposal", V_SA_INIT, { P(0, PROP1, 1, 0) },
	  .rc = -EBADMSG, .err = "sa: 44 bytes after proposal 1, marked last" },
	{ "sa: proposal past the SA", V_SA_INIT, { P(0, PROP2 + 2, 2, 45) }, .rc = -EBADMSG,
	  .err = "sa.proposal[2].length: 45, 44 bytes left" },
	{ "sa: proposal shorter than its header", V_SA_INIT, { P(0, PROP1 + 2, 2, 7) },
	  .rc = -EBADMSG, .err = "sa.proposal[1].length: 7, 88 bytes left" },
	{ "sa: SPI past its proposal", V_INNER, { P(3, PROP1 + 2, 2, 10) }, .rc = -EBADMSG,
	  .err = "sa.proposal[1].spi_size: 4, proposal length 10" },
	{ "sa: an SPI in IKE_SA_INIT", V_SA_INIT, { P(0, PROP1 + 6, 1, 8) }, .rc = -EBADMSG,
	  .err = "sa.proposal[1].spi_size: 8, expected 0 for protocol 1 in exchange 34" },
	{ "sa: transform length 7", V_SA_INIT, { P(0, TR1 + 2, 2, 7) }, .rc = -EBADMSG,
	  .err = "sa.proposal[1].transform[1].length: 7, 36 bytes left" },
	{ "sa: transform past its proposal", V_SA_INIT, { P(0, TR1 + 2, 2, 37) },
	  .rc = -EBADMSG, .err = "sa.proposal[1].transform[1].length: 37, 36 bytes left" },
	{ "sa: unknown attribute spoils only its transform", V_SA_INIT,
	  { P(0, TR1 + 8, 2, 0x800f) } },
	{ "sa: TLV attribute past its transform", V_SA_INIT, { P(0, TR1 + 8, 4, 0x000e0001) },
	  .rc = -EBADMSG, .err = "sa.proposal[1].transform[1].attribute 14.length: 1, 0 bytes" },
	{ "sa: attribute shorter than its header", V_SA_INIT,
	  { P(0, TR1 + 2, 2, 10) },
	  .rc = -EBADMSG, .err = "sa.proposal[1].transform[1].attribute: 2 bytes, at least 4" },
	{ "sa: ESP SPI of 8 bytes", .make = make_sa, .arg = SA_ARG(3, 8, 0, IKE_AUTH),
	  .rc = -EBADMSG,
	  .err = "sa.proposal[1].spi_size: 8, expected 4 for protocol 3 in exchange 35" },
	{ "sa: IKE SPI missing in CREATE_CHILD_SA", .make = make_sa,
	  .arg = SA_ARG(1, 0, 0, IKE_CREATE_CHILD_SA), .rc = -EBADMSG,
	  .err = "sa.proposal[1].spi_size: 0, expected 8 for protocol 1 in exchange 36" },
	{ "sa: IKE SPI in CREATE_CHILD_SA", .make = make_sa,
	  .arg = SA_ARG(1, 8, 0, IKE_CREATE_CHILD_SA) },
	{ "sa: unknown protocol, SPI of 8 kept", .make = make_sa,
	  .arg = SA_ARG(9, 8, 0, IKE_AUTH) },
	{ "sa: unknown protocol, SPI of 9", .make = make_sa, .arg = SA_ARG(9, 9, 0, IKE_AUTH),
	  .rc = -EBADMSG, .err = "sa.proposal[1].spi_size: 9, at most 8 (protocol 9)" },
	{ "sa: 65 transforms", .make = make_sa, .arg = SA_ARG(1, 0, 65, IKE_SA_INIT),
	  .rc = -EBADMSG, .err = "sa.proposal[1].transforms: 65, at most 64" },
	{ "ke: no data", .make = make_empty, .arg = IKE_PL_KE, .rc = -EBADMSG,
	  .err = "ke.data: empty (group 19)" },
	{ "nonce: 15 bytes", .make = make_nonce, .arg = 15, .rc = -EBADMSG,
	  .err = "nonce: 15 bytes, expected 16..256" },
	{ "nonce: 16 bytes", .make = make_nonce, .arg = 16 },
	{ "nonce: 256 bytes", .make = make_nonce, .arg = 256 },
	{ "nonce: 257 bytes", .make = make_nonce, .arg = 257, .rc = -EBADMSG,
	  .err = "nonce: 257 bytes, expected 16..256" },
	{ "notify: SPI past the payload", V_SA_INIT, { P(3, 5, 1, 21) }, .rc = -EBADMSG,
	  .err = "notify.spi_size: 21, 20 bytes follow (type 16388)" },
	{ "notify: SPI the whole payload", V_SA_INIT, { P(3, 5, 1, 20) } },
	{ "id: no data", .make = make_empty, .arg = IKE_PL_IDI, .rc = -EBADMSG,
	  .err = "id.data: empty (type 2)" },
	{ "id: IPv6 address of 4 bytes", V_INNER, { P(1, 4, 1, IKE_ID_IPV6_ADDR) },
	  .rc = -EBADMSG, .err = "id.data: 4 bytes for an IPv6 address, expected 16" },
	{ "id: IPv4 address of 16 bytes", V_INNER, { P(0, 4, 1, IKE_ID_IPV4_ADDR) },
	  .rc = -EBADMSG, .err = "id.data: 16 bytes for an IPv4 address, expected 4" },
	{ "auth: no data", .make = make_empty, .arg = IKE_PL_AUTH, .rc = -EBADMSG,
	  .err = "auth.data: empty (method 2)" },
	{ "delete: count above the SPIs", V_INFORMATIONAL, { P(0, 6, 2, 3) }, .rc = -EBADMSG,
	  .err = "delete.count: 3 SPIs of 4 bytes, but 8 bytes follow" },
	{ "delete: count below the SPIs", V_INFORMATIONAL, { P(0, 6, 2, 1) }, .rc = -EBADMSG,
	  .err = "delete.count: 1 SPIs of 4 bytes, but 8 bytes follow" },
	{ "delete: IKE with an SPI size", V_INFORMATIONAL, { P(1, 5, 1, 4) }, .rc = -EBADMSG,
	  .err = "delete.spi_size: 4, count 0; IKE has none" },
	{ "delete: IKE with a count", V_INFORMATIONAL, { P(1, 6, 2, 1) }, .rc = -EBADMSG,
	  .err = "delete.spi_size: 0, count 1; IKE has none" },
	{ "delete: ESP SPI of 8 bytes", V_INFORMATIONAL, { P(0, 5, 1, 8) }, .rc = -EBADMSG,
	  .err = "delete.spi_size: 8, expected 4 for protocol 3" },
	{ "delete: unknown protocol", V_INFORMATIONAL, { P(0, 4, 1, 4) }, .rc = -EBADMSG,
	  .err = "delete.proto: 4, expected 1 (IKE), 2 (AH) or 3 (ESP)" },
	{ "ts: start address above end (IPv4)", .make = make_ts, .arg = 0, .rc = -EBADMSG,
	  .err = "ts[1].end: below start" },
	{ "ts: start address above end (IPv6)", .make = make_ts, .arg = 1, .rc = -EBADMSG,
	  .err = "ts[1].end: below start" },
	{ "ts: start port above end", .make = make_ts, .arg = 2, .rc = -EBADMSG,
	  .err = "ts[1].end_port: 10, below start_port 20" },
	{ "ts: OPAQUE ports (65535..0)", .make = make_ts, .arg = 3 },
	{ "ts: IPv4 selector of 17 bytes", V_INNER, { P(4, 10, 2, 17) }, .rc = -EBADMSG,
	  .err = "ts[1].length: 17, expected 16 for type 7" },
	{ "ts: IPv6 selector of 20 bytes", V_INNER, { P(4, 26, 2, 20) }, .rc = -EBADMSG,
	  .err = "ts[2].length: 20, expected 40 for type 8" },
	{ "ts: selector past the payload", V_INNER, { P(4, 10, 2, 57) }, .rc = -EBADMSG,
	  .err = "ts[1].length: 57, 56 bytes left" },
	{ "ts: selector shorter than its header", V_INNER, { P(4, 10, 2, 3) },
	  .rc = -EBADMSG, .err = "ts[1].length: 3, 56 bytes left" },
	{ "ts: count above the selectors", V_INNER, { P(4, 4, 1, 3) }, .rc = -EBADMSG,
	  .err = "ts[3]: 0 bytes left, at least 4 (count 3)" },
	{ "ts: count below the selectors", V_INNER, { P(4, 4, 1, 1) }, .rc = -EBADMSG,
	  .err = "ts: 40 bytes after selector 1 (count 1)" },
	{ "ts: count 0", V_INNER, { P(4, 4, 1, 0) }, .rc = -EBADMSG,
	  .err = "ts.count: 0, at least 1" },
	{ "ts: unknown type kept", V_INNER, { P(4, 8, 1, 9) } },
};

#define N_MSGS		N_ELEMS(msgs)
#define N_BADS		N_ELEMS(bads)

static void
put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/* The offset of each payload's generic header in vector v. */
static unsigned
vector_offsets(const struct msg_case *v, size_t off[MAX_PL])
{
	size_t skip = v->first == IKE_PL_NONE ? IKE_HDR_LEN : 0;
	uint8_t first = v->first == IKE_PL_NONE ? v->vec[16] : v->first;
	struct ike_pl pl[MAX_PL];
	char err[ERR_LEN] = "";
	unsigned n;

	assert_int_equal(ike_chain_parse(first, v->vec + skip, v->vec_len - skip, pl, MAX_PL,
					 &n, err, sizeof(err)), 0);
	for (unsigned i = 0; i < n; i++)
		off[i] = (size_t)(pl[i].body - v->vec) - IKE_GEN_HDR_LEN;
	return n;
}

static size_t
patch_vector(const struct bad_case *c, uint8_t *mem, size_t cap)
{
	const struct msg_case *v = &msgs[c->base];
	size_t off[MAX_PL], len = v->vec_len + (size_t)(ptrdiff_t)c->grow;
	unsigned n = vector_offsets(v, off);

	assert_true(len <= cap);
	memset(mem, 0, cap);
	memcpy(mem, v->vec, c->grow < 0 ? len : v->vec_len);
	for (unsigned i = 0; i < N_ELEMS(c->p) && c->p[i].size != 0; i++) {
		const struct patch *p = &c->p[i];
		size_t at = (p->pl == HDR ? 0 : off[p->pl]) + p->off;

		assert_true(p->pl < (int)n && at + p->size <= len);
		for (unsigned k = 0; k < p->size; k++)
			mem[at + k] = (uint8_t)(p->val >> 8 * (p->size - 1 - k));
	}
	if (v->first == IKE_PL_NONE && !c->keep_len)
		put32(mem + 24, (uint32_t)len);
	return len;
}

/* Parse a copy of m in a block of exactly len bytes: ASan sees any read past it. */
static int
parse_exact(const uint8_t *m, size_t len, uint8_t first, char *err, size_t elen)
{
	uint8_t *copy = malloc(len);
	int rc;

	assert_true(copy != NULL || len == 0);
	if (len != 0)
		memcpy(copy, m, len);
	err[0] = '\0';
	rc = parse_all(copy, len, first, err, elen);
	free(copy);
	return rc;
}

static void test_bad(void **state)
{
	const struct bad_case *c = *state;
	uint8_t first = IKE_PL_NONE, mem[MSG_MAX];
	char err[ERR_LEN];
	struct ike_buf b;
	size_t len;
	int rc;

	if (c->make != NULL) {
		ike_buf_init(&b, mem, sizeof(mem));
		c->make(&b, c->arg);
		assert_int_equal(ike_finish(&b), 0);
		len = b.len;
	} else {
		first = msgs[c->base].first;
		len = patch_vector(c, mem, sizeof(mem));
	}
	rc = parse_exact(mem, len, first, err, sizeof(err));
	if (rc != c->rc || (c->rc != 0 && strstr(err, c->err) == NULL))
		fail_msg("got %d '%s', expected %d '%s'", rc, err, c->rc, c->err ? c->err : "");
}

/* Every truncation of every vector fails, the header's length fixed up or not. */
static void test_truncations(void **state)
{
	char err[ERR_LEN];
	unsigned checked = 0;

	(void)state;
	for (unsigned v = 0; v < N_VECTORS; v++) {
		const struct msg_case *c = &msgs[v];
		uint8_t m[MSG_MAX];

		for (size_t len = 0; len < c->vec_len; len++) {
			memcpy(m, c->vec, len);
			if (parse_exact(m, len, c->first, err, sizeof(err)) == 0)
				fail_msg("%s: parsed cut to %zu bytes", c->name, len);
			checked++;
			if (c->first != IKE_PL_NONE || len < IKE_HDR_LEN)
				continue;
			put32(m + 24, (uint32_t)len);
			if (parse_exact(m, len, c->first, err, sizeof(err)) == 0)
				fail_msg("%s: parsed cut to %zu bytes, length fixed", c->name,
					 len);
			checked++;
		}
	}
	print_message("%u truncated messages rejected\n", checked);
}

static bool
must_fill(uint8_t type)
{
	return type == IKE_PL_SA || type == IKE_PL_TSI || type == IKE_PL_TSR ||
	       type == IKE_PL_DELETE;
}

/* Each payload's body cut at every length, alone in its block, for each parser. */
static void test_body_truncations(void **state)
{
	char err[ERR_LEN];

	(void)state;
	for (unsigned v = 0; v < N_VECTORS; v++) {
		const struct msg_case *c = &msgs[v];
		size_t off[MAX_PL];
		unsigned n = vector_offsets(c, off);

		for (unsigned i = 0; i < n; i++) {
			const uint8_t *g = c->vec + off[i];
			struct ike_pl pl = { .type = item_type(&c->it[i]) };
			size_t full = (size_t)(g[2] << 8 | g[3]) - IKE_GEN_HDR_LEN;

			for (size_t len = 0; len <= full; len++) {
				uint8_t *body = malloc(len);
				int rc;

				assert_true(body != NULL || len == 0);
				if (len != 0)
					memcpy(body, g + IKE_GEN_HDR_LEN, len);
				pl.body = body;
				pl.len = (uint16_t)len;
				rc = parse_body(&pl, c->h.exchange, err, sizeof(err));
				free(body);
				if (len == full ? rc != 0 : must_fill(pl.type) && rc == 0)
					fail_msg("%s: payload %u cut to %zu: %d", c->name, i + 1,
						 len, rc);
			}
		}
	}
}

/* Single-byte changes everywhere: any result but a crash, an error always explained. */
static void test_mutations(void **state)
{
	char err[ERR_LEN];
	unsigned runs = 0, rejected = 0;

	(void)state;
	for (unsigned v = 0; v < N_VECTORS; v++) {
		const struct msg_case *c = &msgs[v];
		uint8_t m[MSG_MAX];

		memcpy(m, c->vec, c->vec_len);
		for (size_t i = 0; i < c->vec_len; i++) {
			const uint8_t orig = m[i];
			const uint8_t vals[] = { 0, 0xff, orig ^ 1, orig ^ 0x80, orig + 1 };

			for (unsigned k = 0; k < N_ELEMS(vals); k++) {
				int rc;

				m[i] = vals[k];
				rc = parse_exact(m, c->vec_len, c->first, err, sizeof(err));
				assert_true(rc == 0 || rc == -EBADMSG || rc == -EPROTO ||
					    rc == -ENOTSUP);
				if (rc != 0)
					assert_true(err[0] != '\0');
				rejected += rc != 0;
				runs++;
			}
			m[i] = orig;
		}
	}
	print_message("%u changed messages, %u rejected\n", runs, rejected);
}

/* Every buffer too small for a message overflows, nothing written past its end. */
static void test_overflow(void **state)
{
	(void)state;
	for (unsigned v = 0; v < N_MSGS; v++) {
		const struct msg_case *c = &msgs[v];
		uint8_t full[MSG_MAX];
		size_t need = build_msg(c, full, sizeof(full));

		for (size_t cap = 0; cap <= need; cap++) {
			uint8_t *mem = malloc(cap);
			struct ike_buf b;
			int rc;

			assert_true(mem != NULL || cap == 0);
			ike_buf_init(&b, mem, cap);
			if (c->first == IKE_PL_NONE)
				ike_build_hdr(&b, &c->h);
			for (unsigned i = 0; i < c->n; i++)
				build_item(&b, &c->it[i]);
			rc = c->first == IKE_PL_NONE ? ike_finish(&b) : b.overflow ? -ENOSPC : 0;
			assert_int_equal(rc, cap == need ? 0 : -ENOSPC);
			assert_true(b.len <= cap);
			if (cap == need)
				assert_memory_equal(mem, full, need);
			free(mem);
		}
	}
}

/* Counts and lengths too large for their fields; values the builder cannot write. */
static void test_field_limits(void **state)
{
	static const size_t nonces[] = { 65531, 65532 };
	struct ike_ts ts[256] = { { 0 } };
	struct ike_proposal p = { .num = 1, .proto = IKE_PROTO_IKE };
	uint8_t *mem = calloc(1, 70000), *big = calloc(1, 65536);
	struct ike_buf b;

	(void)state;
	assert_non_null(mem);
	assert_non_null(big);
	for (unsigned i = 0; i < N_ELEMS(ts); i++)
		ts[i].type = IKE_TS_IPV4_ADDR_RANGE;
	for (unsigned i = 0; i < N_ELEMS(nonces); i++) {
		ike_buf_init(&b, mem, 70000);
		hdr(&b, IKE_SA_INIT);
		ike_build_nonce(&b, big, nonces[i]);
		assert_int_equal(ike_finish(&b), i == 0 ? 0 : -ENOSPC);
	}
	for (unsigned i = 0; i < 4; i++) {
		ike_buf_init(&b, mem, 70000);
		hdr(&b, IKE_AUTH);
		ts[0].type = i == 0 ? 9 : IKE_TS_IPV4_ADDR_RANGE;
		p.n_tr = i == 2 ? IKE_MAX_TRANSFORMS + 1 : 0;
		p.spi_len = i == 3 ? IKE_SPI_LEN + 1 : 0;
		if (i < 2)
			ike_build_ts(&b, IKE_PL_TSI, ts, i == 0 ? 1 : 256);
		else
			ike_build_sa(&b, &p, 1);
		assert_int_equal(ike_finish(&b), -ENOSPC);
	}
	ike_buf_init(&b, mem, 8);
	assert_non_null(ike_reserve(&b, 8));
	assert_null(ike_reserve(&b, 1));
	assert_int_equal(ike_finish(&b), -ENOSPC);
	ike_buf_init(&b, mem, 100);
	hdr(&b, IKE_AUTH);
	ike_pl_end(&b, ike_sk_begin(&b, IKE_PL_SK, IKE_PL_IDI));
	ike_build_nonce(&b, big, 16);		/* nothing may follow SK */
	assert_int_equal(mem[IKE_HDR_LEN], IKE_PL_IDI);
	assert_int_equal(ike_finish(&b), -ENOSPC);
	ike_buf_init(&b, mem, 100);
	ike_build_nonce(&b, big, 16);
	assert_int_equal(b.first, IKE_PL_NONCE);
	assert_int_equal(ike_finish(&b), -EINVAL);	/* a bare chain has no header */
	free(big);
	free(mem);
}

/* Limits of the output arrays, and what -ENOTSUP leaves for the caller. */
static void test_chain_limits(void **state)
{
	const uint8_t *chain = ike_v_sa_init + IKE_HDR_LEN;
	size_t off[MAX_PL], len = sizeof(ike_v_sa_init) - IKE_HDR_LEN;
	uint8_t m[sizeof(ike_v_sa_init)];
	struct ike_proposal prop[1];
	struct ike_pl pl[MAX_PL];
	struct ike_ts ts[1];
	char err[ERR_LEN];
	unsigned n;

	(void)state;
	assert_int_equal(ike_chain_parse(IKE_PL_SA, chain, len, pl, 2, &n, err, sizeof(err)),
			 -EBADMSG);
	assert_string_equal(err, "payload 3 (Nonce): more than 2 payloads");
	assert_int_equal(ike_chain_parse(IKE_PL_SA, chain, len, pl, 5, &n, err, sizeof(err)), 0);
	assert_int_equal(ike_sa_parse(pl[0].body, pl[0].len, IKE_SA_INIT, prop, 1, &n, err,
				      sizeof(err)), -EBADMSG);
	assert_string_equal(err, "sa: more than 1 proposals");
	assert_int_equal(ike_chain_parse(IKE_PL_IDI, ike_v_inner, sizeof(ike_v_inner), pl,
					 MAX_PL, &n, err, sizeof(err)), 0);
	assert_int_equal(ike_ts_parse(pl[4].body, pl[4].len, ts, 1, &n, err, sizeof(err)),
			 -EBADMSG);
	assert_string_equal(err, "ts: more than 1 selectors");

	/* Nonce -> type 60, critical: the caller answers with the type it finds here. */
	vector_offsets(&msgs[V_SA_INIT], off);
	memcpy(m, ike_v_sa_init, sizeof(m));
	m[off[2]] = 60;
	m[off[3] + 1] = 0x80;
	assert_int_equal(ike_chain_parse(IKE_PL_SA, m + IKE_HDR_LEN, len, pl, MAX_PL, &n, err,
					 sizeof(err)), -ENOTSUP);
	assert_int_equal(n, 4);
	assert_int_equal(pl[n - 1].type, 60);
	assert_true(pl[n - 1].critical);
}

/* Key Length and the attributes that make a transform unusable, in one transform. */
static const struct attr_case {
	const char *name;
	uint8_t attrs[12];
	size_t len;
	int16_t key_len;
	const char *err;	/* NULL: parses */
} attr_cases[] = {
	{ "none", { 0 }, 0, IKE_KEY_LEN_NONE, NULL },
	{ "Key Length 256", { 0x80, 0x0e, 0x01, 0x00 }, 4, 256, NULL },
	{ "Key Length 32768", { 0x80, 0x0e, 0x80, 0x00 }, 4, IKE_KEY_LEN_UNUSABLE, NULL },
	{ "Key Length as TLV", { 0x00, 0x0e, 0x00, 0x00 }, 4, IKE_KEY_LEN_UNUSABLE, NULL },
	{ "unknown TV", { 0x80, 0x0f, 0x01, 0x00 }, 4, IKE_KEY_LEN_UNUSABLE, NULL },
	{ "unknown, then Key Length", { 0x80, 0x0f, 0, 1, 0x80, 0x0e, 0, 128 }, 8,
	  IKE_KEY_LEN_UNUSABLE, NULL },
	{ "Key Length, then unknown", { 0x80, 0x0e, 0, 128, 0x80, 0x0f, 0, 1 }, 8,
	  IKE_KEY_LEN_UNUSABLE, NULL },
	{ "Key Length twice", { 0x80, 0x0e, 0, 128, 0x80, 0x0e, 1, 0 }, 8,
	  IKE_KEY_LEN_UNUSABLE, NULL },
	{ "TLV, then Key Length", { 0x00, 0x11, 0, 2, 0xaa, 0xbb, 0x80, 0x0e, 0, 128 }, 10,
	  IKE_KEY_LEN_UNUSABLE, NULL },
	{ "TLV past the transform", { 0x00, 0x11, 0, 3, 0xaa, 0xbb }, 6, 0,
	  "sa.proposal[1].transform[1].attribute 17.length: 3, 2 bytes left" },
	{ "attribute of 3 bytes", { 0x80, 0x0e, 0x01 }, 3, 0,
	  "sa.proposal[1].transform[1].attribute: 3 bytes, at least 4" },
};

static void test_attributes(void **state)
{
	(void)state;
	for (unsigned i = 0; i < N_ELEMS(attr_cases); i++) {
		const struct attr_case *c = &attr_cases[i];
		uint8_t tlen = (uint8_t)(8 + c->len), *body = malloc(8u + tlen);
		struct ike_proposal prop[1];
		char err[ERR_LEN] = "";
		unsigned n;
		int rc;

		/* One proposal (1, IKE, no SPI, one transform): ENCR AES-CBC. */
		assert_non_null(body);
		memcpy(body, (const uint8_t[]){ 0, 0, 0, (uint8_t)(8 + tlen), 1, 1, 0, 1,
						0, 0, 0, tlen, 1, 0, 0, 12 }, 16);
		memcpy(body + 16, c->attrs, c->len);
		rc = ike_sa_parse(body, 8u + tlen, IKE_SA_INIT, prop, 1, &n, err, sizeof(err));
		free(body);
		if (c->err == NULL && (rc != 0 || prop[0].tr[0].key_len != c->key_len))
			fail_msg("%s: %d '%s', key_len %d", c->name, rc, err,
				 rc ? 0 : prop[0].tr[0].key_len);
		if (c->err != NULL && (rc != -EBADMSG || strcmp(err, c->err) != 0))
			fail_msg("%s: %d '%s'", c->name, rc, err);
	}
}

/*
 * An answer's SA payload (section 3.3.1): one proposal that keeps the number
 * it had in the request.  Each case: the proposals built, then what
 * ike_sa_parse_answer() and ike_sa_parse() make of them.
 */
static const struct answer_case {
	const char *name;
	uint8_t exchange, proto, nums[3];
	unsigned n;
	const char *answer_err;		/* NULL: parses, num kept */
	bool request_ok;		/* ike_sa_parse accepts it too */
} answer_cases[] = {
	{ "IKE, number 1", IKE_SA_INIT, IKE_PROTO_IKE, { 1 }, 1, NULL, true },
	{ "IKE, number 3", IKE_SA_INIT, IKE_PROTO_IKE, { 3 }, 1, NULL, false },
	{ "ESP, number 255", IKE_AUTH, IKE_PROTO_ESP, { 255 }, 1, NULL, false },
	{ "ESP, number 2, CREATE_CHILD_SA", IKE_CREATE_CHILD_SA, IKE_PROTO_ESP, { 2 }, 1, NULL,
	  false },
	{ "number 0", IKE_AUTH, IKE_PROTO_ESP, { 0 }, 1,
	  "sa.proposal[1].num: 0, expected 1 to 255 in an answer", false },
	{ "two proposals", IKE_SA_INIT, IKE_PROTO_IKE, { 1, 2 }, 2,
	  "sa.proposal[1].last: 2, an answer has exactly one proposal", true },
	{ "two proposals of one number", IKE_AUTH, IKE_PROTO_ESP, { 2, 2 }, 2,
	  "sa.proposal[1].last: 2, an answer has exactly one proposal", false },
	{ "IKE with an SPI in IKE_SA_INIT", IKE_SA_INIT, IKE_PROTO_IKE, { 4 }, 1,
	  "sa.proposal[1].spi_size: 4, expected 0 for protocol 1 in exchange 34", false },
};

static size_t
build_answer_sa(const struct answer_case *c, uint8_t *mem, size_t cap)
{
	struct ike_proposal p[3];
	struct ike_buf b;

	memset(p, 0, sizeof(p));
	for (unsigned i = 0; i < c->n; i++) {
		p[i].num = c->nums[i];
		p[i].proto = c->proto;
		/* The last case puts an ESP-sized SPI on an IKE proposal. */
		p[i].spi_len = c->proto == IKE_PROTO_ESP || c->nums[0] == 4 ? 4 : 0;
		memcpy(p[i].spi, "\x0a\x0b\x0c\x0d", 4);
		p[i].n_tr = 1;
		p[i].tr[0] = (struct ike_transform){ IKE_TR_ENCR, IKE_ENCR_AES_GCM_16, 128 };
	}
	ike_buf_init(&b, mem, cap);
	ike_build_sa(&b, p, c->n);
	assert_false(b.overflow);
	return b.len;
}

static void test_sa_answer(void **state)
{
	(void)state;
	for (unsigned i = 0; i < N_ELEMS(answer_cases); i++) {
		const struct answer_case *c = &answer_cases[i];
		struct ike_proposal prop[MAX_PROP];
		uint8_t mem[256];
		char err[ERR_LEN] = "";
		size_t len = build_answer_sa(c, mem, sizeof(mem));
		unsigned n;
		int rc;

		rc = ike_sa_parse_answer(mem + IKE_GEN_HDR_LEN, len - IKE_GEN_HDR_LEN,
					 c->exchange, prop, err, sizeof(err));
		if (c->answer_err == NULL &&
		    (rc != 0 || prop[0].num != c->nums[0] || prop[0].proto != c->proto ||
		     prop[0].n_tr != 1 || prop[0].tr[0].key_len != 128))
			fail_msg("%s: %d '%s'", c->name, rc, err);
		if (c->answer_err != NULL && (rc != -EBADMSG || strcmp(err, c->answer_err) != 0))
			fail_msg("%s: %d '%s'", c->name, rc, err);
		rc = ike_sa_parse(mem + IKE_GEN_HDR_LEN, len - IKE_GEN_HDR_LEN, c->exchange,
				  prop, MAX_PROP, &n, err, sizeof(err));
		if ((rc == 0) != c->request_ok)
			fail_msg("%s: ike_sa_parse %d '%s'", c->name, rc, err);
	}
	/* Every truncation of a good answer is refused, and never read past. */
	for (size_t len = 0; len < 20; len++) {
		struct ike_proposal prop[1];
		uint8_t mem[256], *copy;
		char err[ERR_LEN];
		size_t full = build_answer_sa(&answer_cases[2], mem, sizeof(mem)) -
			      IKE_GEN_HDR_LEN;

		assert_true(len < full);
		copy = malloc(len ? len : 1);
		memcpy(copy, mem + IKE_GEN_HDR_LEN, len);
		assert_int_equal(ike_sa_parse_answer(copy, len, IKE_AUTH, prop, err,
						     sizeof(err)), -EBADMSG);
		free(copy);
	}
}

/* What the header gives: the reserved flags dropped, and all of it on -EPROTO. */
static void test_header(void **state)
{
	uint8_t m[sizeof(ike_v_informational)];
	char err[ERR_LEN];
	struct ike_hdr h;

	(void)state;
	memcpy(m, ike_v_informational, sizeof(m));
	m[19] = 0xff;
	assert_int_equal(ike_hdr_parse(m, sizeof(m), &h, err, sizeof(err)), 0);
	assert_int_equal(h.flags, IKE_F_INITIATOR | IKE_F_VERSION | IKE_F_RESPONSE);
	m[17] = 0x31;
	m[24] = 0xff;	/* a version 3 header may mean another layout: no other check */
	assert_int_equal(ike_hdr_parse(m, sizeof(m), &h, err, sizeof(err)), -EPROTO);
	assert_memory_equal(h.spi_i, ike_v_spi_i, IKE_SPI_LEN);
	assert_memory_equal(h.spi_r, ike_v_spi_r, IKE_SPI_LEN);
	assert_int_equal(h.version, 0x31);
	assert_int_equal(h.exchange, IKE_INFORMATIONAL);
	assert_int_equal(h.msg_id, 7);
	assert_string_equal(err, "ike.version: 0x31, major version 3 above 2");
}

/*
 * The SK payload as the IKE code will build one: the inner chain in its own
 * buffer, its first type given to ike_sk_begin(), IV and room for ciphertext
 * and ICV reserved, the message finished (the header and SK header are the
 * AEAD's associated data) and then "encrypted" (here: copied).  The parser
 * gives back the inner type and the body, and the body parses as the chain.
 */
/*
 * A peer's message: charon's IKE_SA_INIT request, every payload read (SA: one
 * proposal AES-GCM-16/128, PRF HMAC-SHA-256, group 19; KE 19 with 64 bytes;
 * a 32-byte nonce; five notifies: the two NAT detections and three that say
 * what charon supports, which a responder may ignore).
 */
static void test_strongswan_sa_init(void **state)
{
	const uint8_t *m = ike_v_strongswan_sa_init;
	size_t len = sizeof(ike_v_strongswan_sa_init);
	struct ike_proposal prop[4];
	struct ike_notify nt;
	struct ike_pl pl[16];
	struct ike_hdr h;
	struct ike_ke ke;
	unsigned n, np, notifies = 0;
	char err[256];

	(void)state;
	assert_int_equal(ike_hdr_parse(m, len, &h, err, sizeof(err)), 0);
	assert_int_equal(h.exchange, IKE_SA_INIT);
	assert_int_equal(h.msg_id, 0);
	assert_true(h.flags & IKE_F_INITIATOR);
	assert_int_equal(ike_chain_parse(h.next, m + IKE_HDR_LEN, len - IKE_HDR_LEN, pl, 16, &n,
					 err, sizeof(err)), 0);
	assert_int_equal(n, 8);
	assert_int_equal(pl[0].type, IKE_PL_SA);
	assert_int_equal(ike_sa_parse(pl[0].body, pl[0].len, IKE_SA_INIT, prop, 4, &np, err,
				      sizeof(err)), 0);
	assert_int_equal(np, 1);
	assert_int_equal(prop[0].proto, IKE_PROTO_IKE);
	assert_int_equal(prop[0].n_tr, 3);
	assert_int_equal(prop[0].tr[0].type, IKE_TR_ENCR);
	assert_int_equal(prop[0].tr[0].id, IKE_ENCR_AES_GCM_16);
	assert_int_equal(prop[0].tr[0].key_len, 128);
	assert_int_equal(prop[0].tr[1].id, IKE_PRF_HMAC_SHA2_256);
	assert_int_equal(prop[0].tr[2].type, IKE_TR_DH);
	assert_int_equal(prop[0].tr[2].id, IKE_DH_ECP256);
	assert_int_equal(pl[1].type, IKE_PL_KE);
	assert_int_equal(ike_ke_parse(pl[1].body, pl[1].len, &ke, err, sizeof(err)), 0);
	assert_int_equal(ke.group, IKE_DH_ECP256);
	assert_int_equal(ke.len, 64);
	assert_int_equal(pl[2].type, IKE_PL_NONCE);
	assert_int_equal(ike_nonce_parse(pl[2].body, pl[2].len, err, sizeof(err)), 0);
	assert_int_equal(pl[2].len, 32);
	for (unsigned i = 3; i < n; i++) {
		assert_int_equal(pl[i].type, IKE_PL_NOTIFY);
		assert_int_equal(ike_notify_parse(pl[i].body, pl[i].len, &nt, err, sizeof(err)),
				 0);
		if (nt.type == IKE_N_NAT_DETECTION_SOURCE_IP ||
		    nt.type == IKE_N_NAT_DETECTION_SOURCE_IP + 1)
			assert_int_equal(nt.data_len, 20);	/* SHA-1 */
		notifies++;
	}
	assert_int_equal(notifies, 5);
}

static void test_sk_flow(void **state)
{
	const struct msg_case *inner = &msgs[V_INNER];
	static const uint8_t iv[8] = { 0x1f, 0x1e };
	uint8_t pt[MSG_MAX], mem[MSG_MAX], *ct;
	struct ike_buf in, b;
	struct ike_pl pl[MAX_PL];
	struct ike_hdr h;
	char err[ERR_LEN];
	size_t start, ptlen;
	unsigned n;

	(void)state;
	ike_buf_init(&in, pt, sizeof(pt));
	for (unsigned i = 0; i < inner->n; i++)
		build_item(&in, &inner->it[i]);
	ptlen = in.len;
	ike_buf_init(&b, mem, sizeof(mem));
	ike_build_hdr(&b, &msgs[V_IKE_AUTH].h);
	start = ike_sk_begin(&b, IKE_PL_SK, in.first);
	ike_put_bytes(&b, iv, sizeof(iv));
	ct = ike_reserve(&b, ptlen + 16);
	ike_pl_end(&b, start);
	assert_int_equal(ike_finish(&b), 0);
	assert_non_null(ct);
	memcpy(ct, pt, ptlen);

	assert_int_equal(ike_hdr_parse(mem, b.len, &h, err, sizeof(err)), 0);
	assert_int_equal(h.next, IKE_PL_SK);
	assert_int_equal(ike_chain_parse(h.next, mem + IKE_HDR_LEN, b.len - IKE_HDR_LEN, pl,
					 MAX_PL, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 1);
	assert_int_equal(pl[0].inner_first, IKE_PL_IDI);
	assert_int_equal(pl[0].len, sizeof(iv) + ptlen + 16);
	expect_bytes(pl[0].body + sizeof(iv), ptlen, ike_v_inner, sizeof(ike_v_inner));
	expect_msg(inner, pl[0].body + sizeof(iv), ptlen);
}

/*
 * CERT, CERTREQ and SIGNATURE_HASH_ALGORITHMS (the [ikepki] issue): built
 * into a chain, compared with bytes written out by hand from RFC 7296 3.6,
 * 3.7 and RFC 7427 4, parsed back, and the malformed ones refused.
 */
static void test_cert_payloads(void **state)
{
	static const uint8_t der[] = { 0x30, 0x03, 0x02, 0x01, 0x07 };	/* stands for a cert */
	static const uint8_t want[] = {
		IKE_PL_CERTREQ, 0, 0, 10, IKE_CERT_X509_SIG, 0x30, 0x03, 0x02, 0x01, 0x07,
		IKE_PL_NOTIFY, 0, 0, 25, IKE_CERT_X509_SIG,
		0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19,
		IKE_PL_NONE, 0, 0, 16, 0, 0, 0x40, 0x2f, 0, 2, 0, 3, 0, 4, 0, 5,
	};
	uint8_t keyids[20], sh[16], mem[256];
	struct ike_cert c = { IKE_CERT_X509_SIG, der, sizeof(der) }, got;
	struct ike_notify nt = { .type = IKE_N_SIGNATURE_HASH_ALGORITHMS, .data = sh };
	struct ike_pl pl[4];
	struct ike_buf b;
	char err[ERR_LEN];
	uint32_t mask;
	unsigned n;

	(void)state;
	for (unsigned i = 0; i < sizeof(keyids); i++)
		keyids[i] = (uint8_t)i;
	nt.data_len = ike_sig_hashes_build(1u << 2 | 1u << 3 | 1u << 4 | 1u << 5, sh, sizeof(sh));
	assert_int_equal(nt.data_len, 8);
	assert_int_equal(ike_sig_hashes_build(1u << 2 | 1u << 3, sh, 3), 0);
	ike_buf_init(&b, mem, sizeof(mem));
	ike_build_cert(&b, IKE_PL_CERT, &c);
	c = (struct ike_cert){ IKE_CERT_X509_SIG, keyids, sizeof(keyids) };
	ike_build_cert(&b, IKE_PL_CERTREQ, &c);
	ike_build_notify(&b, &nt);
	assert_int_equal(b.first, IKE_PL_CERT);
	expect_bytes(mem, b.len, want, sizeof(want));
	assert_int_equal(ike_chain_parse(IKE_PL_CERT, mem, b.len, pl, 4, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 3);
	assert_int_equal(ike_cert_parse(pl[0].body, pl[0].len, &got, err, sizeof(err)), 0);
	assert_int_equal(got.encoding, IKE_CERT_X509_SIG);
	expect_bytes(got.data, got.len, der, sizeof(der));
	assert_int_equal(ike_certreq_parse(pl[1].body, pl[1].len, &got, err, sizeof(err)), 0);
	expect_bytes(got.data, got.len, keyids, sizeof(keyids));
	assert_int_equal(ike_notify_parse(pl[2].body, pl[2].len, &nt, err, sizeof(err)), 0);
	assert_int_equal(ike_sig_hashes_parse(nt.data, nt.data_len, &mask, err, sizeof(err)), 0);
	assert_int_equal(mask, 1u << 2 | 1u << 3 | 1u << 4 | 1u << 5);
	/* Unassigned ids of 32 and up are skipped, not refused. */
	assert_int_equal(ike_sig_hashes_parse((const uint8_t *)"\x00\x02\x01\x00", 4, &mask, err,
					      sizeof(err)), 0);
	assert_int_equal(mask, 1u << 2);
	/* Malformed: an odd or empty hash list, a CERT without data, a CERTREQ cut short. */
	assert_int_equal(ike_sig_hashes_parse(sh, 3, &mask, err, sizeof(err)), -EBADMSG);
	assert_int_equal(ike_sig_hashes_parse(sh, 0, &mask, err, sizeof(err)), -EBADMSG);
	assert_int_equal(ike_cert_parse(pl[0].body, 1, &got, err, sizeof(err)), -EBADMSG);
	assert_int_equal(ike_certreq_parse(pl[1].body, 0, &got, err, sizeof(err)), -EBADMSG);
	assert_int_equal(ike_certreq_parse(pl[1].body, pl[1].len - 1, &got, err, sizeof(err)),
			 -EBADMSG);
	assert_non_null(strstr(err, "certreq.authorities"));
	/* An empty CERTREQ (any CA), and another encoding kept for the caller. */
	assert_int_equal(ike_certreq_parse(pl[1].body, 1, &got, err, sizeof(err)), 0);
	assert_int_equal(got.len, 0);
	assert_int_equal(ike_certreq_parse((const uint8_t *)"\x0c\x01", 2, &got, err,
					   sizeof(err)), 0);
	assert_int_equal(got.encoding, 12);
	/* Every truncation of each body, in a block of its exact size (ASan). */
	for (unsigned i = 0; i < 2; i++)
		for (size_t len = 0; len <= pl[i].len; len++) {
			uint8_t *cp = malloc(len ? len : 1);

			memcpy(cp, pl[i].body, len);
			if (ike_cert_parse(cp, len, &got, err, sizeof(err)) == 0)
				assert_true(got.data + got.len == cp + len);
			if (ike_certreq_parse(cp, len, &got, err, sizeof(err)) == 0)
				assert_true(got.data + got.len == cp + len);
			free(cp);
		}
}

/* The Encrypted Fragment payload's fields (RFC 7383 2.5): built, parsed, and each limit. */
static void test_skf(void **state)
{
	static const struct { uint16_t number, total; int rc; } cases[] = {
		{ 1, 1, 0 }, { 1, 5, 0 }, { 5, 5, 0 }, { 32, 32, 0 },
		{ 0, 5, -EBADMSG },	/* numbers start at 1 */
		{ 6, 5, -EBADMSG },	/* beyond the total */
		{ 1, 0, -EBADMSG },	/* no fragments */
		{ 1, 33, -EBADMSG },	/* more than the caller takes */
	};
	uint8_t mem[256];
	char err[ERR_LEN];
	struct ike_pl pl[MAX_PL];
	struct ike_skf s;
	struct ike_buf b;
	struct ike_hdr h;
	unsigned n;

	(void)state;
	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t start;

		ike_buf_init(&b, mem, sizeof(mem));
		ike_build_hdr(&b, &msgs[V_IKE_AUTH].h);
		start = ike_sk_begin(&b, IKE_PL_SKF, cases[i].number == 1 ? IKE_PL_IDI : 0);
		ike_put16(&b, cases[i].number);
		ike_put16(&b, cases[i].total);
		ike_put_bytes(&b, "ivivivivCIPHERTEXTICVICVICVICVIC", 32);
		ike_pl_end(&b, start);
		assert_int_equal(ike_finish(&b), 0);
		assert_int_equal(ike_hdr_parse(mem, b.len, &h, err, sizeof(err)), 0);
		assert_int_equal(h.next, IKE_PL_SKF);
		assert_int_equal(ike_chain_parse(h.next, mem + IKE_HDR_LEN, b.len - IKE_HDR_LEN,
						 pl, MAX_PL, &n, err, sizeof(err)), 0);
		assert_int_equal(n, 1);
		err[0] = '\0';
		assert_int_equal(ike_skf_parse(&pl[0], 32, &s, err, sizeof(err)), cases[i].rc);
		if (cases[i].rc != 0) {
			assert_non_null(strstr(err, "skf."));
			continue;
		}
		assert_int_equal(s.number, cases[i].number);
		assert_int_equal(s.total, cases[i].total);
		assert_int_equal(s.len, 32);
		assert_memory_equal(s.data, "ivivivivCIPHERTEXT", 18);
		assert_int_equal(pl[0].inner_first, cases[i].number == 1 ? IKE_PL_IDI : 0);
	}
	/* shorter than its two fields */
	pl[0].len = 3;
	assert_int_equal(ike_skf_parse(&pl[0], 32, &s, err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, "skf.length"));
	pl[0].type = IKE_PL_SK;
	pl[0].len = 36;
	assert_int_equal(ike_skf_parse(&pl[0], 32, &s, err, sizeof(err)), -EBADMSG);
}

/*
 * CP (section 3.15): a strongSwan road warrior's CFG_REQUEST (empty
 * INTERNAL_IP4_ADDRESS, IP6_ADDRESS, IP4_DNS, IP6_DNS and an unknown
 * attribute with the reserved bit set), a gateway's CFG_REPLY built and
 * parsed back byte for byte, and every malformed length.
 */
#define CP_MANY	(4 + 4 * (IKE_CP_MAX_ATTRS + 1))

static void test_cp_payload(void **state)
{
	static const uint8_t req[] = {
		1, 0, 0, 0,			/* CFG_REQUEST */
		0x00, 0x01, 0x00, 0x00,		/* INTERNAL_IP4_ADDRESS, empty */
		0x00, 0x08, 0x00, 0x00,		/* INTERNAL_IP6_ADDRESS, empty */
		0x00, 0x03, 0x00, 0x00,		/* INTERNAL_IP4_DNS */
		0x00, 0x0a, 0x00, 0x00,		/* INTERNAL_IP6_DNS */
		0xe0, 0x00, 0x00, 0x02, 0xab, 0xcd,	/* R bit, private type 24576, 2 bytes */
	};
	static const uint8_t a4[] = { 10, 10, 0, 7 }, m4[] = { 255, 255, 255, 255 };
	static const uint8_t d4[] = { 10, 10, 0, 1 };
	static const uint8_t a6[17] = { 0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7, 128 };
	static const uint8_t want[] = {
		0, 0, 0, 32, 2, 0, 0, 0,		/* generic header, CFG_REPLY */
		0, 1, 0, 4, 10, 10, 0, 7,
		0, 2, 0, 4, 255, 255, 255, 255,
		0, 3, 0, 4, 10, 10, 0, 1,
	};
	struct ike_cp cp, got;
	struct ike_pl pl[2];
	struct ike_buf b;
	uint8_t mem[256], bad_len[sizeof(req)];
	unsigned n;
	char err[256];

	(void)state;
	assert_int_equal(ike_cp_parse(req, sizeof(req), &cp, err, sizeof(err)), 0);
	assert_int_equal(cp.cfg_type, IKE_CFG_REQUEST);
	assert_int_equal(cp.n, 5);
	assert_int_equal(cp.attr[0].type, IKE_CP_IP4_ADDRESS);
	assert_int_equal(cp.attr[1].type, IKE_CP_IP6_ADDRESS);
	assert_int_equal(cp.attr[2].type, IKE_CP_IP4_DNS);
	assert_int_equal(cp.attr[3].type, IKE_CP_IP6_DNS);
	for (unsigned i = 0; i < 4; i++)
		assert_int_equal(cp.attr[i].len, 0);
	assert_int_equal(cp.attr[4].type, 0x6000);	/* the reserved bit dropped */
	assert_int_equal(cp.attr[4].len, 2);
	assert_ptr_equal(cp.attr[4].value, req + sizeof(req) - 2);
	/* A reply: built, the exact bytes, parsed back. */
	cp = (struct ike_cp){ .cfg_type = IKE_CFG_REPLY, .n = 3, .attr = {
		{ IKE_CP_IP4_ADDRESS, 4, a4 }, { IKE_CP_IP4_NETMASK, 4, m4 },
		{ IKE_CP_IP4_DNS, 4, d4 } } };
	ike_buf_init(&b, mem, sizeof(mem));
	ike_build_cp(&b, &cp);
	assert_false(b.overflow);
	expect_bytes(mem, b.len, want, sizeof(want));
	assert_int_equal(ike_chain_parse(IKE_PL_CP, mem, b.len, pl, 2, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 1);
	assert_int_equal(ike_cp_parse(pl[0].body, pl[0].len, &got, err, sizeof(err)), 0);
	assert_int_equal(got.cfg_type, IKE_CFG_REPLY);
	assert_int_equal(got.n, 3);
	for (unsigned i = 0; i < 3; i++) {
		assert_int_equal(got.attr[i].type, cp.attr[i].type);
		expect_bytes(got.attr[i].value, got.attr[i].len, cp.attr[i].value, cp.attr[i].len);
	}
	/* IPv6: 17 bytes is the only non-empty length. */
	cp = (struct ike_cp){ .cfg_type = IKE_CFG_REPLY, .n = 1,
			      .attr = { { IKE_CP_IP6_ADDRESS, 17, a6 } } };
	ike_buf_init(&b, mem, sizeof(mem));
	ike_build_cp(&b, &cp);
	assert_int_equal(ike_cp_parse(mem + 4, b.len - 4, &got, err, sizeof(err)), 0);
	expect_bytes(got.attr[0].value, got.attr[0].len, a6, sizeof(a6));
	assert_int_equal(ike_cp_parse(mem + 4, b.len - 5, &got, err, sizeof(err)), -EBADMSG);
	mem[4 + 4 + 3] = 16;		/* the attribute says 16 bytes */
	assert_int_equal(ike_cp_parse(mem + 4, b.len - 5, &got, err, sizeof(err)), -EBADMSG);
	assert_string_equal(err, "cp.attr[0].length: 16, expected 0 or 17 for type 8");
	/* Known attributes of a wrong length; a length past the payload; no room left. */
	memcpy(bad_len, req, sizeof(req));
	bad_len[7] = 2;			/* INTERNAL_IP4_ADDRESS of 2 bytes: eats the next header */
	assert_int_equal(ike_cp_parse(bad_len, sizeof(bad_len), &got, err, sizeof(err)),
			 -EBADMSG);
	assert_string_equal(err, "cp.attr[0].length: 2, expected 0 or 4 for type 1");
	memcpy(bad_len, req, sizeof(req));
	bad_len[sizeof(req) - 3] = 3;	/* the last attribute one byte longer than the payload */
	assert_int_equal(ike_cp_parse(bad_len, sizeof(bad_len), &got, err, sizeof(err)),
			 -EBADMSG);
	assert_string_equal(err, "cp.attr[4].length: 3, 2 bytes left");
	assert_int_equal(ike_cp_parse(req, 3, &got, err, sizeof(err)), -EBADMSG);
	assert_int_equal(ike_cp_parse(req, 4, &got, err, sizeof(err)), 0);	/* no attributes */
	assert_int_equal(got.n, 0);
	assert_int_equal(ike_cp_parse(req, 6, &got, err, sizeof(err)), -EBADMSG);
	/* IKE_CP_MAX_ATTRS empty attributes parse, one more does not. */
	{
		uint8_t many[CP_MANY];

		memset(many, 0, sizeof(many));
		for (unsigned i = 0; i <= IKE_CP_MAX_ATTRS; i++)
			many[4 + 4 * i + 1] = IKE_CP_IP4_DNS;
		assert_int_equal(ike_cp_parse(many, sizeof(many) - 4, &got, err, sizeof(err)), 0);
		assert_int_equal(got.n, IKE_CP_MAX_ATTRS);
		assert_int_equal(ike_cp_parse(many, sizeof(many), &got, err, sizeof(err)),
				 -EBADMSG);
	}
	/* The builder refuses a type with the reserved bit: it is no type. */
	cp = (struct ike_cp){ .cfg_type = IKE_CFG_REPLY, .n = 1, .attr = { { 0x8001, 0, NULL } } };
	ike_buf_init(&b, mem, sizeof(mem));
	ike_build_cp(&b, &cp);
	assert_true(b.overflow);
	/* Every truncation in a block of its exact size (ASan). */
	for (size_t len = 0; len <= sizeof(req); len++) {
		uint8_t *c = malloc(len ? len : 1);

		memcpy(c, req, len);
		if (ike_cp_parse(c, len, &got, err, sizeof(err)) == 0)
			for (unsigned i = 0; i < got.n; i++)
				assert_true(got.attr[i].value + got.attr[i].len <= c + len);
		free(c);
	}
}

int main(void)
{
	static const struct CMUnitTest loops[] = {
		cmocka_unit_test(test_truncations),
		cmocka_unit_test(test_body_truncations),
		cmocka_unit_test(test_mutations),
		cmocka_unit_test(test_overflow),
		cmocka_unit_test(test_field_limits),
		cmocka_unit_test(test_chain_limits),
		cmocka_unit_test(test_attributes),
		cmocka_unit_test(test_sa_answer),
		cmocka_unit_test(test_header),
		cmocka_unit_test(test_sk_flow),
		cmocka_unit_test(test_skf),
		cmocka_unit_test(test_cert_payloads),
		cmocka_unit_test(test_cp_payload),
		cmocka_unit_test(test_strongswan_sa_init),
	};
	struct CMUnitTest tests[N_MSGS + N_BADS + N_ELEMS(loops)];
	size_t k = 0;

	for (unsigned i = 0; i < IKE_MAX_TRANSFORMS; i++)
		max_prop[0].tr[i] = (struct ike_transform){ IKE_TR_DH, (uint16_t)i,
							     (int16_t)(i % 2 ? -1 : 8 * (int)i) };
	max_prop[0].num = 1;
	max_prop[0].proto = IKE_PROTO_IKE;
	max_prop[0].n_tr = IKE_MAX_TRANSFORMS;
	for (size_t i = 0; i < sizeof(nonce256); i++)
		nonce256[i] = (uint8_t)(i * 7);
	for (size_t i = 0; i < N_MSGS; i++)
		tests[k++] = (struct CMUnitTest){ .name = msgs[i].name, .test_func = test_msg,
						  .initial_state = (void *)&msgs[i] };
	for (size_t i = 0; i < N_BADS; i++)
		tests[k++] = (struct CMUnitTest){ .name = bads[i].name, .test_func = test_bad,
						  .initial_state = (void *)&bads[i] };
	for (size_t i = 0; i < N_ELEMS(loops); i++)
		tests[k++] = loops[i];
	return _cmocka_run_group_tests("ike-msg", tests, k, NULL, NULL);
}
