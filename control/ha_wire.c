/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ha_wire.c - the HA sync channel's frames (see ha_wire.h).  One table,
 * types[], says per type its name, its body's length and the functions
 * that check, write and read it; both directions consult it before they
 * touch a body.  The checks of a message's values (check_*) are shared by
 * ha_encode and ha_decode, so nothing is encoded that decoding refuses;
 * what only the wire can get wrong (lengths, reserved bytes, the zeros
 * after a name's NUL) is read_*'s.  Every read is preceded by a check of
 * the bytes there: the frame comes from the other node, authenticated by
 * the transport, but a bug or another version there must not become one
 * here.
 */
#include <arpa/inet.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "dpvpn_be.h"
#include "ha_wire.h"

#define HELLO_LEN	(4 + 4 + 1 + 1 + 1 + 1 + 8 + DPVPN_NAME_LEN)
#define SNAP_BEGIN_LEN	8
#define SNAP_END_LEN	4
#define IKE_SET_MIN	(DPVPN_KEEP_KEY_LEN + 4)	/* key, len; then the record */
#define IKE_DEL_LEN	DPVPN_KEEP_KEY_LEN
#define SA_ADD_MIN	4				/* len; then the struct */
#define SA_ADD_LEN	(SA_ADD_MIN + sizeof(struct dpvpn_sa_cfg))
#define SA_DEL_LEN	(DPVPN_NAME_LEN + 4 + 1)
#define SEQ_LEN		(DPVPN_NAME_LEN + 4 + 8)
#define ACK_LEN		4
#define MARKS_MIN	2				/* count; then the entries */
#define MARK_LEN	(4 + 8)
#define ROLE_LEN	(1 + 8 + 1)
#define PREFIX_LEN	(1 + 1 + 16)
#define POLICY_LEN	(1 + 2 * PREFIX_LEN + 4 + 4)

_Static_assert(HA_BODY_MAX == IKE_SET_MIN + DPVPN_KEEP_MAX, "IKE_SET is the largest body");
_Static_assert(HELLO_LEN <= HA_BODY_MAX && SA_ADD_LEN <= HA_BODY_MAX &&
	       SA_DEL_LEN <= HA_BODY_MAX && SEQ_LEN <= HA_BODY_MAX &&
	       MARKS_MIN + HA_MARKS_MAX * MARK_LEN <= HA_BODY_MAX &&
	       ROLE_LEN <= HA_BODY_MAX && SNAP_BEGIN_LEN <= HA_BODY_MAX &&
	       SNAP_END_LEN <= HA_BODY_MAX && IKE_DEL_LEN <= HA_BODY_MAX && ACK_LEN <= HA_BODY_MAX &&
	       POLICY_LEN <= HA_BODY_MAX,
	       "every body fits HA_BODY_MAX");
/* SA_ADD's struct follows the header and its len: aligned in an aligned frame. */
_Static_assert((HA_HDR_LEN + SA_ADD_MIN) % _Alignof(struct dpvpn_sa_cfg) == 0,
	       "SA_ADD's struct misaligned in the frame");
_Static_assert(_Alignof(struct dpvpn_sa_cfg) <= 8, "a frame 8-byte aligned is not enough");
_Static_assert(HA_MARKS_MAX <= UINT16_MAX, "marks.count is a u16");

static int __attribute__((format(printf, 3, 4)))
bad(char *err, size_t elen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, elen, fmt, ap);
	va_end(ap);
	return -1;
}

/* ---- values: the checks encode and decode share ---- */

/* A name: NUL-terminated within its field, not empty, printable ASCII. */
static int
check_name(const char *name, const char *field, char *err, size_t elen)
{
	const char *nul = memchr(name, '\0', DPVPN_NAME_LEN);

	if (nul == NULL)
		return bad(err, elen, "%s: not NUL-terminated", field);
	if (nul == name)
		return bad(err, elen, "%s: empty", field);
	for (const char *c = name; c < nul; c++)
		if (*c < 0x20 || *c > 0x7e)
			return bad(err, elen, "%s: byte 0x%02x at %d is not printable ASCII",
				   field, (uint8_t)*c, (int)(c - name));
	return 0;
}

static int
check_role(uint8_t role, const char *field, char *err, size_t elen)
{
	if (role > HA_ROLE_FAULT)
		return bad(err, elen, "%s: %u unknown", field, role);
	return 0;
}

static int
check_dir(uint8_t dir, const char *field, char *err, size_t elen)
{
	if (dir != DPVPN_DIR_IN && dir != DPVPN_DIR_OUT)
		return bad(err, elen, "%s: %u, not %d (in) or %d (out)", field, dir,
			   DPVPN_DIR_IN, DPVPN_DIR_OUT);
	return 0;
}

static int
check_spi(uint32_t spi, const char *field, char *err, size_t elen)
{
	if (spi == 0)
		return bad(err, elen, "%s: 0", field);
	return 0;
}

static int
check_hello(const struct ha_msg *m, char *err, size_t elen)
{
	if (check_role(m->u.hello.role, "hello.role", err, elen) ||
	    check_role(m->u.hello.role_b, "hello.role_b", err, elen))
		return -1;
	return check_name(m->u.hello.node, "hello.node", err, elen);
}

static int
check_ike_set(const struct ha_msg *m, char *err, size_t elen)
{
	if (m->u.ike_set.len == 0)
		return bad(err, elen, "ike_set.len: 0");
	if (m->u.ike_set.len > DPVPN_KEEP_MAX)
		return bad(err, elen, "ike_set.len: %u above %d", m->u.ike_set.len,
			   DPVPN_KEEP_MAX);
	if (m->u.ike_set.rec == NULL)
		return bad(err, elen, "ike_set.rec: NULL");
	return 0;
}

static int
check_sa_add(const struct ha_msg *m, char *err, size_t elen)
{
	const struct dpvpn_sa_cfg *sa = m->u.sa_add.sa;

	if (sa == NULL)
		return bad(err, elen, "sa_add.sa: NULL");
	if (check_spi(sa->spi, "sa_add.spi", err, elen) ||
	    check_dir(sa->dir, "sa_add.dir", err, elen))
		return -1;
	return check_name(sa->name, "sa_add.name", err, elen);
}

static int
check_sa_del(const struct ha_msg *m, char *err, size_t elen)
{
	if (check_name(m->u.sa_del.name, "sa_del.name", err, elen) ||
	    check_spi(m->u.sa_del.spi, "sa_del.spi", err, elen))
		return -1;
	return check_dir(m->u.sa_del.dir, "sa_del.dir", err, elen);
}

static int
check_seq(const struct ha_msg *m, char *err, size_t elen)
{
	if (check_name(m->u.seq.name, "seq.name", err, elen) ||
	    check_spi(m->u.seq.spi, "seq.spi", err, elen))
		return -1;
	if (m->u.seq.limit == 0)
		return bad(err, elen, "seq.limit: 0");
	return 0;
}

static int
check_marks_count(uint32_t count, char *err, size_t elen)
{
	if (count == 0)
		return bad(err, elen, "marks.count: 0");
	if (count > HA_MARKS_MAX)
		return bad(err, elen, "marks.count: %u above %d", count, HA_MARKS_MAX);
	return 0;
}

/* The entries are read in their wire form, wherever they are. */
static int
check_marks(const struct ha_msg *m, char *err, size_t elen)
{
	if (check_marks_count(m->u.marks.count, err, elen))
		return -1;
	if (m->u.marks.raw == NULL)
		return bad(err, elen, "marks.raw: NULL");
	for (unsigned i = 0; i < m->u.marks.count; i++)
		if (be_get32(m->u.marks.raw + i * MARK_LEN) == 0)
			return bad(err, elen, "marks[%u].spi: 0", i);
	return 0;
}

static int
check_role_msg(const struct ha_msg *m, char *err, size_t elen)
{
	return check_role(m->u.role.role, "role.role", err, elen) ||
	       check_role(m->u.role.role_b, "role.role_b", err, elen) ? -1 : 0;
}

/* ---- writing: bodies of checked messages, into room already counted ---- */

/* Up to the NUL, zeros after it (the check saw a NUL within the field). */
static void
put_name(uint8_t *p, const char *name)
{
	size_t n = strnlen(name, DPVPN_NAME_LEN);

	memcpy(p, name, n);
	memset(p + n, 0, DPVPN_NAME_LEN - n);
}

static void
put_hello(uint8_t *p, const struct ha_msg *m)
{
	be_put32(p, m->u.hello.version);
	be_put32(p + 4, m->u.hello.sa_size);
	p[8] = m->u.hello.role;
	p[9] = m->u.hello.priority;
	p[10] = m->u.hello.role_b;
	p[11] = 0;
	be_put64(p + 12, m->u.hello.epoch);
	put_name(p + 20, m->u.hello.node);
}

static void
put_snap_begin(uint8_t *p, const struct ha_msg *m)
{
	be_put64(p, m->u.snap_begin.epoch);
}

static void
put_snap_end(uint8_t *p, const struct ha_msg *m)
{
	be_put32(p, m->u.snap_end.count);
}

static void
put_ike_set(uint8_t *p, const struct ha_msg *m)
{
	memcpy(p, m->u.ike_set.key, DPVPN_KEEP_KEY_LEN);
	be_put32(p + DPVPN_KEEP_KEY_LEN, m->u.ike_set.len);
	memcpy(p + IKE_SET_MIN, m->u.ike_set.rec, m->u.ike_set.len);
}

static void
put_ike_del(uint8_t *p, const struct ha_msg *m)
{
	memcpy(p, m->u.ike_del.key, DPVPN_KEEP_KEY_LEN);
}

/* The one struct that travels as it is (ha_wire.h: same program both ends). */
static void
put_sa_add(uint8_t *p, const struct ha_msg *m)
{
	be_put32(p, sizeof(struct dpvpn_sa_cfg));
	memcpy(p + SA_ADD_MIN, m->u.sa_add.sa, sizeof(struct dpvpn_sa_cfg));
}

static void
put_sa_del(uint8_t *p, const struct ha_msg *m)
{
	put_name(p, m->u.sa_del.name);
	be_put32(p + DPVPN_NAME_LEN, ntohl(m->u.sa_del.spi));
	p[DPVPN_NAME_LEN + 4] = m->u.sa_del.dir;
}

static void
put_seq(uint8_t *p, const struct ha_msg *m)
{
	put_name(p, m->u.seq.name);
	be_put32(p + DPVPN_NAME_LEN, ntohl(m->u.seq.spi));
	be_put64(p + DPVPN_NAME_LEN + 4, m->u.seq.limit);
}

static void
put_ack(uint8_t *p, const struct ha_msg *m)
{
	be_put32(p, m->u.ack.seq);
}

static void
put_marks(uint8_t *p, const struct ha_msg *m)
{
	be_put16(p, m->u.marks.count);
	memcpy(p + MARKS_MIN, m->u.marks.raw, (size_t)m->u.marks.count * MARK_LEN);
}

static void
put_role(uint8_t *p, const struct ha_msg *m)
{
	p[0] = m->u.role.role;
	be_put64(p + 1, m->u.role.epoch);
	p[9] = m->u.role.role_b;
}

/* ---- reading: n is the body's length, at least the type's least ---- */

/* A name's field: copied, and zero after its NUL (else it would not encode back). */
static int
get_name(char *name, const uint8_t *p, const char *field, char *err, size_t elen)
{
	const uint8_t *nul = memchr(p, '\0', DPVPN_NAME_LEN);

	memcpy(name, p, DPVPN_NAME_LEN);
	for (const uint8_t *c = nul; c != NULL && c < p + DPVPN_NAME_LEN; c++)
		if (*c != 0)
			return bad(err, elen, "%s: byte %d after the NUL is not 0", field,
				   (int)(c - p));
	return 0;
}

static int
read_hello(const uint8_t *p, size_t n, struct ha_msg *m, char *err, size_t elen)
{
	(void)n;
	m->u.hello.version = be_get32(p);
	m->u.hello.sa_size = be_get32(p + 4);
	m->u.hello.role = p[8];
	m->u.hello.priority = p[9];
	m->u.hello.role_b = p[10];
	if (p[11] != 0)
		return bad(err, elen, "hello.reserved: 0x%02x, not 0", p[11]);
	m->u.hello.epoch = be_get64(p + 12);
	if (get_name(m->u.hello.node, p + 20, "hello.node", err, elen))
		return -1;
	return check_hello(m, err, elen);
}

static int
read_snap_begin(const uint8_t *p, size_t n, struct ha_msg *m, char *err, size_t elen)
{
	(void)n, (void)err, (void)elen;
	m->u.snap_begin.epoch = be_get64(p);
	return 0;
}

static int
read_snap_end(const uint8_t *p, size_t n, struct ha_msg *m, char *err, size_t elen)
{
	(void)n, (void)err, (void)elen;
	m->u.snap_end.count = be_get32(p);
	return 0;
}

/* The record's len is checked before the bytes that follow it: it names the fault. */
static int
read_ike_set(const uint8_t *p, size_t n, struct ha_msg *m, char *err, size_t elen)
{
	memcpy(m->u.ike_set.key, p, DPVPN_KEEP_KEY_LEN);
	m->u.ike_set.len = be_get32(p + DPVPN_KEEP_KEY_LEN);
	m->u.ike_set.rec = p + IKE_SET_MIN;
	if (check_ike_set(m, err, elen))
		return -1;
	if (n - IKE_SET_MIN != m->u.ike_set.len)
		return bad(err, elen, "ike_set.len: %u, but %zu bytes follow", m->u.ike_set.len,
			   n - IKE_SET_MIN);
	return 0;
}

static int
read_ike_del(const uint8_t *p, size_t n, struct ha_msg *m, char *err, size_t elen)
{
	(void)n, (void)err, (void)elen;
	memcpy(m->u.ike_del.key, p, DPVPN_KEEP_KEY_LEN);
	return 0;
}

/* The struct is handed out where it lies: only if it lies aligned. */
static int
read_sa_add(const uint8_t *p, size_t n, struct ha_msg *m, char *err, size_t elen)
{
	uint32_t len = be_get32(p);

	if (len != sizeof(struct dpvpn_sa_cfg))
		return bad(err, elen, "sa_add.len: %u, not %zu (struct dpvpn_sa_cfg here)", len,
			   sizeof(struct dpvpn_sa_cfg));
	if (n - SA_ADD_MIN != len)
		return bad(err, elen, "sa_add.len: %u, but %zu bytes follow", len, n - SA_ADD_MIN);
	if ((uintptr_t)(p + SA_ADD_MIN) % _Alignof(struct dpvpn_sa_cfg) != 0)
		return bad(err, elen, "sa_add: frame buffer not 8-byte aligned");
	m->u.sa_add.sa = (const struct dpvpn_sa_cfg *)(const void *)(p + SA_ADD_MIN);
	return check_sa_add(m, err, elen);
}

static int
read_sa_del(const uint8_t *p, size_t n, struct ha_msg *m, char *err, size_t elen)
{
	(void)n;
	if (get_name(m->u.sa_del.name, p, "sa_del.name", err, elen))
		return -1;
	m->u.sa_del.spi = htonl(be_get32(p + DPVPN_NAME_LEN));
	m->u.sa_del.dir = p[DPVPN_NAME_LEN + 4];
	return check_sa_del(m, err, elen);
}

static int
read_seq(const uint8_t *p, size_t n, struct ha_msg *m, char *err, size_t elen)
{
	(void)n;
	if (get_name(m->u.seq.name, p, "seq.name", err, elen))
		return -1;
	m->u.seq.spi = htonl(be_get32(p + DPVPN_NAME_LEN));
	m->u.seq.limit = be_get64(p + DPVPN_NAME_LEN + 4);
	return check_seq(m, err, elen);
}

static int
read_ack(const uint8_t *p, size_t n, struct ha_msg *m, char *err, size_t elen)
{
	(void)n, (void)err, (void)elen;
	m->u.ack.seq = be_get32(p);
	return 0;
}

/* count, then exactly count entries, each checked where it lies. */
static int
read_marks(const uint8_t *p, size_t n, struct ha_msg *m, char *err, size_t elen)
{
	uint16_t count = be_get16(p);

	if (check_marks_count(count, err, elen))
		return -1;
	if (n - MARKS_MIN != (size_t)count * MARK_LEN)
		return bad(err, elen, "marks.count: %u entries take %u bytes, but %zu follow",
			   count, count * MARK_LEN, n - MARKS_MIN);
	m->u.marks.count = count;
	m->u.marks.raw = p + MARKS_MIN;
	return check_marks(m, err, elen);
}

static int
read_role(const uint8_t *p, size_t n, struct ha_msg *m, char *err, size_t elen)
{
	(void)n;
	m->u.role.role = p[0];
	m->u.role.epoch = be_get64(p + 1);
	m->u.role.role_b = p[9];
	return check_role_msg(m, err, elen);
}

/* ---- POLICY ---- */

/* A prefix: a family, a length within it, no host bits, zeros past IPv4's 4. */
static int
check_prefix(const struct dpvpn_prefix *x, const char *field, char *err, size_t elen)
{
	unsigned bits = x->family == DPVPN_AF_INET ? 32 : 128;
	const uint8_t *a = x->v6;

	if (x->family != DPVPN_AF_INET && x->family != DPVPN_AF_INET6)
		return bad(err, elen, "%s.family: %u, not %d or %d", field, x->family,
			   DPVPN_AF_INET, DPVPN_AF_INET6);
	if (x->len > bits)
		return bad(err, elen, "%s.len: %u above %u", field, x->len, bits);
	for (unsigned i = x->len; i < 128; i++)
		if (a[i / 8] & (0x80 >> (i % 8)))
			return bad(err, elen, "%s: a bit set past /%u", field, x->len);
	if (x->reserved[0] || x->reserved[1])
		return bad(err, elen, "%s: reserved bytes not 0", field);
	return 0;
}

static int
check_policy(const struct ha_msg *m, char *err, size_t elen)
{
	const struct dpvpn_policy *p = &m->u.policy.p;

	if (m->u.policy.op != HA_POLICY_ADD && m->u.policy.op != HA_POLICY_DEL)
		return bad(err, elen, "policy.op: %u, not %d (add) or %d (del)", m->u.policy.op,
			   HA_POLICY_ADD, HA_POLICY_DEL);
	if (check_prefix(&p->src, "policy.src", err, elen) ||
	    check_prefix(&p->dst, "policy.dst", err, elen))
		return -1;
	if (p->src.family != p->dst.family)
		return bad(err, elen, "policy.dst.family: %u, not src's %u", p->dst.family,
			   p->src.family);
	if (m->u.policy.op == HA_POLICY_ADD)
		return check_spi(p->spi, "policy.spi", err, elen);
	return 0;
}

static void
put_prefix(uint8_t *p, const struct dpvpn_prefix *x)
{
	p[0] = x->family;
	p[1] = x->len;
	memcpy(p + 2, x->v6, 16);
}

static void
put_policy(uint8_t *p, const struct ha_msg *m)
{
	p[0] = m->u.policy.op;
	put_prefix(p + 1, &m->u.policy.p.src);
	put_prefix(p + 1 + PREFIX_LEN, &m->u.policy.p.dst);
	be_put32(p + 1 + 2 * PREFIX_LEN, ntohl(m->u.policy.p.spi));
	be_put32(p + 5 + 2 * PREFIX_LEN, m->u.policy.p.priority);
}

static void
get_prefix(struct dpvpn_prefix *x, const uint8_t *p)
{
	memset(x, 0, sizeof(*x));
	x->family = p[0];
	x->len = p[1];
	memcpy(x->v6, p + 2, 16);
}

static int
read_policy(const uint8_t *p, size_t n, struct ha_msg *m, char *err, size_t elen)
{
	(void)n;
	m->u.policy.op = p[0];
	get_prefix(&m->u.policy.p.src, p + 1);
	get_prefix(&m->u.policy.p.dst, p + 1 + PREFIX_LEN);
	m->u.policy.p.spi = htonl(be_get32(p + 1 + 2 * PREFIX_LEN));
	m->u.policy.p.priority = be_get32(p + 5 + 2 * PREFIX_LEN);
	return check_policy(m, err, elen);
}

/* ---- the table ---- */

struct type_info {
	const char *name;	/* ha_type_name */
	const char *member;	/* struct ha_msg's union member: errors name it */
	size_t len;		/* the body's length; with more, its least */
	bool more;		/* variable length: size() says how long */
	int (*check)(const struct ha_msg *m, char *err, size_t elen);	/* NULL: any value */
	void (*put)(uint8_t *p, const struct ha_msg *m);
	int (*read)(const uint8_t *p, size_t n, struct ha_msg *m, char *err, size_t elen);
};

static const struct type_info types[HA_TYPE_END] = {
	[HA_HELLO] = { "hello", "hello", HELLO_LEN, false, check_hello, put_hello,
		       read_hello },
	[HA_SNAP_BEGIN] = { "snap-begin", "snap_begin", SNAP_BEGIN_LEN, false, NULL,
			    put_snap_begin, read_snap_begin },
	[HA_SNAP_END] = { "snap-end", "snap_end", SNAP_END_LEN, false, NULL, put_snap_end,
			  read_snap_end },
	[HA_IKE_SET] = { "ike-set", "ike_set", IKE_SET_MIN, true, check_ike_set, put_ike_set,
			 read_ike_set },
	[HA_IKE_DEL] = { "ike-del", "ike_del", IKE_DEL_LEN, false, NULL, put_ike_del,
			 read_ike_del },
	[HA_SA_ADD] = { "sa-add", "sa_add", SA_ADD_MIN, true, check_sa_add, put_sa_add,
			read_sa_add },
	[HA_SA_DEL] = { "sa-del", "sa_del", SA_DEL_LEN, false, check_sa_del, put_sa_del,
			read_sa_del },
	[HA_SEQ] = { "seq", "seq", SEQ_LEN, false, check_seq, put_seq, read_seq },
	[HA_ACK] = { "ack", "ack", ACK_LEN, false, NULL, put_ack, read_ack },
	[HA_MARKS] = { "marks", "marks", MARKS_MIN, true, check_marks, put_marks, read_marks },
	[HA_ROLE] = { "role", "role", ROLE_LEN, false, check_role_msg, put_role, read_role },
	[HA_POLICY] = { "policy", "policy", POLICY_LEN, false, check_policy, put_policy,
			read_policy },
};

static const struct type_info *
type_info(uint16_t type)
{
	return type < HA_TYPE_END && types[type].name != NULL ? &types[type] : NULL;
}

/* The body's length of a checked message. */
static size_t
body_len(const struct type_info *t, const struct ha_msg *m)
{
	switch (m->type) {
	case HA_IKE_SET:
		return IKE_SET_MIN + m->u.ike_set.len;
	case HA_SA_ADD:
		return SA_ADD_LEN;
	case HA_MARKS:
		return MARKS_MIN + (size_t)m->u.marks.count * MARK_LEN;
	default:
		return t->len;
	}
}

static void
put_hdr(uint8_t *buf, uint16_t type, uint32_t seq, size_t body)
{
	be_put16(buf, type);
	be_put16(buf + 2, 0);
	be_put32(buf + 4, seq);
	be_put32(buf + 8, (uint32_t)body);
}

size_t
ha_encode(uint8_t *buf, size_t cap, const struct ha_msg *m)
{
	const struct type_info *t = type_info(m->type);
	char err[128];
	size_t body;

	if (t == NULL || (t->check != NULL && t->check(m, err, sizeof(err)) != 0))
		return 0;
	body = body_len(t, m);
	if (cap < HA_HDR_LEN || cap - HA_HDR_LEN < body)
		return 0;
	put_hdr(buf, m->type, m->seq, body);
	t->put(buf + HA_HDR_LEN, m);
	return HA_HDR_LEN + body;
}

size_t
ha_encode_marks(uint8_t *buf, size_t cap, uint32_t seq, const struct ha_mark *marks,
		uint16_t count)
{
	size_t body = MARKS_MIN + (size_t)count * MARK_LEN;
	char err[64];
	uint8_t *p;

	if (marks == NULL || check_marks_count(count, err, sizeof(err)) != 0)
		return 0;
	for (unsigned i = 0; i < count; i++)
		if (marks[i].spi == 0)
			return 0;
	if (cap < HA_HDR_LEN || cap - HA_HDR_LEN < body)
		return 0;
	put_hdr(buf, HA_MARKS, seq, body);
	be_put16(buf + HA_HDR_LEN, count);
	p = buf + HA_HDR_LEN + MARKS_MIN;
	for (unsigned i = 0; i < count; i++, p += MARK_LEN) {
		be_put32(p, ntohl(marks[i].spi));
		be_put64(p + 4, marks[i].high);
	}
	return HA_HDR_LEN + body;
}

/* The header: the frame's length first, then the fields that say how to read the rest. */
static const struct type_info *
read_hdr(const uint8_t *buf, size_t len, struct ha_msg *m, char *err, size_t elen)
{
	const struct type_info *t;
	uint32_t body;

	if (len < HA_HDR_LEN) {
		bad(err, elen, "hdr: %zu bytes, shorter than the header's %d", len, HA_HDR_LEN);
		return NULL;
	}
	m->type = be_get16(buf);
	m->seq = be_get32(buf + 4);
	body = be_get32(buf + 8);
	t = type_info(m->type);
	if (be_get16(buf + 2) != 0)
		bad(err, elen, "hdr.flags: 0x%04x, not 0", be_get16(buf + 2));
	else if (body > HA_BODY_MAX)
		bad(err, elen, "hdr.len: %u above %d", body, HA_BODY_MAX);
	else if (body != len - HA_HDR_LEN)
		bad(err, elen, "hdr.len: %u, but %zu bytes follow", body, len - HA_HDR_LEN);
	else if (t == NULL)
		bad(err, elen, "hdr.type: %u unknown", m->type);
	else
		return t;
	return NULL;
}

int
ha_decode(const uint8_t *buf, size_t len, struct ha_msg *m, char *err, size_t errlen)
{
	const struct type_info *t;
	size_t n;

	memset(m, 0, sizeof(*m));
	t = read_hdr(buf, len, m, err, errlen);
	if (t == NULL)
		return -1;
	n = len - HA_HDR_LEN;
	if (!t->more && n != t->len)
		return bad(err, errlen, "%s: body of %zu bytes, not %zu", t->member, n, t->len);
	if (t->more && n < t->len)
		return bad(err, errlen, "%s: body of %zu bytes, shorter than %zu", t->member, n,
			   t->len);
	return t->read(buf + HA_HDR_LEN, n, m, err, errlen);
}

void
ha_mark_get(const struct ha_msg *m, uint16_t i, struct ha_mark *out)
{
	const uint8_t *p;

	memset(out, 0, sizeof(*out));
	if (m->type != HA_MARKS || m->u.marks.raw == NULL || i >= m->u.marks.count)
		return;
	p = m->u.marks.raw + (size_t)i * MARK_LEN;
	out->spi = htonl(be_get32(p));
	out->high = be_get64(p + 4);
}

const char *
ha_type_name(uint16_t type)
{
	const struct type_info *t = type_info(type);

	return t ? t->name : "?";
}

const char *
ha_role_name(uint8_t role)
{
	static const char *const names[] = {
		[HA_ROLE_BACKUP] = "backup", [HA_ROLE_MASTER] = "master", [HA_ROLE_FAULT] = "fault",
	};

	return role < sizeof(names) / sizeof(names[0]) ? names[role] : "?";
}
