/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ike_info.c - INFORMATIONAL (RFC 7296 1.4) in both roles: liveness checks
 * and Delete of a CHILD_SA or of the IKE SA.  An exchange (ike_int.h): what
 * goes after our request's answer is the manager's (ike_sa.c), left to it
 * in struct ike_next.
 */
#include "ike_int.h"

/* ---- INFORMATIONAL ------------------------------------------------------ */

int
ike_info_send(struct ike_ctx *ctx, struct ike_sa *sa, enum req_kind kind, uint64_t now)
{
	uint8_t inner[64 + 12 * IKE_KIDS_MAX], out[MSG_MAX], spi[12 * IKE_KIDS_MAX];
	struct ike_delete d = { 0 };
	struct ike_buf in;
	struct ike_hdr h;
	size_t len;
	int rc;

	if (sa->req_kind != REQ_NONE) {
		/* Window of one: after the exchange in progress. */
		sa->want_del_ike |= kind == REQ_DEL_IKE;
		KID(sa)->want_del_child |= kind == REQ_DEL_CHILD;
		KID(sa)->want_del_dup |= kind == REQ_DEL_DUP;
		return 0;
	}
	ike_buf_init(&in, inner, sizeof(inner));
	if (kind == REQ_DEL_IKE) {
		d.proto = IKE_PROTO_IKE;
		ike_build_delete(&in, &d);
		if (sa->state != IKE_ST_REKEYED)	/* that says more */
			sa->state = IKE_ST_DELETING;
	} else if (kind == REQ_DEL_CHILD || kind == REQ_DEL_OLD || kind == REQ_DEL_DUP) {
		put32(spi, kind == REQ_DEL_OLD ? KID(sa)->old.spi_in :
			   kind == REQ_DEL_DUP ? KID(sa)->dup.spi_in : KID(sa)->child.spi_in);
		d = (struct ike_delete){ IKE_PROTO_ESP, 4, 1, spi };
		ike_build_delete(&in, &d);
	} else if (kind == REQ_DEL_SPIS) {
		if (sa->n_del_spis == 0)
			return 0;
		for (unsigned i = 0; i < sa->n_del_spis; i++)
			put32(spi + 4 * i, sa->del_spis[i]);
		d = (struct ike_delete){ IKE_PROTO_ESP, 4, (uint16_t)sa->n_del_spis, spi };
		sa->n_del_spis = 0;
		ike_build_delete(&in, &d);
	}
	ike_hdr_for(sa, &h, IKE_INFORMATIONAL, false, sa->next_req_id);
	rc = ike_seal_msg(sa, &h, &in, out, sizeof(out), &len);
	if (rc == 0)
		rc = ike_request_start(ctx, sa, kind, h.msg_id, out, len, now);
	if (rc == 0 && kind == REQ_DEL_OLD) {
		/* The rekey's break: out with the Delete, whatever the answer. */
		KID(sa)->old_del_ms = 0;
		ike_child_down(ctx, sa, &KID(sa)->old);
	}
	if (rc == 0 && kind == REQ_DEL_DUP)
		ike_child_down(ctx, sa, &KID(sa)->dup);	/* never carried traffic */
	return rc;
}

int
ike_info_response(struct ike_ctx *ctx, struct ike_sa *sa, struct ike_next *nx)
{
	enum req_kind k = sa->req_kind;

	ike_request_done(sa);
	if (k == REQ_DEL_IKE) {
		ike_sa_end(ctx, sa, sa->why != NULL ? sa->why : "deleted");
		return 0;
	}
	if (k == REQ_DEL_CHILD)
		ike_child_gone(ctx, sa);
	return ike_then(nx, sa, REQ_NONE);
}

int
ike_info_request(struct ike_ctx *ctx, struct ike_sa *sa, const struct ike_hdr *h,
	     const struct view *v, uint64_t now)
{
	/* per CHILD_SA: its current, rekeyed (old) and redundant (dup) pairs */
	bool del_ike = false, any = false, del[IKE_KIDS_MAX][3] = { { false } };
	uint8_t inner[64 + 12 * IKE_KIDS_MAX], spi[12 * IKE_KIDS_MAX];
	char err[ERR_LEN];
	struct ike_buf in;
	int rc;

	ike_buf_init(&in, inner, sizeof(inner));
	for (unsigned i = 0; i < v->n; i++) {
		struct ike_delete d;

		if (v->pl[i].type != IKE_PL_DELETE)
			continue;
		if (ike_delete_parse(v->pl[i].body, v->pl[i].len, &d, err, sizeof(err)) != 0) {
			ike_drop(ctx, sa, IKE_REJ_MALFORMED, 0, err);
			ike_put_notify(&in, IKE_N_INVALID_SYNTAX, NULL, 0);
			return ike_respond(ctx, sa, h, &in);
		}
		del_ike |= d.proto == IKE_PROTO_IKE;
		for (unsigned j = 0; d.proto == IKE_PROTO_ESP && j < d.count; j++) {
			uint32_t x = ike_delete_spi(&d, j);

			for (unsigned n = 0; n < sa->n_kids; n++) {
				const struct child_sa *k = ike_kid(sa, n);

				del[n][0] |= k->child.up && x == k->child.spi_out;
				del[n][1] |= k->old.up && x == k->old.spi_out;
				del[n][2] |= k->dup.up && x == k->dup.spi_out;
				any |= del[n][0] || del[n][1] || del[n][2];
			}
		}
	}
	if (del_ike) {
		/* The peer won crossing IKE SA rekeys before our answer came (2.8.2). */
		if (sa->ike_cross != NULL)
			ike_rekey_cross_take(ctx, sa, now);
		ike_respond(ctx, sa, h, &in);
		ike_sa_end(ctx, sa, "deleted by the peer");
		return 0;
	}
	if (any) {
		/* Ours of the same pairs (1.4.1): current, rekeyed, redundant (2.8.1). */
		struct ike_delete d = { IKE_PROTO_ESP, 4, 0, spi };

		for (unsigned n = 0; n < sa->n_kids; n++) {
			const struct child_sa *k = ike_kid(sa, n);

			if (del[n][0])
				put32(spi + 4 * d.count++, k->child.spi_in);
			if (del[n][1])
				put32(spi + 4 * d.count++, k->old.spi_in);
			if (del[n][2])
				put32(spi + 4 * d.count++, k->dup.spi_in);
		}
		ike_build_delete(&in, &d);
	}
	rc = ike_respond(ctx, sa, h, &in);
	for (sa->ck = 0; sa->ck < sa->n_kids; sa->ck++) {
		if (del[sa->ck][0])
			ike_child_gone(ctx, sa);
		if (del[sa->ck][2])
			ike_child_down(ctx, sa, &KID(sa)->dup);
		if (del[sa->ck][1])
			ike_child_down(ctx, sa, &KID(sa)->old);
	}
	sa->ck = 0;
	return rc;
}
