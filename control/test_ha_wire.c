/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_ha_wire.c - the HA sync channel's frames (ha_wire.h): every type
 * encodes, decodes to the same fields and encodes back to the same bytes;
 * every frame cut short or grown by a byte is refused; each bad field is
 * refused with an error that names it; ha_encode refuses what ha_decode
 * would, and a buffer too small, without writing a byte; MARKS with 1 and
 * HA_MARKS_MAX entries, IKE_SET with the largest record.
 */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ha_wire.h"

#define GUARD		0xa5
#define SA_OFF		(HA_HDR_LEN + 4)	/* SA_ADD's struct in the frame */

/* Frames live here: 8-byte aligned (SA_ADD), room for a byte more than the largest. */
static _Alignas(8) uint8_t frame[HA_FRAME_MAX + 16];
static _Alignas(8) uint8_t other[HA_FRAME_MAX + 16];
static uint8_t rec[DPVPN_KEEP_MAX + 1];
static struct dpvpn_sa_cfg sa;
static uint8_t marks_raw[3 * 12];
static char err[256];

static void
be(uint8_t *p, int width, uint64_t v)
{
	for (int i = width - 1; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

/* A valid message of each type, its fields all different from 0. */
static void
sample(uint16_t type, struct ha_msg *m)
{
	memset(m, 0, sizeof(*m));
	m->type = type;
	m->seq = 0x01020304u + type;
	switch (type) {
	case HA_HELLO:
		m->u.hello.version = HA_HELLO_VERSION;
		m->u.hello.sa_size = sizeof(struct dpvpn_sa_cfg);
		m->u.hello.role = HA_ROLE_MASTER;
		m->u.hello.priority = 200;
		m->u.hello.role_b = HA_ROLE_FAULT;
		m->u.hello.epoch = 0x1122334455667788ull;
		strcpy(m->u.hello.node, "gw-a.example");
		break;
	case HA_SNAP_BEGIN:
		m->u.snap_begin.epoch = 0x8877665544332211ull;
		break;
	case HA_SNAP_END:
		m->u.snap_end.count = 100000;
		break;
	case HA_IKE_SET:
		for (int i = 0; i < DPVPN_KEEP_KEY_LEN; i++)
			m->u.ike_set.key[i] = (uint8_t)(0xf0 + i);
		for (size_t i = 0; i < sizeof(rec); i++)
			rec[i] = (uint8_t)(i * 7 + 3);
		m->u.ike_set.len = 100;
		m->u.ike_set.rec = rec;
		break;
	case HA_IKE_DEL:
		memset(m->u.ike_del.key, 0x5c, DPVPN_KEEP_KEY_LEN);
		break;
	case HA_SA_ADD:
		memset(&sa, 0, sizeof(sa));
		sa.spi = htonl(0x1001);
		sa.dir = DPVPN_DIR_OUT;
		sa.key_len = 16;
		sa.seq_limit = 1ull << 26;
		memset(sa.key, 0x11, sizeof(sa.key));
		memset(sa.salt, 0x22, sizeof(sa.salt));
		strcpy(sa.name, "to-b");
		m->u.sa_add.sa = &sa;
		break;
	case HA_SA_DEL:
		strcpy(m->u.sa_del.name, "to-b");
		m->u.sa_del.spi = htonl(0x2001);
		m->u.sa_del.dir = DPVPN_DIR_IN;
		break;
	case HA_SEQ:
		strcpy(m->u.seq.name, "to-c_1.x");
		m->u.seq.spi = htonl(0xc0000001);
		m->u.seq.limit = 3ull << 26;
		break;
	case HA_ACK:
		m->u.ack.seq = 0xdeadbeef;
		break;
	case HA_MARKS:
		for (int i = 0; i < 3; i++) {
			be(marks_raw + 12 * i, 4, 0x3001u + (unsigned)i);
			be(marks_raw + 12 * i + 4, 8, 0x100000000ull * (unsigned)i + 64);
		}
		m->u.marks.count = 3;
		m->u.marks.raw = marks_raw;
		break;
	case HA_ROLE:
		m->u.role.role = HA_ROLE_FAULT;
		m->u.role.epoch = 42;
		m->u.role.role_b = HA_ROLE_MASTER;
		break;
	case HA_POLICY:
		m->u.policy.op = HA_POLICY_ADD;
		m->u.policy.p = (struct dpvpn_policy){
			.src = { .family = DPVPN_AF_INET, .len = 24, .v4 = htonl(0xc6120200) },
			.dst = { .family = DPVPN_AF_INET, .len = 24, .v4 = htonl(0xc6120100) },
			.spi = htonl(0x2001), .priority = 100 };
		break;
	}
}

/* Decoded fields against what was encoded (pointers: what they point at). */
static void
assert_same(const struct ha_msg *a, const struct ha_msg *b)
{
	assert_int_equal(a->type, b->type);
	assert_int_equal(a->seq, b->seq);
	switch (a->type) {
	case HA_IKE_SET:
		assert_memory_equal(a->u.ike_set.key, b->u.ike_set.key, DPVPN_KEEP_KEY_LEN);
		assert_int_equal(a->u.ike_set.len, b->u.ike_set.len);
		assert_memory_equal(a->u.ike_set.rec, b->u.ike_set.rec, a->u.ike_set.len);
		break;
	case HA_SA_ADD:
		assert_memory_equal(a->u.sa_add.sa, b->u.sa_add.sa, sizeof(struct dpvpn_sa_cfg));
		break;
	case HA_MARKS:
		assert_int_equal(a->u.marks.count, b->u.marks.count);
		assert_memory_equal(a->u.marks.raw, b->u.marks.raw, a->u.marks.count * 12u);
		break;
	case HA_HELLO:
		assert_int_equal(a->u.hello.version, b->u.hello.version);
		assert_int_equal(a->u.hello.sa_size, b->u.hello.sa_size);
		assert_int_equal(a->u.hello.role, b->u.hello.role);
		assert_int_equal(a->u.hello.priority, b->u.hello.priority);
		assert_int_equal(a->u.hello.role_b, b->u.hello.role_b);
		assert_int_equal(a->u.hello.epoch, b->u.hello.epoch);
		assert_string_equal(a->u.hello.node, b->u.hello.node);
		break;
	case HA_SA_DEL:
		assert_string_equal(a->u.sa_del.name, b->u.sa_del.name);
		assert_int_equal(a->u.sa_del.spi, b->u.sa_del.spi);
		assert_int_equal(a->u.sa_del.dir, b->u.sa_del.dir);
		break;
	case HA_SEQ:
		assert_string_equal(a->u.seq.name, b->u.seq.name);
		assert_int_equal(a->u.seq.spi, b->u.seq.spi);
		assert_int_equal(a->u.seq.limit, b->u.seq.limit);
		break;
	default:	/* integers and keys only: the union compares whole */
		assert_memory_equal(&a->u, &b->u, sizeof(a->u));
	}
}

/* The frame of type's sample, in frame[]; its length. */
static size_t
encode_sample(uint16_t type, struct ha_msg *m)
{
	size_t n;

	sample(type, m);
	n = ha_encode(frame, sizeof(frame), m);
	assert_true(n >= HA_HDR_LEN);
	return n;
}

/* frame[0..len) must be refused, with an error that begins with want. */
static void
refused(size_t len, const char *want)
{
	struct ha_msg m;

	err[0] = '\0';
	assert_int_equal(ha_decode(frame, len, &m, err, sizeof(err)), -1);
	if (strncmp(err, want, strlen(want)) != 0)
		fail_msg("error \"%s\", expected \"%s...\"", err, want);
}

static void
test_round_trip_every_type(void **state)
{
	struct ha_msg m, d;

	(void)state;
	for (uint16_t type = HA_HELLO; type < HA_TYPE_END; type++) {
		size_t n = encode_sample(type, &m);

		assert_int_equal(ha_decode(frame, n, &d, err, sizeof(err)), 0);
		assert_same(&m, &d);
		assert_int_equal(ha_encode(other, sizeof(other), &d), n);	/* the same */
		assert_memory_equal(other, frame, n);
		assert_int_equal(frame[2] | frame[3], 0);		/* flags */
		assert_int_equal(frame[8] << 24 | frame[9] << 16 | frame[10] << 8 | frame[11],
				 n - HA_HDR_LEN);
	}
}

/* The body's sizes as the header documents them. */
static void
test_body_sizes(void **state)
{
	static const size_t want[HA_TYPE_END] = {
		[HA_HELLO] = 52, [HA_SNAP_BEGIN] = 8, [HA_SNAP_END] = 4, [HA_IKE_SET] = 120,
		[HA_IKE_DEL] = 16, [HA_SA_ADD] = 4 + sizeof(struct dpvpn_sa_cfg), [HA_SA_DEL] = 37,
		[HA_SEQ] = 44, [HA_ACK] = 4, [HA_MARKS] = 2 + 3 * 12, [HA_ROLE] = 10,
		[HA_POLICY] = 45,
	};
	struct ha_msg m;

	(void)state;
	for (uint16_t type = HA_HELLO; type < HA_TYPE_END; type++)
		assert_int_equal(encode_sample(type, &m), HA_HDR_LEN + want[type]);
	/* the SPI as the ESP header has it, the name zero-filled */
	encode_sample(HA_SA_DEL, &m);
	assert_memory_equal(frame + HA_HDR_LEN, "to-b\0\0\0\0", 8);
	assert_memory_equal(frame + HA_HDR_LEN + 32, "\x00\x00\x20\x01\x01", 5);
}

/* Each cut and each extra byte: with hdr.len as it was, and as if it said so. */
static void
test_truncated_and_extended_refused(void **state)
{
	static const char *const member[HA_TYPE_END] = {
		[HA_HELLO] = "hello", [HA_SNAP_BEGIN] = "snap_begin", [HA_SNAP_END] = "snap_end",
		[HA_IKE_SET] = "ike_set", [HA_IKE_DEL] = "ike_del", [HA_SA_ADD] = "sa_add",
		[HA_SA_DEL] = "sa_del", [HA_SEQ] = "seq", [HA_ACK] = "ack", [HA_MARKS] = "marks",
		[HA_ROLE] = "role", [HA_POLICY] = "policy",
	};
	struct ha_msg m;

	(void)state;
	for (uint16_t type = HA_HELLO; type < HA_TYPE_END; type++) {
		size_t n = encode_sample(type, &m);

		for (size_t k = 0; k < n; k++) {
			refused(k, "hdr");
			if (k < HA_HDR_LEN)
				continue;
			be(frame + 8, 4, k - HA_HDR_LEN);		/* a shorter body */
			refused(k, member[type]);
			be(frame + 8, 4, n - HA_HDR_LEN);
		}
		frame[n] = 0;
		refused(n + 1, "hdr.len: ");
		be(frame + 8, 4, n + 1 - HA_HDR_LEN);			/* a trailing byte */
		refused(n + 1, member[type]);
	}
}

/* One field of a valid frame set to a bad value: the error names it. */
static void
test_field_errors(void **state)
{
	static const struct {
		uint16_t type;
		size_t off;		/* in the frame */
		int width;
		uint64_t value;
		const char *err;
	} cases[] = {
		{ HA_ACK, 2, 2, 1, "hdr.flags: 0x0001, not 0" },
		{ HA_ACK, 2, 2, 0x8000, "hdr.flags: 0x8000, not 0" },
		{ HA_ACK, 0, 2, 99, "hdr.type: 99 unknown" },
		{ HA_ACK, 0, 2, 0, "hdr.type: 0 unknown" },
		{ HA_ACK, 0, 2, HA_TYPE_END, "hdr.type: 13 unknown" },
		{ HA_ACK, 8, 4, 5, "hdr.len: 5, but 4 bytes follow" },
		{ HA_ACK, 8, 4, 0xffffffff, "hdr.len: 4294967295 above 16404" },
		{ HA_ACK, 0, 2, HA_SEQ, "seq: body of 4 bytes, not 44" },
		{ HA_ACK, 0, 2, HA_SA_ADD, "sa_add.len: " },
		{ HA_HELLO, 20, 1, 3, "hello.role: 3 unknown" },
		{ HA_HELLO, 22, 1, 3, "hello.role_b: 3 unknown" },
		{ HA_HELLO, 23, 1, 1, "hello.reserved: 0x01, not 0" },
		{ HA_HELLO, 32 + 2, 1, 0x01, "hello.node: byte 0x01 at 2 is not printable ASCII" },
		{ HA_HELLO, 32 + 2, 1, 0xc3, "hello.node: byte 0xc3 at 2 is not printable ASCII" },
		{ HA_HELLO, 32 + 2, 1, 0x7f, "hello.node: byte 0x7f at 2 is not printable ASCII" },
		{ HA_HELLO, 32 + 31, 1, 'x', "hello.node: byte 31 after the NUL is not 0" },
		{ HA_IKE_SET, 28, 4, 20000, "ike_set.len: 20000 above 16384" },
		{ HA_IKE_SET, 28, 4, 0, "ike_set.len: 0" },
		{ HA_IKE_SET, 28, 4, 101, "ike_set.len: 101, but 100 bytes follow" },
		{ HA_IKE_SET, 28, 4, 99, "ike_set.len: 99, but 100 bytes follow" },
		{ HA_SA_ADD, 12, 4, 500, "sa_add.len: 500, not " },
		{ HA_SA_ADD, SA_OFF + offsetof(struct dpvpn_sa_cfg, dir), 1, 0,
		  "sa_add.dir: 0, not 1 (in) or 2 (out)" },
		{ HA_SA_ADD, SA_OFF + offsetof(struct dpvpn_sa_cfg, spi), 4, 0, "sa_add.spi: 0" },
		{ HA_SA_ADD, SA_OFF + offsetof(struct dpvpn_sa_cfg, name), 1, 0,
		  "sa_add.name: empty" },
		{ HA_SA_DEL, 12 + 32, 4, 0, "sa_del.spi: 0" },
		{ HA_SA_DEL, 12 + 36, 1, 0, "sa_del.dir: 0, not 1 (in) or 2 (out)" },
		{ HA_SA_DEL, 12 + 36, 1, 3, "sa_del.dir: 3, not 1 (in) or 2 (out)" },
		{ HA_SA_DEL, 12 + 30, 1, 'x', "sa_del.name: byte 30 after the NUL is not 0" },
		{ HA_SA_DEL, 12, 1, 0, "sa_del.name: byte 1 after the NUL is not 0" },
		{ HA_SA_DEL, 12, 4, 0, "sa_del.name: empty" },
		{ HA_SEQ, 12, 8, 0, "seq.name: empty" },
		{ HA_SEQ, 12 + 3, 1, '\n', "seq.name: byte 0x0a at 3 is not printable ASCII" },
		{ HA_SEQ, 12 + 32, 4, 0, "seq.spi: 0" },
		{ HA_SEQ, 12 + 36, 8, 0, "seq.limit: 0" },
		{ HA_MARKS, 12, 2, 0, "marks.count: 0" },
		{ HA_MARKS, 12, 2, 257, "marks.count: 257 above 256" },
		{ HA_MARKS, 12, 2, 0xffff, "marks.count: 65535 above 256" },
		{ HA_MARKS, 12, 2, 4, "marks.count: 4 entries take 48 bytes, but 36 follow" },
		{ HA_MARKS, 12, 2, 2, "marks.count: 2 entries take 24 bytes, but 36 follow" },
		{ HA_MARKS, 14 + 12, 4, 0, "marks[1].spi: 0" },
		{ HA_ROLE, 12, 1, 3, "role.role: 3 unknown" },
		{ HA_ROLE, 12, 1, 0xff, "role.role: 255 unknown" },
		{ HA_ROLE, 21, 1, 4, "role.role_b: 4 unknown" },
		{ HA_POLICY, 12, 1, 3, "policy.op: 3, not 1 (add) or 2 (del)" },
		{ HA_POLICY, 13, 1, 5, "policy.src.family: 5, not 4 or 6" },
		{ HA_POLICY, 14, 1, 33, "policy.src.len: 33 above 32" },
		{ HA_POLICY, 18, 1, 1, "policy.src: a bit set past /24" },
		{ HA_POLICY, 31, 1, 6, "policy.dst.family: 6, not src's 4" },
		{ HA_POLICY, 49, 4, 0, "policy.spi: 0" },
	};
	struct ha_msg m;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t n = encode_sample(cases[i].type, &m);

		be(frame + cases[i].off, cases[i].width, cases[i].value);
		refused(n, cases[i].err);
	}
}

/* Names: every byte 'a' (no NUL), for each message that has one. */
static void
test_names_not_terminated(void **state)
{
	static const struct {
		uint16_t type;
		size_t off;
		const char *err;
	} cases[] = {
		{ HA_HELLO, 32, "hello.node: not NUL-terminated" },
		{ HA_SA_DEL, 12, "sa_del.name: not NUL-terminated" },
		{ HA_SEQ, 12, "seq.name: not NUL-terminated" },
		{ HA_SA_ADD, SA_OFF + offsetof(struct dpvpn_sa_cfg, name),
		  "sa_add.name: not NUL-terminated" },
	};
	struct ha_msg m;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t n = encode_sample(cases[i].type, &m);

		memset(frame + cases[i].off, 'a', DPVPN_NAME_LEN);
		refused(n, cases[i].err);
		assert_string_equal(err, cases[i].err);
	}
}

/* Errors in full, for the cases test_field_errors checks by their beginning. */
static void
test_error_text(void **state)
{
	char want[128];
	struct ha_msg m;
	size_t n;

	(void)state;
	refused(5, "hdr: 5 bytes, shorter than the header's 12");
	assert_string_equal(err, "hdr: 5 bytes, shorter than the header's 12");
	n = encode_sample(HA_SA_ADD, &m);
	be(frame + 12, 4, 500);
	refused(n, "sa_add.len");
	snprintf(want, sizeof(want), "sa_add.len: 500, not %zu (struct dpvpn_sa_cfg here)",
		 sizeof(struct dpvpn_sa_cfg));
	assert_string_equal(err, want);
	n = encode_sample(HA_ACK, &m);
	be(frame, 2, HA_IKE_SET);
	refused(n, "ike_set: body of 4 bytes, shorter than 20");
	be(frame, 2, HA_SA_ADD);
	be(frame + 8, 4, 3);
	refused(n - 1, "sa_add: body of 3 bytes, shorter than 4");
	/* a body above the largest, the frame that long */
	memset(frame, 0, sizeof(frame));
	be(frame, 2, HA_IKE_SET);
	be(frame + 8, 4, HA_BODY_MAX + 1);
	refused(HA_FRAME_MAX + 1, "hdr.len: 16405 above 16404");
	assert_string_equal(err, "hdr.len: 16405 above 16404");
}

/* The struct is handed out where it lies: not at an address it cannot be read from. */
static void
test_sa_add_alignment(void **state)
{
	struct ha_msg m, d;
	size_t n = encode_sample(HA_SA_ADD, &m);

	(void)state;
	memcpy(other + 4, frame, n);
	assert_int_equal(ha_decode(other + 4, n, &d, err, sizeof(err)), -1);
	assert_string_equal(err, "sa_add: frame buffer not 8-byte aligned");
	memcpy(other + 8, frame, n);
	assert_int_equal(ha_decode(other + 8, n, &d, err, sizeof(err)), 0);
	assert_ptr_equal(d.u.sa_add.sa, other + 8 + SA_OFF);
	assert_int_equal((uintptr_t)d.u.sa_add.sa % _Alignof(struct dpvpn_sa_cfg), 0);
	assert_int_equal(d.u.sa_add.sa->seq_limit, 1ull << 26);
	assert_memory_equal(d.u.sa_add.sa->key, sa.key, sizeof(sa.key));
}

/* Nothing written, not even within cap: ha_encode returned 0. */
static void
assert_untouched(const uint8_t *buf, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (buf[i] != GUARD)
			fail_msg("byte %zu written: 0x%02x", i, buf[i]);
}

/* Case i of test_encode_refuses_invalid: the sample of its type, spoilt. */
static void
spoil(int i, struct ha_msg *m)
{
	switch (i) {
	case 3: m->u.hello.role = 3; break;
	case 4: memset(m->u.hello.node, 'a', DPVPN_NAME_LEN); break;
	case 5: m->u.hello.node[0] = '\0'; break;
	case 6: m->u.ike_set.len = 0; break;
	case 7: m->u.ike_set.len = DPVPN_KEEP_MAX + 1; break;
	case 8: m->u.ike_set.rec = NULL; break;
	case 9: m->u.sa_add.sa = NULL; break;
	case 10: sa.dir = 0; break;
	case 11: sa.spi = 0; break;
	case 12: memset(sa.name, 'a', DPVPN_NAME_LEN); break;
	case 13: m->u.sa_del.dir = 0; break;
	case 14: m->u.sa_del.spi = 0; break;
	case 15: m->u.sa_del.name[1] = '\t'; break;
	case 16: m->u.seq.limit = 0; break;
	case 17: memset(m->u.seq.name, 'a', DPVPN_NAME_LEN); break;
	case 18: m->u.marks.count = 0; break;
	case 19: m->u.marks.count = HA_MARKS_MAX + 1; break;
	case 20: m->u.marks.raw = NULL; break;
	case 21: memset(marks_raw + 24, 0, 4); break;		/* entry 2's SPI */
	case 22: m->u.role.role = 3; break;
	default: break;						/* the type itself */
	}
}

static void
test_encode_refuses_invalid(void **state)
{
	static const uint16_t type[] = {
		0, HA_TYPE_END, 99, HA_HELLO, HA_HELLO, HA_HELLO, HA_IKE_SET, HA_IKE_SET,
		HA_IKE_SET, HA_SA_ADD, HA_SA_ADD, HA_SA_ADD, HA_SA_ADD, HA_SA_DEL, HA_SA_DEL,
		HA_SA_DEL, HA_SEQ, HA_SEQ, HA_MARKS, HA_MARKS, HA_MARKS, HA_MARKS, HA_ROLE,
	};
	struct ha_msg m;

	(void)state;
	for (int i = 0; i < (int)(sizeof(type) / sizeof(type[0])); i++) {
		sample(type[i], &m);
		spoil(i, &m);
		memset(frame, GUARD, sizeof(frame));
		if (ha_encode(frame, sizeof(frame), &m) != 0)
			fail_msg("case %d (%s) encoded", i, ha_type_name(type[i]));
		assert_untouched(frame, sizeof(frame));
	}
}

/* Every cap below the frame's length: 0 and nothing written; at it, no byte past it. */
static void
encode_in_every_cap(const struct ha_msg *m, size_t n)
{
	for (size_t cap = 0; cap < n; cap++) {
		memset(other, GUARD, n + 1);
		assert_int_equal(ha_encode(other, cap, m), 0);
		assert_untouched(other, n + 1);
	}
	memset(other, GUARD, n + 1);
	assert_int_equal(ha_encode(other, n, m), n);
	assert_int_equal(other[n], GUARD);
}

static void
test_encode_small_buffers(void **state)
{
	struct ha_msg m;
	struct ha_mark mk[2] = { { htonl(7), 1 }, { htonl(8), 2 } };

	(void)state;
	for (uint16_t type = HA_HELLO; type < HA_TYPE_END; type++)
		encode_in_every_cap(&m, encode_sample(type, &m));
	for (size_t cap = 0; cap < HA_HDR_LEN + 2 + 24; cap++) {
		memset(other, GUARD, 64);
		assert_int_equal(ha_encode_marks(other, cap, 1, mk, 2), 0);
		assert_untouched(other, 64);
	}
	assert_int_equal(ha_encode_marks(other, HA_HDR_LEN + 2 + 24, 1, mk, 2), 38);
	assert_int_equal(other[38], GUARD);
}

/* A name is written up to its NUL: what follows it in the struct is not sent. */
static void
test_names_zero_filled(void **state)
{
	struct ha_msg m, d;
	size_t n;

	(void)state;
	sample(HA_SEQ, &m);
	memset(m.u.seq.name, 'z', DPVPN_NAME_LEN);
	m.u.seq.name[3] = '\0';
	n = ha_encode(frame, sizeof(frame), &m);
	assert_int_equal(n, HA_HDR_LEN + 44);
	assert_memory_equal(frame + HA_HDR_LEN, "zzz\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0"
			    "\0\0\0\0\0", DPVPN_NAME_LEN);
	assert_int_equal(ha_decode(frame, n, &d, err, sizeof(err)), 0);
	assert_string_equal(d.u.seq.name, "zzz");
	/* 31 characters: the longest */
	memset(m.u.seq.name, 'y', DPVPN_NAME_LEN - 1);
	m.u.seq.name[DPVPN_NAME_LEN - 1] = '\0';
	n = ha_encode(frame, sizeof(frame), &m);
	assert_int_equal(ha_decode(frame, n, &d, err, sizeof(err)), 0);
	assert_int_equal(strlen(d.u.seq.name), DPVPN_NAME_LEN - 1);
}

static void
marks_round_trip(uint16_t count)
{
	static struct ha_mark in[HA_MARKS_MAX];
	struct ha_mark out;
	struct ha_msg d;
	size_t n;

	for (unsigned i = 0; i < count; i++) {
		in[i].spi = htonl(0xa0000000u + i);
		in[i].high = 0xfedcba9876543210ull - i;
	}
	n = ha_encode_marks(frame, sizeof(frame), 77, in, count);
	assert_int_equal(n, HA_HDR_LEN + 2 + 12u * count);
	assert_int_equal(ha_decode(frame, n, &d, err, sizeof(err)), 0);
	assert_int_equal(d.type, HA_MARKS);
	assert_int_equal(d.seq, 77);
	assert_int_equal(d.u.marks.count, count);
	for (uint16_t i = 0; i < count; i++) {
		ha_mark_get(&d, i, &out);
		assert_int_equal(out.spi, in[i].spi);
		assert_int_equal(out.high, in[i].high);
	}
	ha_mark_get(&d, count, &out);				/* past the end: zero */
	assert_int_equal(out.spi, 0);
	assert_int_equal(out.high, 0);
	assert_int_equal(ha_encode(other, sizeof(other), &d), n);	/* decoded: the same */
	assert_memory_equal(other, frame, n);
}

static void
test_marks_one_and_max(void **state)
{
	struct ha_mark mk[HA_MARKS_MAX + 1] = { { htonl(1), 1 } };

	(void)state;
	marks_round_trip(1);
	marks_round_trip(HA_MARKS_MAX);
	/* the SPI travels as the ESP header has it */
	ha_encode_marks(frame, sizeof(frame), 0, mk, 1);
	assert_memory_equal(frame + HA_HDR_LEN, "\x00\x01\x00\x00\x00\x01", 6);
	for (int i = 0; i <= HA_MARKS_MAX; i++)
		mk[i] = (struct ha_mark){ htonl(1u + (unsigned)i), 5 };
	assert_int_equal(ha_encode_marks(frame, sizeof(frame), 0, mk, 0), 0);
	assert_int_equal(ha_encode_marks(frame, sizeof(frame), 0, mk, HA_MARKS_MAX + 1), 0);
	assert_int_equal(ha_encode_marks(frame, sizeof(frame), 0, NULL, 1), 0);
	mk[5].spi = 0;
	assert_int_equal(ha_encode_marks(frame, sizeof(frame), 0, mk, 6), 0);
	assert_int_equal(ha_encode_marks(frame, sizeof(frame), 0, mk, 5), HA_HDR_LEN + 62);
}

static void
test_ike_set_largest(void **state)
{
	struct ha_msg m, d;
	size_t n;

	(void)state;
	sample(HA_IKE_SET, &m);
	m.u.ike_set.len = DPVPN_KEEP_MAX;
	n = ha_encode(frame, sizeof(frame), &m);
	assert_int_equal(n, HA_FRAME_MAX);
	assert_int_equal(ha_decode(frame, n, &d, err, sizeof(err)), 0);
	assert_same(&m, &d);
	assert_ptr_equal(d.u.ike_set.rec, frame + HA_HDR_LEN + 20);	/* in the frame */
	encode_in_every_cap(&m, n);
	m.u.ike_set.len = DPVPN_KEEP_MAX + 1;
	assert_int_equal(ha_encode(frame, sizeof(frame), &m), 0);
}

static void
test_names_of_types_and_roles(void **state)
{
	static const char *const names[HA_TYPE_END] = {
		[HA_HELLO] = "hello", [HA_SNAP_BEGIN] = "snap-begin", [HA_SNAP_END] = "snap-end",
		[HA_IKE_SET] = "ike-set", [HA_IKE_DEL] = "ike-del", [HA_SA_ADD] = "sa-add",
		[HA_SA_DEL] = "sa-del", [HA_SEQ] = "seq", [HA_ACK] = "ack", [HA_MARKS] = "marks",
		[HA_ROLE] = "role", [HA_POLICY] = "policy",
	};

	(void)state;
	for (uint16_t type = HA_HELLO; type < HA_TYPE_END; type++)
		assert_string_equal(ha_type_name(type), names[type]);
	assert_string_equal(ha_type_name(0), "?");
	assert_string_equal(ha_type_name(HA_TYPE_END), "?");
	assert_string_equal(ha_type_name(0xffff), "?");
	assert_string_equal(ha_role_name(HA_ROLE_BACKUP), "backup");
	assert_string_equal(ha_role_name(HA_ROLE_MASTER), "master");
	assert_string_equal(ha_role_name(HA_ROLE_FAULT), "fault");
	assert_string_equal(ha_role_name(3), "?");
	assert_string_equal(ha_role_name(255), "?");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip_every_type),
		cmocka_unit_test(test_body_sizes),
		cmocka_unit_test(test_truncated_and_extended_refused),
		cmocka_unit_test(test_field_errors),
		cmocka_unit_test(test_names_not_terminated),
		cmocka_unit_test(test_error_text),
		cmocka_unit_test(test_sa_add_alignment),
		cmocka_unit_test(test_encode_refuses_invalid),
		cmocka_unit_test(test_encode_small_buffers),
		cmocka_unit_test(test_names_zero_filled),
		cmocka_unit_test(test_marks_one_and_max),
		cmocka_unit_test(test_ike_set_largest),
		cmocka_unit_test(test_names_of_types_and_roles),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
