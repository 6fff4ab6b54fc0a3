/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ike_timer.c - time (ike_tick): when our request goes again (2.1; the
 * transport's ike_request_resend sends it) or is given up, half-open and
 * replaced SAs' expiry, lifetime rekeys and liveness checks that are due.
 * Which of our requests goes next once one is answered is the manager's
 * (ike_sa.c ike_next_request), which a Delete that came due asks too.  On
 * top with the dispatcher: it calls the exchanges, nothing calls it.
 */
#include <stdio.h>

#include "ike_int.h"

/* ---- timers ------------------------------------------------------------- */

static void
retransmit(struct ike_ctx *ctx, struct ike_sa *sa, uint64_t now)
{
	static const char *const names[] = {
		[REQ_INIT] = "IKE_SA_INIT", [REQ_AUTH] = "IKE_AUTH",
		[REQ_DPD] = "liveness check", [REQ_DEL_CHILD] = "CHILD_SA Delete",
		[REQ_DEL_IKE] = "IKE SA Delete", [REQ_REKEY] = "CHILD_SA rekey",
		[REQ_DEL_OLD] = "rekeyed CHILD_SA Delete", [REQ_IKE_REKEY] = "IKE SA rekey",
		[REQ_DEL_DUP] = "redundant CHILD_SA Delete", [REQ_CREATE] = "CREATE_CHILD_SA",
		[REQ_DEL_SPIS] = "CHILD_SA Delete",
	};
	char why[WHY_LEN];

	if (sa->req_kind == REQ_NONE || now < sa->next_tx_ms)
		return;
	if (sa->tries >= sa->conn->cfg.retrans_tries) {
		snprintf(why, sizeof(why), "no response to %s after %u tries",
			 names[sa->req_kind], sa->tries);
		ike_sa_end(ctx, sa, why);
		return;
	}
	ike_request_resend(ctx, sa, now);
}

/* The initiator of the IKE SA rekeys a CHILD_SA this old (so both ends never race). */
static bool
rekey_due(const struct ike_sa *sa, uint64_t now)
{
	uint32_t life = KCFG(sa)->child_rekey_ms;

	return sa->initiator && life != 0 && KID(sa)->child.up && !KID(sa)->old.up &&
	       !KID(sa)->dup.up && !KID(sa)->want_rekey &&
	       now >= KID(sa)->child.up_ms + life && now >= KID(sa)->rekey_retry_ms;
}

/*
 * The rekey's old CHILD_SA goes.  A redundant one of crossing rekeys whose
 * Delete the peer has not sent by now goes first, here only (it never
 * carried traffic), so that the policy moves to the one that stays.
 */
static void
del_old(struct ike_ctx *ctx, struct ike_sa *sa, uint64_t now)
{
	if (KID(sa)->dup.up && !KID(sa)->dup_ours)
		ike_child_down(ctx, sa, &KID(sa)->dup);
	ike_info_send(ctx, sa, REQ_DEL_OLD, now);
}

enum kid_due { KID_DUE_DUP, KID_DUE_OLD, KID_DUE_REKEY, KID_DUE_CREATE };

/* Is work of this kind due on a CHILD_SA?  Then it is KID(sa) (sa->ck). */
static bool
kid_due(struct ike_sa *sa, uint64_t now, enum kid_due what)
{
	for (sa->ck = 0; sa->ck < sa->n_kids; sa->ck++) {
		const struct child_sa *k = KID(sa);

		if ((what == KID_DUE_DUP && k->want_del_dup) ||
		    (what == KID_DUE_OLD && k->old.up && k->old_del_ms != 0 &&
		     now >= k->old_del_ms) ||
		    (what == KID_DUE_REKEY && rekey_due(sa, now)) ||
		    (what == KID_DUE_CREATE && !k->child.up && k->create_retry_ms != 0 &&
		     now >= k->create_retry_ms))
			return true;
	}
	sa->ck = 0;
	return false;
}

/* A new request of ours that is due, with none outstanding: 1 if one was sent. */
static bool
request_due(struct ike_ctx *ctx, struct ike_sa *sa, uint64_t now)
{
	uint32_t dpd = sa->conn->cfg.dpd_ms;

	if (sa->state != IKE_ST_ESTABLISHED || sa->req_kind != REQ_NONE)
		return false;
	if (kid_due(sa, now, KID_DUE_DUP))
		ike_next_request(ctx, sa, now);
	else if (kid_due(sa, now, KID_DUE_OLD))
		del_old(ctx, sa, now);
	else if (ike_rekey_due(sa, now))
		ike_rekey_send(ctx, sa, now);
	else if (kid_due(sa, now, KID_DUE_REKEY))
		ike_child_rekey_send(ctx, sa, now);
	else if (kid_due(sa, now, KID_DUE_CREATE))
		ike_child_create_send(ctx, sa, now);
	else if (dpd != 0 && now >= sa->last_rx_ms + dpd)
		/* An empty INFORMATIONAL: its answer, or its retransmissions' end. */
		ike_info_send(ctx, sa, REQ_DPD, now);
	else
		return false;
	return true;
}

void
ike_tick(struct ike_ctx *ctx, uint64_t now_ms)
{
	struct ike_sa *sa, *next;

	for (sa = ctx->sas; sa != NULL; sa = next) {
		next = sa->next;	/* sa may go */
		ike_frag_expire(ctx, sa, now_ms);
		if (sa->state == IKE_ST_HALF_OPEN && now_ms >= sa->created_ms + HALF_OPEN_MS) {
			ctx->stats.half_open_expired++;
			ike_sa_end(ctx, sa, "half-open SA expired");
		} else if (sa->state == IKE_ST_REKEYED && sa->req_kind == REQ_NONE &&
			   now_ms >= sa->created_ms + REKEYED_MS) {
			/* The peer's Delete of the SA it replaced never came. */
			ike_sa_end(ctx, sa, "replaced by a rekey");
		} else if (!request_due(ctx, sa, now_ms)) {
			retransmit(ctx, sa, now_ms);
		}
	}
}
