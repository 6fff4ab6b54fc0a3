/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ike_info.c - INFORMATIONAL (RFC 7296 1.4) in both roles: liveness checks
 * and Delete of a CHILD_SA or of the IKE SA.
 */
#include "ike_int.h"

/* ---- INFORMATIONAL ------------------------------------------------------ */

int
ike_info_send(struct ike_ctx *ctx, struct ike_sa *sa, enum req_kind kind, uint64_t now)
{
	uint8_t inner[64], out[MSG_MAX], spi[4];
	struct ike_delete d = { 0 };
	struct ike_buf in;
	struct ike_hdr h;
	size_t len;
	int rc;

	if (sa->req_kind != REQ_NONE) {
		/* Window of one: after the exchange in progress. */
		sa->want_del_ike |= kind == REQ_DEL_IKE;
		sa->want_del_child |= kind == REQ_DEL_CHILD;
		sa->want_del_dup |= kind == REQ_DEL_DUP;
		return 0;
	}
	ike_buf_init(&in, inner, sizeof(inner));
	if (kind == REQ_DEL_IKE) {
		d.proto = IKE_PROTO_IKE;
		ike_build_delete(&in, &d);
		if (sa->state != IKE_ST_REKEYED)	/* that says more */
			sa->state = IKE_ST_DELETING;
	} else if (kind == REQ_DEL_CHILD || kind == REQ_DEL_OLD || kind == REQ_DEL_DUP) {
		put32(spi, kind == REQ_DEL_OLD ? sa->old.spi_in :
			   kind == REQ_DEL_DUP ? sa->dup.spi_in : sa->child.spi_in);
		d = (struct ike_delete){ IKE_PROTO_ESP, 4, 1, spi };
		ike_build_delete(&in, &d);
	}
	ike_hdr_for(sa, &h, IKE_INFORMATIONAL, false, sa->next_req_id);
	rc = ike_seal_msg(sa, &h, &in, out, sizeof(out), &len);
	if (rc == 0)
		rc = ike_request_start(ctx, sa, kind, h.msg_id, out, len, now);
	if (rc == 0 && kind == REQ_DEL_OLD) {
		/* The rekey's break: out with the Delete, whatever the answer. */
		sa->old_del_ms = 0;
		ike_child_down(ctx, sa, &sa->old);
	}
	if (rc == 0 && kind == REQ_DEL_DUP)
		ike_child_down(ctx, sa, &sa->dup);	/* never carried traffic */
	return rc;
}

int
ike_info_response(struct ike_ctx *ctx, struct ike_sa *sa, uint64_t now)
{
	enum req_kind k = sa->req_kind;

	ike_request_done(sa);
	if (k == REQ_DEL_IKE) {
		ike_sa_end(ctx, sa, sa->why[0] ? sa->why : "deleted");
		return 0;
	}
	if (k == REQ_DEL_CHILD)
		ike_child_gone(ctx, sa);
	return ike_next_request(ctx, sa, now);
}

int
ike_info_request(struct ike_ctx *ctx, struct ike_sa *sa, const struct ike_hdr *h,
	     const struct view *v, uint64_t now)
{
	bool del_ike = false, del_child = false, del_old = false, del_dup = false;
	uint8_t inner[64], spi[12];
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
			del_child |= sa->child.up && ike_delete_spi(&d, j) == sa->child.spi_out;
			del_old |= sa->old.up && ike_delete_spi(&d, j) == sa->old.spi_out;
			del_dup |= sa->dup.up && ike_delete_spi(&d, j) == sa->dup.spi_out;
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
	if (del_child || del_old || del_dup) {
		/* Ours of the same pairs (1.4.1): current, rekeyed, redundant (2.8.1). */
		struct ike_delete d = { IKE_PROTO_ESP, 4, 0, spi };

		if (del_child)
			put32(spi + 4 * d.count++, sa->child.spi_in);
		if (del_old)
			put32(spi + 4 * d.count++, sa->old.spi_in);
		if (del_dup)
			put32(spi + 4 * d.count++, sa->dup.spi_in);
		ike_build_delete(&in, &d);
	}
	rc = ike_respond(ctx, sa, h, &in);
	if (del_child)
		ike_child_gone(ctx, sa);
	if (del_dup)
		ike_child_down(ctx, sa, &sa->dup);
	if (del_old)
		ike_child_down(ctx, sa, &sa->old);
	return rc;
}
