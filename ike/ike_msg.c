/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ike_msg.c - the IKEv2 message codec (see ike_msg.h).  Every read is
 * preceded by a check of the bytes left at that level (datagram, payload,
 * proposal, transform, attribute, selector): the message comes from anyone
 * on the network and is parsed before any authentication.  Error messages
 * number proposals, transforms and selectors from 1, in wire order.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ike_msg.h"

#define GEN_CRITICAL	0x80	/* in the generic header's second byte */
#define PROP_LAST	0
#define PROP_MORE	2
#define TR_LAST		0
#define TR_MORE		3
#define PROP_HDR_LEN	8
#define TR_HDR_LEN	8
#define ATTR_HDR_LEN	4
#define TS_HDR_LEN	4	/* type, protocol, length */
#define TS4_LEN		16
#define TS6_LEN		40
#define CP_HDR_LEN	4	/* CFG type, three reserved bytes */
#define CP_ATTR_HDR_LEN	4	/* R bit and type, length */
#define CP_ATTR_R	0x8000

static uint16_t
get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t
get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int __attribute__((format(printf, 3, 4)))
bad(char *err, size_t elen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, elen, fmt, ap);
	va_end(ap);
	return -EBADMSG;
}

static const char *
pl_name(uint8_t type)
{
	static const char *const names[] = {
		[IKE_PL_SA] = "SA", [IKE_PL_KE] = "KE", [IKE_PL_IDI] = "IDi",
		[IKE_PL_IDR] = "IDr", [IKE_PL_CERT] = "CERT", [IKE_PL_CERTREQ] = "CERTREQ",
		[IKE_PL_AUTH] = "AUTH", [IKE_PL_NONCE] = "Nonce", [IKE_PL_NOTIFY] = "Notify",
		[IKE_PL_DELETE] = "Delete", [IKE_PL_VENDOR] = "Vendor ID",
		[IKE_PL_TSI] = "TSi", [IKE_PL_TSR] = "TSr", [IKE_PL_SK] = "SK",
		[IKE_PL_CP] = "CP", [IKE_PL_EAP] = "EAP", [IKE_PL_SKF] = "SKF",
	};

	if (type < sizeof(names) / sizeof(names[0]) && names[type] != NULL)
		return names[type];
	return "unknown";
}

int
ike_hdr_parse(const uint8_t *msg, size_t len, struct ike_hdr *h, char *err, size_t elen)
{
	static const uint8_t zero[IKE_SPI_LEN];

	if (len < IKE_HDR_LEN)
		return bad(err, elen, "ike: datagram of %zu bytes, the header alone is %d",
			   len, IKE_HDR_LEN);
	memcpy(h->spi_i, msg, IKE_SPI_LEN);
	memcpy(h->spi_r, msg + 8, IKE_SPI_LEN);
	h->next = msg[16];
	h->version = msg[17];
	h->exchange = msg[18];
	/* Reserved bits MUST be ignored on receipt (section 3.1): drop them here. */
	h->flags = msg[19] & (IKE_F_INITIATOR | IKE_F_VERSION | IKE_F_RESPONSE);
	h->msg_id = get32(msg + 20);
	h->length = get32(msg + 24);
	/* Checked first: the answer to a newer peer is INVALID_MAJOR_VERSION, not silence. */
	if (h->version >> 4 > IKE_VERSION >> 4) {
		snprintf(err, elen, "ike.version: 0x%02x, major version %u above 2",
			 h->version, h->version >> 4);
		return -EPROTO;
	}
	if (h->version >> 4 < IKE_VERSION >> 4)
		return bad(err, elen, "ike.version: 0x%02x, major version %u is not IKEv2",
			   h->version, h->version >> 4);
	if (h->length != len)
		return bad(err, elen, "ike.length: %u, datagram %zu", (unsigned)h->length, len);
	if (memcmp(h->spi_i, zero, IKE_SPI_LEN) == 0)
		return bad(err, elen, "ike.spi_i: zero");
	return 0;
}

static bool
pl_known(uint8_t type)
{
	return (type >= IKE_PL_SA && type <= IKE_PL_EAP) || type == IKE_PL_SKF;
}

int
ike_chain_parse(uint8_t first, const uint8_t *p, size_t len, struct ike_pl *out,
		unsigned max, unsigned *n, char *err, size_t elen)
{
	uint8_t type = first;
	size_t off = 0;

	*n = 0;
	while (type != IKE_PL_NONE) {
		struct ike_pl *pl;
		size_t plen;

		if (len - off < IKE_GEN_HDR_LEN)
			return bad(err, elen, "payload %u (%s): %zu bytes left, its header is %d",
				   *n + 1, pl_name(type), len - off, IKE_GEN_HDR_LEN);
		plen = get16(p + off + 2);
		if (plen < IKE_GEN_HDR_LEN || plen > len - off)
			return bad(err, elen, "payload %u (%s).length: %zu, %zu bytes left",
				   *n + 1, pl_name(type), plen, len - off);
		if (*n == max)
			return bad(err, elen, "payload %u (%s): more than %u payloads",
				   *n + 1, pl_name(type), max);
		pl = &out[(*n)++];
		pl->type = type;
		pl->critical = p[off + 1] & GEN_CRITICAL;
		pl->inner_first = IKE_PL_NONE;
		pl->body = p + off + IKE_GEN_HDR_LEN;
		pl->len = (uint16_t)(plen - IKE_GEN_HDR_LEN);
		/* The bit means "reject if not understood" only for unknown types (3.2). */
		if (pl->critical && !pl_known(type)) {
			snprintf(err, elen, "payload %u: type %u is unknown and critical",
				 *n, type);
			return -ENOTSUP;
		}
		type = p[off];
		off += plen;
		if (pl->type == IKE_PL_SK || pl->type == IKE_PL_SKF) {
			/* Its next-payload field names what is inside (section 3.14). */
			pl->inner_first = type;
			if (off != len)
				return bad(err, elen, "payload %u (%s): %zu bytes after it, "
					   "it must be the last", *n, pl_name(pl->type),
					   len - off);
			return 0;
		}
	}
	if (off != len)
		return bad(err, elen, "payload %u (%s): %zu bytes after the last payload",
			   *n, *n ? pl_name(out[*n - 1].type) : "none", len - off);
	return 0;
}

int
ike_skf_parse(const struct ike_pl *pl, unsigned max, struct ike_skf *out, char *err, size_t elen)
{
	if (pl->type != IKE_PL_SKF || pl->len < IKE_SKF_HDR_LEN)
		return bad(err, elen, "skf.length: %u, at least %d", pl->len, IKE_SKF_HDR_LEN);
	out->number = get16(pl->body);
	out->total = get16(pl->body + 2);
	out->data = pl->body + IKE_SKF_HDR_LEN;
	out->len = pl->len - IKE_SKF_HDR_LEN;
	if (out->total == 0 || out->total > max)
		return bad(err, elen, "skf.total_fragments: %u, 1 to %u", out->total, max);
	if (out->number == 0 || out->number > out->total)
		return bad(err, elen, "skf.fragment_number: %u, 1 to %u", out->number,
			   out->total);
	return 0;
}

/* Key Length (TV) is the only attribute defined; anything else spoils the transform. */
static int
parse_attrs(const uint8_t *a, size_t len, unsigned pi, unsigned ti, struct ike_transform *tr,
	    char *err, size_t elen)
{
	bool unusable = false;
	size_t off = 0;

	tr->key_len = IKE_KEY_LEN_NONE;
	while (off < len) {
		uint16_t at, val;

		if (len - off < ATTR_HDR_LEN)
			return bad(err, elen, "sa.proposal[%u].transform[%u].attribute: %zu "
				   "bytes, at least %d", pi, ti, len - off, ATTR_HDR_LEN);
		at = get16(a + off);
		val = get16(a + off + 2);
		off += ATTR_HDR_LEN;
		if (!(at & IKE_ATTR_AF)) {
			/* TLV: val is the length of the value that follows. */
			if (val > len - off)
				return bad(err, elen, "sa.proposal[%u].transform[%u].attribute "
					   "%u.length: %u, %zu bytes left", pi, ti, at, val,
					   len - off);
			off += val;
			unusable = true;
		} else if ((at & ~IKE_ATTR_AF) == IKE_ATTR_KEY_LENGTH &&
			   tr->key_len == IKE_KEY_LEN_NONE && val <= INT16_MAX) {
			tr->key_len = (int16_t)val;
		} else {
			unusable = true;
		}
	}
	if (unusable)
		tr->key_len = IKE_KEY_LEN_UNUSABLE;
	return 0;
}

static int
parse_transforms(const uint8_t *p, size_t len, unsigned pi, struct ike_proposal *pr,
		 char *err, size_t elen)
{
	size_t off = 0;

	for (unsigned i = 0; i < pr->n_tr; i++) {
		unsigned ti = i + 1;
		uint8_t want = ti == pr->n_tr ? TR_LAST : TR_MORE;
		size_t tlen;
		int rc;

		if (len - off < TR_HDR_LEN)
			return bad(err, elen, "sa.proposal[%u].transform[%u]: %zu bytes left, "
				   "its header is %d (transforms: %u)", pi, ti, len - off,
				   TR_HDR_LEN, pr->n_tr);
		if (p[off] != want && (p[off] == TR_LAST || p[off] == TR_MORE))
			return bad(err, elen, "sa.proposal[%u].transforms: %u, but transform %u "
				   "is marked %s", pi, pr->n_tr, ti,
				   p[off] == TR_LAST ? "last" : "not last");
		if (p[off] != want)
			return bad(err, elen, "sa.proposal[%u].transform[%u].last: %u, expected "
				   "%u", pi, ti, p[off], want);
		tlen = get16(p + off + 2);
		if (tlen < TR_HDR_LEN || tlen > len - off)
			return bad(err, elen, "sa.proposal[%u].transform[%u].length: %zu, %zu "
				   "bytes left", pi, ti, tlen, len - off);
		pr->tr[i].type = p[off + 4];
		pr->tr[i].id = get16(p + off + 6);
		rc = parse_attrs(p + off + TR_HDR_LEN, tlen - TR_HDR_LEN, pi, ti, &pr->tr[i],
				 err, elen);
		if (rc != 0)
			return rc;
		off += tlen;
	}
	if (off != len)
		return bad(err, elen, "sa.proposal[%u]: %zu bytes after transform %u "
			   "(transforms: %u)", pi, len - off, pr->n_tr, pr->n_tr);
	return 0;
}

/* The SPI size a proposal of proto must have in exchange, -1 if we do not judge it. */
static int
spi_len_for(uint8_t proto, uint8_t exchange)
{
	switch (proto) {
	case IKE_PROTO_IKE:
		/* Initial negotiation: the SPIs are in the header (section 3.3.1). */
		return exchange == IKE_SA_INIT ? 0 : IKE_SPI_LEN;
	case IKE_PROTO_AH:
	case IKE_PROTO_ESP:
		return 4;
	default:
		return -1;
	}
}

/*
 * Proposal numbers (section 3.3.1): in a request the first is 1, then the
 * same number (AND) or the next; an answer's one proposal keeps the number
 * it had in the request, any but 0.
 */
static int
check_num(uint8_t num, unsigned idx, uint8_t prev_num, bool answer, char *err, size_t elen)
{
	if (answer)
		return num == 0 ? bad(err, elen, "sa.proposal[1].num: 0, expected 1 to 255 in "
				      "an answer") : 0;
	if (idx == 0 ? num != 1 : (num != prev_num && num != prev_num + 1))
		return bad(err, elen, "sa.proposal[%u].num: %u, expected %s%u", idx + 1, num,
			   idx == 0 ? "" : "the previous or ", idx == 0 ? 1u : prev_num + 1u);
	return 0;
}

static int
parse_proposal(const uint8_t *p, size_t len, uint8_t exchange, unsigned idx, uint8_t prev_num,
	       bool answer, struct ike_proposal *pr, char *err, size_t elen)
{
	unsigned pi = idx + 1;
	int want;

	pr->num = p[4];
	pr->proto = p[5];
	pr->spi_len = p[6];
	pr->n_tr = p[7];
	if (check_num(pr->num, idx, prev_num, answer, err, elen) != 0)
		return -EBADMSG;
	want = spi_len_for(pr->proto, exchange);
	if (want >= 0 && pr->spi_len != want)
		return bad(err, elen, "sa.proposal[%u].spi_size: %u, expected %d for protocol "
			   "%u in exchange %u", pi, pr->spi_len, want, pr->proto, exchange);
	if (pr->spi_len > IKE_SPI_LEN)
		return bad(err, elen, "sa.proposal[%u].spi_size: %u, at most %d (protocol %u)",
			   pi, pr->spi_len, IKE_SPI_LEN, pr->proto);
	if (pr->spi_len > len - PROP_HDR_LEN)
		return bad(err, elen, "sa.proposal[%u].spi_size: %u, proposal length %zu", pi,
			   pr->spi_len, len);
	memcpy(pr->spi, p + PROP_HDR_LEN, pr->spi_len);
	if (pr->n_tr > IKE_MAX_TRANSFORMS)
		return bad(err, elen, "sa.proposal[%u].transforms: %u, at most %d", pi,
			   pr->n_tr, IKE_MAX_TRANSFORMS);
	return parse_transforms(p + PROP_HDR_LEN + pr->spi_len,
				len - PROP_HDR_LEN - pr->spi_len, pi, pr, err, elen);
}

static int
sa_parse(const uint8_t *body, size_t len, uint8_t exchange, bool answer,
	 struct ike_proposal *out, unsigned max, unsigned *n, char *err, size_t elen)
{
	uint8_t more = PROP_MORE;
	size_t off = 0;

	*n = 0;
	while (more == PROP_MORE) {
		unsigned pi = *n + 1;
		size_t plen;
		int rc;

		if (len - off < PROP_HDR_LEN)
			return bad(err, elen, "sa.proposal[%u]: %zu bytes left, its header is %d",
				   pi, len - off, PROP_HDR_LEN);
		more = body[off];
		if (more != PROP_LAST && more != PROP_MORE)
			return bad(err, elen, "sa.proposal[%u].last: %u, expected 0 (last) or "
				   "2 (more)", pi, more);
		if (answer && more != PROP_LAST)
			return bad(err, elen, "sa.proposal[1].last: %u, an answer has exactly "
				   "one proposal", more);
		plen = get16(body + off + 2);
		if (plen < PROP_HDR_LEN || plen > len - off)
			return bad(err, elen, "sa.proposal[%u].length: %zu, %zu bytes left", pi,
				   plen, len - off);
		if (*n == max)
			return bad(err, elen, "sa: more than %u proposals", max);
		rc = parse_proposal(body + off, plen, exchange, *n,
				    *n ? out[*n - 1].num : 0, answer, &out[*n], err, elen);
		if (rc != 0)
			return rc;
		(*n)++;
		off += plen;
	}
	if (off != len)
		return bad(err, elen, "sa: %zu bytes after proposal %u, marked last", len - off,
			   *n);
	return 0;
}

int
ike_sa_parse(const uint8_t *body, size_t len, uint8_t exchange, struct ike_proposal *out,
	     unsigned max, unsigned *n, char *err, size_t elen)
{
	return sa_parse(body, len, exchange, false, out, max, n, err, elen);
}

int
ike_sa_parse_answer(const uint8_t *body, size_t len, uint8_t exchange,
		    struct ike_proposal *out, char *err, size_t elen)
{
	unsigned n;

	return sa_parse(body, len, exchange, true, out, 1, &n, err, elen);
}

int
ike_ke_parse(const uint8_t *body, size_t len, struct ike_ke *ke, char *err, size_t elen)
{
	if (len < 4)
		return bad(err, elen, "ke: %zu bytes, at least 4", len);
	ke->group = get16(body);
	ke->data = body + 4;
	ke->len = len - 4;
	if (ke->len == 0)
		return bad(err, elen, "ke.data: empty (group %u)", ke->group);
	return 0;
}

int
ike_nonce_parse(const uint8_t *body, size_t len, char *err, size_t elen)
{
	(void)body;
	if (len < IKE_NONCE_MIN || len > IKE_NONCE_MAX)
		return bad(err, elen, "nonce: %zu bytes, expected %d..%d", len, IKE_NONCE_MIN,
			   IKE_NONCE_MAX);
	return 0;
}

int
ike_notify_parse(const uint8_t *body, size_t len, struct ike_notify *nt, char *err,
		 size_t elen)
{
	if (len < 4)
		return bad(err, elen, "notify: %zu bytes, at least 4", len);
	nt->proto = body[0];
	nt->spi_len = body[1];
	nt->type = get16(body + 2);
	if (nt->spi_len > len - 4)
		return bad(err, elen, "notify.spi_size: %u, %zu bytes follow (type %u)",
			   nt->spi_len, len - 4, nt->type);
	nt->spi = body + 4;
	nt->data = body + 4 + nt->spi_len;
	nt->data_len = len - 4 - nt->spi_len;
	return 0;
}

int
ike_id_parse(const uint8_t *body, size_t len, struct ike_id *id, char *err, size_t elen)
{
	if (len < 4)
		return bad(err, elen, "id: %zu bytes, at least 4", len);
	id->type = body[0];
	id->data = body + 4;
	id->len = len - 4;
	id->body = body;
	id->body_len = len;
	if (id->len == 0)
		return bad(err, elen, "id.data: empty (type %u)", id->type);
	if (id->type == IKE_ID_IPV4_ADDR && id->len != 4)
		return bad(err, elen, "id.data: %zu bytes for an IPv4 address, expected 4",
			   id->len);
	if (id->type == IKE_ID_IPV6_ADDR && id->len != 16)
		return bad(err, elen, "id.data: %zu bytes for an IPv6 address, expected 16",
			   id->len);
	return 0;
}

int
ike_auth_parse(const uint8_t *body, size_t len, struct ike_auth *a, char *err, size_t elen)
{
	if (len < 4)
		return bad(err, elen, "auth: %zu bytes, at least 4", len);
	a->method = body[0];
	a->data = body + 4;
	a->len = len - 4;
	if (a->len == 0)
		return bad(err, elen, "auth.data: empty (method %u)", a->method);
	return 0;
}

int
ike_cert_parse(const uint8_t *body, size_t len, struct ike_cert *c, char *err, size_t elen)
{
	if (len < 2)
		return bad(err, elen, "cert: %zu bytes, at least 2 (encoding and data)", len);
	c->encoding = body[0];
	c->data = body + 1;
	c->len = len - 1;
	return 0;
}

int
ike_certreq_parse(const uint8_t *body, size_t len, struct ike_cert *c, char *err,
		  size_t elen)
{
	if (len < 1)
		return bad(err, elen, "certreq: empty, at least the encoding");
	c->encoding = body[0];
	c->data = body + 1;
	c->len = len - 1;
	if (c->encoding == IKE_CERT_X509_SIG && c->len % IKE_CERTREQ_HASH_LEN != 0)
		return bad(err, elen, "certreq.authorities: %zu bytes, not a multiple of %d",
			   c->len, IKE_CERTREQ_HASH_LEN);
	return 0;
}

int
ike_sig_hashes_parse(const uint8_t *data, size_t len, uint32_t *mask, char *err,
		     size_t elen)
{
	if (len == 0 || len % 2 != 0)
		return bad(err, elen, "signature_hash_algorithms: %zu bytes, not a non-empty "
			   "list of 2-byte ids", len);
	*mask = 0;
	for (size_t i = 0; i < len; i += 2)
		if (get16(data + i) < 32)
			*mask |= 1u << get16(data + i);
	return 0;
}

size_t
ike_sig_hashes_build(uint32_t mask, uint8_t *out, size_t cap)
{
	size_t n = 0;

	for (unsigned h = 0; h < 32; h++) {
		if (!(mask & (1u << h)))
			continue;
		if (n + 2 > cap)
			return 0;
		out[n++] = 0;
		out[n++] = (uint8_t)h;
	}
	return n;
}

int
ike_delete_parse(const uint8_t *body, size_t len, struct ike_delete *d, char *err,
		 size_t elen)
{
	if (len < 4)
		return bad(err, elen, "delete: %zu bytes, at least 4", len);
	d->proto = body[0];
	d->spi_len = body[1];
	d->count = get16(body + 2);
	d->spis = body + 4;
	switch (d->proto) {
	case IKE_PROTO_IKE:
		/* The IKE SA is the one the message came on: no SPI (section 3.11). */
		if (d->spi_len != 0 || d->count != 0)
			return bad(err, elen, "delete.spi_size: %u, count %u; IKE has none",
				   d->spi_len, d->count);
		break;
	case IKE_PROTO_AH:
	case IKE_PROTO_ESP:
		if (d->spi_len != 4)
			return bad(err, elen, "delete.spi_size: %u, expected 4 for protocol %u",
				   d->spi_len, d->proto);
		break;
	default:
		return bad(err, elen, "delete.proto: %u, expected 1 (IKE), 2 (AH) or 3 (ESP)",
			   d->proto);
	}
	if ((size_t)d->count * d->spi_len != len - 4)
		return bad(err, elen, "delete.count: %u SPIs of %u bytes, but %zu bytes follow",
			   d->count, d->spi_len, len - 4);
	return 0;
}

/* The value length a known attribute must have when not empty; 0 if unknown. */
static size_t
cp_attr_len(uint16_t type)
{
	switch (type) {
	case IKE_CP_IP4_ADDRESS:
	case IKE_CP_IP4_NETMASK:
	case IKE_CP_IP4_DNS:
		return 4;
	case IKE_CP_IP6_ADDRESS:
		return 17;
	case IKE_CP_IP6_DNS:
		return 16;
	default:
		return 0;
	}
}

int
ike_cp_parse(const uint8_t *body, size_t len, struct ike_cp *cp, char *err, size_t elen)
{
	size_t off = CP_HDR_LEN;

	cp->n = 0;
	if (len < CP_HDR_LEN)
		return bad(err, elen, "cp: %zu bytes, at least %d", len, CP_HDR_LEN);
	cp->cfg_type = body[0];
	while (off < len) {
		struct ike_cp_attr *a;
		size_t want;

		if (len - off < CP_ATTR_HDR_LEN)
			return bad(err, elen, "cp.attr[%u]: %zu bytes left, at least %d", cp->n,
				   len - off, CP_ATTR_HDR_LEN);
		if (cp->n == IKE_CP_MAX_ATTRS)
			return bad(err, elen, "cp: more than %d attributes", IKE_CP_MAX_ATTRS);
		a = &cp->attr[cp->n];
		a->type = get16(body + off) & (uint16_t)~CP_ATTR_R;
		a->len = get16(body + off + 2);
		a->value = body + off + CP_ATTR_HDR_LEN;
		if (a->len > len - off - CP_ATTR_HDR_LEN)
			return bad(err, elen, "cp.attr[%u].length: %u, %zu bytes left", cp->n,
				   a->len, len - off - CP_ATTR_HDR_LEN);
		want = cp_attr_len(a->type);
		if (want != 0 && a->len != 0 && a->len != want)
			return bad(err, elen, "cp.attr[%u].length: %u, expected 0 or %zu for type %u",
				   cp->n, a->len, want, a->type);
		off += CP_ATTR_HDR_LEN + a->len;
		cp->n++;
	}
	return 0;
}

static int
parse_selector(const uint8_t *p, size_t slen, unsigned si, struct ike_ts *ts, char *err,
	       size_t elen)
{
	size_t alen = ts->type == IKE_TS_IPV4_ADDR_RANGE ? 4 : 16;

	if (slen != TS_HDR_LEN + 4 + 2 * alen)
		return bad(err, elen, "ts[%u].length: %zu, expected %zu for type %u", si, slen,
			   TS_HDR_LEN + 4 + 2 * alen, ts->type);
	ts->start_port = get16(p + 4);
	ts->end_port = get16(p + 6);
	memcpy(ts->start, p + 8, alen);
	memcpy(ts->end, p + 8 + alen, alen);
	/* 65535..0 is OPAQUE (section 3.13.1); any other reversed range is an error. */
	if (ts->start_port > ts->end_port && !(ts->start_port == 65535 && ts->end_port == 0))
		return bad(err, elen, "ts[%u].end_port: %u, below start_port %u", si,
			   ts->end_port, ts->start_port);
	if (memcmp(ts->start, ts->end, alen) > 0)
		return bad(err, elen, "ts[%u].end: below start", si);
	return 0;
}

int
ike_ts_parse(const uint8_t *body, size_t len, struct ike_ts *out, unsigned max,
	     unsigned *n, char *err, size_t elen)
{
	unsigned count;
	size_t off = 4;

	*n = 0;
	if (len < 4)
		return bad(err, elen, "ts: %zu bytes, at least 4", len);
	count = body[0];
	if (count == 0)
		return bad(err, elen, "ts.count: 0, at least 1");
	for (unsigned si = 1; si <= count; si++) {
		struct ike_ts *ts;
		size_t slen;
		int rc;

		if (len - off < TS_HDR_LEN)
			return bad(err, elen, "ts[%u]: %zu bytes left, at least %d (count %u)",
				   si, len - off, TS_HDR_LEN, count);
		slen = get16(body + off + 2);
		if (slen < TS_HDR_LEN || slen > len - off)
			return bad(err, elen, "ts[%u].length: %zu, %zu bytes left", si, slen,
				   len - off);
		if (*n == max)
			return bad(err, elen, "ts: more than %u selectors", max);
		ts = &out[(*n)++];
		memset(ts, 0, sizeof(*ts));
		ts->type = body[off];
		ts->ip_proto = body[off + 1];
		if (ts->type == IKE_TS_IPV4_ADDR_RANGE || ts->type == IKE_TS_IPV6_ADDR_RANGE) {
			rc = parse_selector(body + off, slen, si, ts, err, elen);
			if (rc != 0)
				return rc;
		}
		off += slen;
	}
	if (off != len)
		return bad(err, elen, "ts: %zu bytes after selector %u (count %u)", len - off,
			   count, count);
	return 0;
}

/* Building. */

static bool
room(struct ike_buf *b, size_t n)
{
	if (b->overflow || n > b->cap - b->len) {
		b->overflow = true;
		return false;
	}
	return true;
}

static void
patch16(struct ike_buf *b, size_t off, size_t v)
{
	if (b->overflow)
		return;
	if (v > UINT16_MAX) {
		b->overflow = true;	/* a length its field cannot hold */
		return;
	}
	b->p[off] = (uint8_t)(v >> 8);
	b->p[off + 1] = (uint8_t)v;
}

void
ike_buf_init(struct ike_buf *b, uint8_t *mem, size_t cap)
{
	b->p = mem;
	b->len = 0;
	b->cap = cap;
	b->overflow = false;
	b->last_next = IKE_NO_NEXT;
	b->first = IKE_PL_NONE;
}

void
ike_put8(struct ike_buf *b, uint8_t v)
{
	if (room(b, 1))
		b->p[b->len++] = v;
}

void
ike_put16(struct ike_buf *b, uint16_t v)
{
	uint8_t be[2] = { (uint8_t)(v >> 8), (uint8_t)v };

	ike_put_bytes(b, be, sizeof(be));
}

void
ike_put32(struct ike_buf *b, uint32_t v)
{
	uint8_t be[4] = { (uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8),
			  (uint8_t)v };

	ike_put_bytes(b, be, sizeof(be));
}

void
ike_put_bytes(struct ike_buf *b, const void *p, size_t n)
{
	if (n == 0 || !room(b, n))
		return;
	memcpy(b->p + b->len, p, n);
	b->len += n;
}

uint8_t *
ike_reserve(struct ike_buf *b, size_t n)
{
	uint8_t *p;

	if (!room(b, n))
		return NULL;
	p = b->p + b->len;
	memset(p, 0, n);
	b->len += n;
	return p;
}

void
ike_build_hdr(struct ike_buf *b, const struct ike_hdr *h)
{
	size_t next = b->len + 16;

	ike_put_bytes(b, h->spi_i, IKE_SPI_LEN);
	ike_put_bytes(b, h->spi_r, IKE_SPI_LEN);
	ike_put8(b, IKE_PL_NONE);	/* set by the first ike_pl_begin() */
	ike_put8(b, IKE_VERSION);
	ike_put8(b, h->exchange);
	ike_put8(b, h->flags);
	ike_put32(b, h->msg_id);
	ike_put32(b, 0);		/* set by ike_finish() */
	if (!b->overflow)
		b->last_next = next;
}

size_t
ike_pl_begin(struct ike_buf *b, uint8_t type, bool critical)
{
	size_t start = b->len;

	if (b->last_next == IKE_NO_MORE) {
		b->overflow = true;	/* SK must be last (section 3.14) */
		return start;
	}
	if (b->first == IKE_PL_NONE)
		b->first = type;
	if (b->last_next != IKE_NO_NEXT)
		b->p[b->last_next] = type;
	ike_put8(b, IKE_PL_NONE);
	ike_put8(b, critical ? GEN_CRITICAL : 0);
	ike_put16(b, 0);
	if (!b->overflow)
		b->last_next = start;
	return start;
}

void
ike_pl_end(struct ike_buf *b, size_t start)
{
	patch16(b, start + 2, b->len - start);
}

size_t
ike_sk_begin(struct ike_buf *b, uint8_t type, uint8_t inner_first)
{
	size_t start = ike_pl_begin(b, type, false);

	if (!b->overflow)
		b->p[start] = inner_first;
	b->last_next = IKE_NO_MORE;
	return start;
}

static void
build_proposal(struct ike_buf *b, const struct ike_proposal *pr, bool last)
{
	size_t start = b->len;

	if (pr->spi_len > IKE_SPI_LEN || pr->n_tr > IKE_MAX_TRANSFORMS) {
		b->overflow = true;
		return;
	}
	ike_put8(b, last ? PROP_LAST : PROP_MORE);
	ike_put8(b, 0);
	ike_put16(b, 0);
	ike_put8(b, pr->num);
	ike_put8(b, pr->proto);
	ike_put8(b, pr->spi_len);
	ike_put8(b, (uint8_t)pr->n_tr);
	ike_put_bytes(b, pr->spi, pr->spi_len);
	for (unsigned i = 0; i < pr->n_tr; i++) {
		const struct ike_transform *tr = &pr->tr[i];
		bool kl = tr->key_len >= 0;

		ike_put8(b, i + 1 == pr->n_tr ? TR_LAST : TR_MORE);
		ike_put8(b, 0);
		ike_put16(b, kl ? TR_HDR_LEN + ATTR_HDR_LEN : TR_HDR_LEN);
		ike_put8(b, tr->type);
		ike_put8(b, 0);
		ike_put16(b, tr->id);
		if (kl) {
			ike_put16(b, IKE_ATTR_AF | IKE_ATTR_KEY_LENGTH);
			ike_put16(b, (uint16_t)tr->key_len);
		}
	}
	patch16(b, start + 2, b->len - start);
}

void
ike_build_sa(struct ike_buf *b, const struct ike_proposal *prop, unsigned n)
{
	size_t start = ike_pl_begin(b, IKE_PL_SA, false);

	for (unsigned i = 0; i < n; i++)
		build_proposal(b, &prop[i], i + 1 == n);
	ike_pl_end(b, start);
}

void
ike_build_ke(struct ike_buf *b, uint16_t group, const uint8_t *data, size_t len)
{
	size_t start = ike_pl_begin(b, IKE_PL_KE, false);

	ike_put16(b, group);
	ike_put16(b, 0);
	ike_put_bytes(b, data, len);
	ike_pl_end(b, start);
}

void
ike_build_nonce(struct ike_buf *b, const uint8_t *nonce, size_t len)
{
	size_t start = ike_pl_begin(b, IKE_PL_NONCE, false);

	ike_put_bytes(b, nonce, len);
	ike_pl_end(b, start);
}

void
ike_build_notify(struct ike_buf *b, const struct ike_notify *nt)
{
	size_t start = ike_pl_begin(b, IKE_PL_NOTIFY, false);

	ike_put8(b, nt->proto);
	ike_put8(b, nt->spi_len);
	ike_put16(b, nt->type);
	ike_put_bytes(b, nt->spi, nt->spi_len);
	ike_put_bytes(b, nt->data, nt->data_len);
	ike_pl_end(b, start);
}

/* ID and AUTH: a type byte, three reserved bytes and the data. */
static void
build_typed(struct ike_buf *b, uint8_t pl, uint8_t type, const uint8_t *data, size_t len)
{
	size_t start = ike_pl_begin(b, pl, false);

	ike_put8(b, type);
	ike_put8(b, 0);
	ike_put16(b, 0);
	ike_put_bytes(b, data, len);
	ike_pl_end(b, start);
}

void
ike_build_id(struct ike_buf *b, uint8_t type, const struct ike_id *id)
{
	build_typed(b, type, id->type, id->data, id->len);
}

void
ike_build_auth(struct ike_buf *b, const struct ike_auth *a)
{
	build_typed(b, IKE_PL_AUTH, a->method, a->data, a->len);
}

void
ike_build_cert(struct ike_buf *b, uint8_t type, const struct ike_cert *c)
{
	size_t start = ike_pl_begin(b, type, false);

	ike_put8(b, c->encoding);
	ike_put_bytes(b, c->data, c->len);
	ike_pl_end(b, start);
}

void
ike_build_ts(struct ike_buf *b, uint8_t type, const struct ike_ts *ts, unsigned n)
{
	size_t start = ike_pl_begin(b, type, false);

	if (n > UINT8_MAX)
		b->overflow = true;
	ike_put8(b, (uint8_t)n);
	ike_put8(b, 0);
	ike_put16(b, 0);
	for (unsigned i = 0; i < n; i++) {
		size_t alen = ts[i].type == IKE_TS_IPV4_ADDR_RANGE ? 4 : 16;

		/* Only the two address-range types have a known layout to write. */
		if (ts[i].type != IKE_TS_IPV4_ADDR_RANGE && ts[i].type != IKE_TS_IPV6_ADDR_RANGE)
			b->overflow = true;
		ike_put8(b, ts[i].type);
		ike_put8(b, ts[i].ip_proto);
		ike_put16(b, (uint16_t)(TS_HDR_LEN + 4 + 2 * alen));
		ike_put16(b, ts[i].start_port);
		ike_put16(b, ts[i].end_port);
		ike_put_bytes(b, ts[i].start, alen);
		ike_put_bytes(b, ts[i].end, alen);
	}
	ike_pl_end(b, start);
}

void
ike_build_delete(struct ike_buf *b, const struct ike_delete *d)
{
	size_t start = ike_pl_begin(b, IKE_PL_DELETE, false);

	ike_put8(b, d->proto);
	ike_put8(b, d->spi_len);
	ike_put16(b, d->count);
	ike_put_bytes(b, d->spis, (size_t)d->count * d->spi_len);
	ike_pl_end(b, start);
}

void
ike_build_cp(struct ike_buf *b, const struct ike_cp *cp)
{
	size_t start = ike_pl_begin(b, IKE_PL_CP, false);

	ike_put8(b, cp->cfg_type);
	ike_put8(b, 0);
	ike_put16(b, 0);
	for (unsigned i = 0; i < cp->n; i++) {
		if (cp->attr[i].type & CP_ATTR_R)
			b->overflow = true;	/* not a type: the reserved bit */
		ike_put16(b, cp->attr[i].type);
		ike_put16(b, cp->attr[i].len);
		ike_put_bytes(b, cp->attr[i].value, cp->attr[i].len);
	}
	ike_pl_end(b, start);
}

int
ike_finish(struct ike_buf *b)
{
	if (b->overflow)
		return -ENOSPC;
	if (b->len < IKE_HDR_LEN)
		return -EINVAL;		/* no header: an inner chain has nothing to finish */
	if (b->len > UINT32_MAX)
		return -ENOSPC;
	b->p[24] = (uint8_t)(b->len >> 24);
	b->p[25] = (uint8_t)(b->len >> 16);
	b->p[26] = (uint8_t)(b->len >> 8);
	b->p[27] = (uint8_t)b->len;
	return 0;
}
