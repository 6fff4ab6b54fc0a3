/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ha.c - a pair of gateways, one set of tunnels (ha.h, doc/ha.md): the
 * node's role, what its IKE tunnels hold in the dataplane (the journal),
 * the sync channel's messages both ways, and the takeover.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ha.h"
#include "config_parse.h"
#include "ha_chan.h"
#include "ha_wire.h"
#include "idx.h"
#include "ikd.h"
#include "install.h"
#include "mono.h"

/*
 * The journal: what this node's dataplane holds for IKE tunnels, with the
 * keys (a backup that connects later gets it whole; the journal of a backup
 * is what it applied, so that once master it can give it on).  Arrays with
 * hash indexes (idx.h): SAs by (SPI, direction), policies by selectors and
 * by outbound SPI; a change costs O(1), a whole state O(SAs).
 */
struct j_sa {
	struct dpvpn_sa_cfg m;		/* as sent to the dataplane: keys */
	uint8_t group;			/* of its tunnel (group_of) */
	uint32_t by_key;		/* ha.sa_idx: the next of its bucket (idx.h) */
};

struct j_pol {
	struct dpvpn_policy p;
	uint8_t group;
	uint32_t by_sel, by_spi;	/* ha.pol_idx, ha.spi_idx: the next of its bucket */
};

/*
 * The names of the tunnels of the second group (their local address is one
 * of its virtual addresses): open addressing, a power of 2 at most half
 * full, rebuilt from each config.  Every other tunnel is the first group's.
 */
struct names {
	char (*e)[DPVPN_NAME_LEN];
	size_t cap;
};

#define HA_GROUPS	CFG_HA_GROUP_MAX

/*
 * The backup's inbound high marks by SPI (network order): open addressing,
 * a power of 2 at most half full, no removal (a mark of an SA gone is
 * refused at takeover: -ENOENT); cleared by SNAP_BEGIN.
 */
struct marks {
	struct ha_mark *e;		/* spi 0: empty */
	size_t n, cap;
};

#define HA_MARKS_EVERY_MS	1000	/* the master sends its inbound high marks */

struct pending {			/* a block granted once the backup has it */
	uint32_t msgno;
	uint32_t spi;			/* host order */
	uint64_t limit;
};

static struct {
	bool on, verbose;
	struct cfg_ha cfg;		/* its key wiped at ha_close */
	struct dp_client *dp;
	struct seqstate *seq;
	struct ha_ops ops;
	struct ha_chan *chan;
	/* groups: the config's `group`s of virtual-address, in order (one, or two
	 * when both nodes are active); each a VRRP instance of keepalived */
	unsigned n_groups;
	char group[HA_GROUPS][DPVPN_NAME_LEN];
	struct names second;		/* the second group's tunnels */
	uint8_t role[HA_GROUPS];	/* keepalived's word, per group */
	uint8_t owned;			/* bit g: this node carries group g now */
	uint8_t split;			/* bit g: both nodes master of g (split brain) */
	uint64_t split_brains;
	uint64_t epoch;			/* takeovers seen, this node's or the peer's */
	/* the peer, from its HELLO and ROLE */
	bool peer_hello, incompatible;
	uint8_t peer_role[HA_GROUPS], peer_priority;
	uint64_t peer_epoch;
	char peer_node[DPVPN_NAME_LEN];
	/* the stream: our message numbers, the peer's acknowledgement, its numbers */
	uint32_t tx_seq, acked, rx_last, rx_acked;
	bool synced;			/* backup: a whole state applied since the channel came up */
	bool had_snapshot;		/* backup: the last connection brought a whole state */
	uint64_t stale_takeovers;
	size_t floors;			/* inbound windows raised at the last takeover */
	uint32_t snap_end_seq;		/* master: the last snapshot's end, in our numbers */
	uint64_t down_since, last_rx, took_over_at, gap_ms;
	uint64_t applied, apply_errors, resyncs, ignored, blocks_refused;
	struct dpvpn_vip_set vipset[CFG_HA_VIP_MAX];	/* per port with virtual addresses */
	/* each one's group: IPv4 ones by index, IPv6 ones after DPVPN_VIP_MAX */
	uint8_t vipgroup[CFG_HA_VIP_MAX][DPVPN_VIP_MAX + DPVPN_VIP6_MAX];
	size_t n_vipset;
	struct j_sa *sas;
	size_t n_sas, cap_sas;
	struct j_pol *pols;
	size_t n_pols, cap_pols;
	struct idx sa_idx, pol_idx, spi_idx;
	struct pending *pend;
	size_t n_pend, cap_pend;
	struct marks marks;
	uint64_t next_marks;
} ha;

static uint8_t frame[HA_FRAME_MAX] __attribute__((aligned(8)));
static uint8_t rxbuf[HA_FRAME_MAX] __attribute__((aligned(8)));

bool ha_configured(void)
{
	return ha.on;
}

bool ha_master(void)
{
	return !ha.on || ha.owned != 0;
}

/* ---- groups ---- */

/* The slot of name's first n bytes: its own, or the empty one it would take. */
static char *names_slot(const struct names *t, const char *name, size_t n)
{
	size_t i = idx_fnv(IDX_FNV_START, name, n) & (t->cap - 1);

	while (t->e[i][0] != '\0' && (strncmp(t->e[i], name, n) || t->e[i][n] != '\0'))
		i = (i + 1) & (t->cap - 1);
	return t->e[i];
}

/*
 * A tunnel's group by the name of its SA, record or reservation (a
 * remote-access client's "conn/..." by its conn's): the second when its
 * local address is one of the second group's virtual addresses.
 */
static uint8_t group_of(const char *name)
{
	size_t n;

	if (ha.n_groups < 2 || ha.second.cap == 0)
		return 0;
	n = strcspn(name, "/");
	n = n < DPVPN_NAME_LEN - 1 ? n : DPVPN_NAME_LEN - 1;
	return names_slot(&ha.second, name, n)[0] != '\0';
}

static int group_index(const char *name)
{
	for (unsigned g = 0; g < ha.n_groups; g++)
		if (!strcmp(ha.group[g], name))
			return (int)g;
	return -1;
}

void ha_tunnels(const struct cfg *cfg)
{
	struct names t = { .cap = 64 };
	size_t n = cfg->n_tunnels;

	if (!ha.on || ha.n_groups < 2)
		return;
	while (t.cap < 2 * n + 2)
		t.cap *= 2;
	t.e = calloc(t.cap, sizeof(*t.e));
	if (t.e == NULL) {
		fprintf(stderr, "dpvpnd: ha: out of memory: every tunnel counted in group %s\n",
			ha.group[0]);
		t.cap = 0;
	}
	for (size_t i = 0; t.e != NULL && i < cfg->n_tunnels; i++) {
		const struct cfg_tunnel *tu = cfg->tunnels[i];

		for (size_t v = 0; v < cfg->ha.n_vips; v++)
			if (cfg_addr_equal(&tu->local, &cfg->ha.vips[v].addr.addr) &&
			    group_index(cfg->ha.vips[v].group) == 1) {
				char *e = names_slot(&t, tu->name, strlen(tu->name));

				snprintf(e, DPVPN_NAME_LEN, "%s", tu->name);
				break;
			}
	}
	free(ha.second.e);
	ha.second = t;
}

/* Is the peer there to talk to (a HELLO of our version on a channel up)? */
static bool peer_up(void)
{
	return ha.chan != NULL && ha_chan_up(ha.chan) && ha.peer_hello && !ha.incompatible;
}

/*
 * Both nodes master of one group (split brain: VRRP between them cut): the
 * higher priority carries it, on equal ones the node whose name sorts
 * first; the other acts as its backup until one of them is told otherwise.
 */
static bool we_win(void)
{
	return ha.cfg.priority != ha.peer_priority ? ha.cfg.priority > ha.peer_priority :
						     strcmp(ha.cfg.node, ha.peer_node) < 0;
}

/*
 * The peer is up and heard from lately (half of dead-ms, three heartbeats
 * at least): alive, not frozen.
 */
static bool peer_fresh(void)
{
	uint64_t within = ha.cfg.dead_ms / 2;

	if (within < 3 * (uint64_t)ha.cfg.heartbeat_ms)
		within = 3 * (uint64_t)ha.cfg.heartbeat_ms;
	return peer_up() && mono_ms() - ha.last_rx < within;
}

static bool both_master(unsigned g)
{
	return peer_fresh() && ha.role[g] == HA_ROLE_MASTER && ha.peer_role[g] == HA_ROLE_MASTER;
}

/* The groups this node should carry now. */
static uint8_t want_owned(void)
{
	uint8_t w = 0;

	for (unsigned g = 0; g < ha.n_groups; g++)
		if (ha.role[g] == HA_ROLE_MASTER && !(both_master(g) && !we_win()))
			w |= (uint8_t)(1u << g);
	return w;
}

/* The peer carries group g: it takes no state of g from here. */
static bool peer_carries(unsigned g)
{
	return peer_up() && ha.peer_role[g] == HA_ROLE_MASTER && !(both_master(g) && we_win());
}

static bool owns_group(uint8_t g)
{
	return (ha.owned >> g) & 1;
}

bool ha_owns(const char *tunnel)
{
	return !ha.on || owns_group(group_of(tunnel));
}

/* ---- the journal ---- */

static uint32_t *sa_next(size_t i)
{
	return &ha.sas[i].by_key;
}

static uint32_t *pol_next(size_t i)
{
	return &ha.pols[i].by_sel;
}

static uint32_t *spi_next(size_t i)
{
	return &ha.pols[i].by_spi;
}

static uint32_t sa_hash(uint32_t spi, uint8_t dir)
{
	return idx_fnv(idx_fnv(IDX_FNV_START, &spi, sizeof(spi)), &dir, 1) % IDX_BUCKETS;
}

static uint32_t spi_hash(uint32_t spi)
{
	return idx_fnv(IDX_FNV_START, &spi, sizeof(spi)) % IDX_BUCKETS;
}

static uint32_t pol_hash(const struct dpvpn_policy *p)
{
	return idx_fnv(idx_fnv(IDX_FNV_START, &p->src, sizeof(p->src)), &p->dst,
		       sizeof(p->dst)) % IDX_BUCKETS;
}

static size_t sa_find(uint32_t spi, uint8_t dir)
{
	for (uint32_t e = ha.sa_idx.head[sa_hash(spi, dir)]; e != 0; e = ha.sas[e - 1].by_key)
		if (ha.sas[e - 1].m.spi == spi && ha.sas[e - 1].m.dir == dir)
			return e - 1;
	return SIZE_MAX;
}

/* ha.sas[i] goes (its keys wiped): the last takes its place and its links. */
static void sa_remove(size_t i)
{
	size_t last = ha.n_sas - 1;
	const struct dpvpn_sa_cfg *m = &ha.sas[i].m;

	idx_relink(&ha.sa_idx, sa_hash(m->spi, m->dir), i, 0, sa_next);
	if (i != last) {
		m = &ha.sas[last].m;
		idx_relink(&ha.sa_idx, sa_hash(m->spi, m->dir), last, (uint32_t)i + 1, sa_next);
		ha.sas[i] = ha.sas[last];
	}
	ha.n_sas--;
	explicit_bzero(&ha.sas[last], sizeof(ha.sas[0]));
}

/* ha.pols[i] goes: the last takes its place and its links. */
static void pol_remove(size_t i)
{
	size_t last = ha.n_pols - 1;
	const struct dpvpn_policy *p = &ha.pols[i].p;

	idx_relink(&ha.pol_idx, pol_hash(p), i, 0, pol_next);
	idx_relink(&ha.spi_idx, spi_hash(p->spi), i, 0, spi_next);
	if (i != last) {
		p = &ha.pols[last].p;
		idx_relink(&ha.pol_idx, pol_hash(p), last, (uint32_t)i + 1, pol_next);
		idx_relink(&ha.spi_idx, spi_hash(p->spi), last, (uint32_t)i + 1, spi_next);
		ha.pols[i] = ha.pols[last];
	}
	ha.n_pols--;
}

/* An SA's group, by the tunnel name it carries. */
static uint8_t sa_group(const struct dpvpn_sa_cfg *m)
{
	char name[DPVPN_NAME_LEN];

	snprintf(name, sizeof(name), "%.*s", DPVPN_NAME_LEN - 1, m->name);
	return group_of(name);
}

static bool same_sel(const struct dpvpn_policy *a, const struct dpvpn_policy *b)
{
	return !memcmp(&a->src, &b->src, sizeof(a->src)) && !memcmp(&a->dst, &b->dst, sizeof(a->dst));
}

static void *grow(void *p, size_t *cap, size_t n, size_t size)
{
	size_t c = *cap ? 2 * *cap : 64;
	void *q;

	if (n < *cap)
		return p;
	q = realloc(p, c * size);	/* (no keys in these: see grow_sas) */
	if (q != NULL)
		*cap = c;
	return q;
}

/* The SA array grows by copy: the old one (keys) wiped before it is freed. */
static struct j_sa *grow_sas(void)
{
	size_t c = ha.cap_sas ? 2 * ha.cap_sas : 64;
	struct j_sa *s;

	if (ha.n_sas < ha.cap_sas)
		return ha.sas;
	s = calloc(c, sizeof(*s));
	if (s == NULL)
		return NULL;
	if (ha.sas != NULL) {
		memcpy(s, ha.sas, ha.n_sas * sizeof(*s));
		explicit_bzero(ha.sas, ha.cap_sas * sizeof(*s));
		free(ha.sas);
	}
	ha.cap_sas = c;
	return s;
}

static void j_sa_set(const struct dpvpn_sa_cfg *m)
{
	size_t i = sa_find(m->spi, m->dir);

	if (i == SIZE_MAX) {
		struct j_sa *s = grow_sas();

		if (s == NULL) {
			fprintf(stderr, "dpvpnd: ha: out of memory: SA 0x%08x not journalled\n",
				ntohl(m->spi));
			return;
		}
		ha.sas = s;
		i = ha.n_sas++;
		ha.sas[i].m = *m;
		idx_add(&ha.sa_idx, sa_hash(m->spi, m->dir), i, sa_next);
	}
	ha.sas[i].m = *m;
	ha.sas[i].group = sa_group(m);
}

/* The policies of outbound SA spi went with it. */
static void j_pol_del_spi(uint32_t spi)
{
	uint32_t e = ha.spi_idx.head[spi_hash(spi)];

	while (e != 0) {
		uint32_t next = ha.pols[e - 1].by_spi;

		if (ha.pols[e - 1].p.spi == spi) {
			pol_remove(e - 1);
			e = ha.spi_idx.head[spi_hash(spi)];	/* (the last moved: again) */
			continue;
		}
		e = next;
	}
}

static void j_sa_del(uint32_t spi, uint8_t dir)
{
	size_t i = sa_find(spi, dir);

	if (dir == DPVPN_DIR_OUT)	/* its policies went with it */
		j_pol_del_spi(spi);
	if (i != SIZE_MAX)
		sa_remove(i);
}

/* A policy's journal entry, or SIZE_MAX. */
static size_t pol_find(const struct dpvpn_policy *p)
{
	for (uint32_t e = ha.pol_idx.head[pol_hash(p)]; e != 0; e = ha.pols[e - 1].by_sel)
		if (same_sel(&ha.pols[e - 1].p, p))
			return e - 1;
	return SIZE_MAX;
}

static void j_pol(uint16_t type, const struct dpvpn_policy *p, uint8_t group)
{
	size_t i = pol_find(p);
	struct j_pol *q;

	if (i != SIZE_MAX) {
		if (type != DPVPN_MSG_POLICY_ADD) {
			pol_remove(i);
			return;
		}
		if (ha.pols[i].p.spi != p->spi) {	/* switched to another SA: its bucket */
			idx_relink(&ha.spi_idx, spi_hash(ha.pols[i].p.spi), i, 0, spi_next);
			ha.pols[i].p.spi = p->spi;
			idx_add(&ha.spi_idx, spi_hash(p->spi), i, spi_next);
		}
		ha.pols[i].p = *p;
		ha.pols[i].group = group;
		return;
	}
	if (type != DPVPN_MSG_POLICY_ADD)
		return;
	q = grow(ha.pols, &ha.cap_pols, ha.n_pols, sizeof(*q));
	if (q == NULL)
		return;
	ha.pols = q;
	i = ha.n_pols++;
	ha.pols[i] = (struct j_pol){ .p = *p, .group = group };
	idx_add(&ha.pol_idx, pol_hash(p), i, pol_next);
	idx_add(&ha.spi_idx, spi_hash(p->spi), i, spi_next);
}

/* A policy's group: its outbound SA's (the SA comes first), else its entry's. */
static uint8_t pol_group(const struct dpvpn_policy *p)
{
	size_t i = p->spi ? sa_find(p->spi, DPVPN_DIR_OUT) : SIZE_MAX;

	if (i != SIZE_MAX)
		return ha.sas[i].group;
	i = pol_find(p);
	return i != SIZE_MAX ? ha.pols[i].group : 0;
}

static struct ha_chan_cfg chan_cfg;	/* (its key points into ha.cfg) */
static bool reset_due;

/*
 * The stream cannot go on (a message not queued, a reservation not saved):
 * the channel is closed and opened again, so that the peer sees it go down
 * and the state is sent whole once it is back.  Done from ha_run.
 */
static void chan_reset(void)
{
	char err[256];

	reset_due = false;
	ha_chan_close(ha.chan);
	ha.chan = ha_chan_open(&chan_cfg, err, sizeof(err));
	if (ha.chan == NULL)
		fprintf(stderr, "dpvpnd: ha: sync channel not opened again: %s\n", err);
}

/* ---- the backup's inbound high marks ---- */

static struct ha_mark *mark_slot(struct marks *t, uint32_t spi)
{
	size_t i = (spi * 2654435761u) & (t->cap - 1);

	while (t->e[i].spi != 0 && t->e[i].spi != spi)
		i = (i + 1) & (t->cap - 1);
	return &t->e[i];
}

static void mark_set(struct marks *t, uint32_t spi, uint64_t high)
{
	struct ha_mark *m;

	if (2 * (t->n + 1) > t->cap) {
		struct marks bigger = { .cap = t->cap ? 2 * t->cap : 1024 };

		bigger.e = calloc(bigger.cap, sizeof(*bigger.e));
		if (bigger.e == NULL)
			return;		/* (its window starts where it is: logged at takeover) */
		for (size_t i = 0; i < t->cap; i++)
			if (t->e[i].spi != 0)
				*mark_slot(&bigger, t->e[i].spi) = t->e[i];
		bigger.n = t->n;
		free(t->e);
		*t = bigger;
	}
	m = mark_slot(t, spi);
	if (m->spi == 0) {
		m->spi = spi;
		t->n++;
	}
	if (high > m->high)
		m->high = high;
}

static void marks_clear(struct marks *t)
{
	free(t->e);
	*t = (struct marks){ 0 };
}

/* ---- sending ---- */

/* The peer takes group g's state from here (it is there and does not carry g). */
static bool peer_backup_of(uint8_t g)
{
	return peer_up() && !peer_carries(g);
}

/* One message to the peer; the frame (keys) wiped after. */
static void send_msg(struct ha_msg *m)
{
	size_t n;
	int rc;

	if (ha.chan == NULL || !ha_chan_up(ha.chan))
		return;
	m->seq = ++ha.tx_seq;
	n = ha_encode(frame, sizeof(frame), m);
	if (n == 0) {
		fprintf(stderr, "dpvpnd: ha: a %s message did not encode\n", ha_type_name(m->type));
		return;
	}
	rc = ha_chan_send(ha.chan, frame, n);
	explicit_bzero(frame, n);
	if (rc != 0 && rc != -ENOTCONN && !reset_due) {
		fprintf(stderr, "dpvpnd: ha: to the peer: %s: the channel starts again (the "
			"peer gets the whole state once back)\n", strerror(-rc));
		reset_due = true;
	}
}

static void send_hello(void)
{
	struct ha_msg m = { .type = HA_HELLO };

	m.u.hello.version = HA_HELLO_VERSION;
	m.u.hello.sa_size = sizeof(struct dpvpn_sa_cfg);
	m.u.hello.role = ha.role[0];
	m.u.hello.role_b = ha.role[1];
	m.u.hello.priority = ha.cfg.priority;
	m.u.hello.epoch = ha.epoch;
	snprintf(m.u.hello.node, sizeof(m.u.hello.node), "%s", ha.cfg.node);
	send_msg(&m);
}

static void send_role(void)
{
	struct ha_msg m = { .type = HA_ROLE, .u.role = { .role = ha.role[0], .role_b = ha.role[1],
							  .epoch = ha.epoch } };

	send_msg(&m);
}

static void send_sa_add(const struct dpvpn_sa_cfg *sa)
{
	struct ha_msg m = { .type = HA_SA_ADD, .u.sa_add.sa = sa };

	send_msg(&m);
}

static void send_policy(uint16_t type, const struct dpvpn_policy *p)
{
	struct ha_msg m = { .type = HA_POLICY };

	m.u.policy.op = type == DPVPN_MSG_POLICY_ADD ? HA_POLICY_ADD : HA_POLICY_DEL;
	m.u.policy.p = *p;
	send_msg(&m);
}

static void send_seq(const char *name, uint32_t spi, uint64_t limit)
{
	struct ha_msg m = { .type = HA_SEQ };

	snprintf(m.u.seq.name, sizeof(m.u.seq.name), "%s", name);
	m.u.seq.spi = htonl(spi);	/* (the codec's SPIs: network order) */
	m.u.seq.limit = limit;
	send_msg(&m);
}

/* An IKE SA record's group, by its tunnel. */
static uint8_t rec_group(const void *rec, uint32_t len)
{
	char name[DPVPN_NAME_LEN];

	return ikd_keep_tunnel(rec, len, name) ? group_of(name) : 0;
}

/* The records this dataplane keeps of the groups in mask, each as IKE_SET. */
static uint32_t send_records(uint8_t mask)
{
	static uint8_t reply[DPVPN_MSG_MAX] __attribute__((aligned(8)));
	uint32_t start = 0, total = 0, sent = 0;

	do {
		struct dpvpn_dump_req req = { .start = start };
		const struct dpvpn_dump_hdr *h = (const struct dpvpn_dump_hdr *)reply;
		size_t at = sizeof(*h);
		uint32_t got, count;

		if (dp_call_var(ha.dp, DPVPN_MSG_KEEP_LIST, &req, sizeof(req), reply, sizeof(reply),
				&got) != 0 || got < sizeof(*h))
			break;
		total = h->total;
		count = h->count;
		for (uint32_t i = 0; i < count; i++) {
			struct dpvpn_keep rh;
			struct ha_msg m = { .type = HA_IKE_SET };

			if (at + sizeof(rh) > got)
				break;
			memcpy(&rh, reply + at, sizeof(rh));
			if (rh.len > got - at - sizeof(rh) || rh.len == 0 || rh.len > DPVPN_KEEP_MAX)
				break;
			memcpy(m.u.ike_set.key, rh.key, sizeof(rh.key));
			m.u.ike_set.len = rh.len;
			m.u.ike_set.rec = reply + at + sizeof(rh);
			at += sizeof(rh) + rh.len;
			if (!(mask >> rec_group(m.u.ike_set.rec, rh.len) & 1))
				continue;
			send_msg(&m);
			sent++;
		}
		explicit_bzero(reply, got);
		start += count;
		if (count == 0)
			break;
	} while (start < total);
	return sent;
}

/* Every outbound SA's reservation of the groups in mask (static tunnels' too): SEQ. */
static uint32_t send_limits(uint8_t mask)
{
	struct dpvpn_sa_info *sa;
	uint32_t n, sent = 0;

	if (dp_dump(ha.dp, DPVPN_MSG_SHOW_SA, sizeof(*sa), (void **)&sa, &n) != 0)
		return 0;
	for (uint32_t i = 0; i < n; i++) {
		char name[DPVPN_NAME_LEN];
		uint64_t limit;

		if (sa[i].dir != DPVPN_DIR_OUT)
			continue;
		snprintf(name, sizeof(name), "%.*s", DPVPN_NAME_LEN - 1, sa[i].name);
		if (!(mask >> group_of(name) & 1))
			continue;
		limit = seq_get(ha.seq, name, ntohl(sa[i].spi));
		if (limit != 0) {
			send_seq(name, ntohl(sa[i].spi), limit);
			sent++;
		}
	}
	free(sa);
	return sent;
}

/* An inbound SA of a group this node carries (and the peer takes from here)? */
static bool marks_of(const struct dpvpn_sa_info *sa)
{
	char name[DPVPN_NAME_LEN];
	uint8_t g;

	if (sa->dir != DPVPN_DIR_IN || sa->seq == 0)
		return false;
	snprintf(name, sizeof(name), "%.*s", DPVPN_NAME_LEN - 1, sa->name);
	g = group_of(name);
	return owns_group(g) && peer_backup_of(g);
}

/* Every inbound SA's highest number accepted, HA_MARKS_MAX a frame. */
static void send_marks(void)
{
	struct ha_mark batch[HA_MARKS_MAX];
	struct dpvpn_sa_info *sa;
	uint32_t n;
	uint16_t k = 0;

	if (dp_dump(ha.dp, DPVPN_MSG_SHOW_SA, sizeof(*sa), (void **)&sa, &n) != 0)
		return;
	for (uint32_t i = 0; i <= n; i++) {
		if (k == HA_MARKS_MAX || (i == n && k > 0)) {
			size_t len = ha_encode_marks(frame, sizeof(frame), ++ha.tx_seq, batch, k);
			int rc = len ? ha_chan_send(ha.chan, frame, len) : 0;

			if (rc != 0 && rc != -ENOTCONN)
				reset_due = true;	/* (the stream has a hole: start again) */
			k = 0;
		}
		if (i < n && marks_of(&sa[i]))
			batch[k++] = (struct ha_mark){ .spi = sa[i].spi, .high = sa[i].seq };
	}
	free(sa);
}

/*
 * The peer gets the whole state of the groups this node carries: what it
 * holds of them goes, ours comes, then SNAP_END (it knows which groups from
 * our roles).  Limits first: an SA arrives silent at or above them.
 */
static void send_snapshot(void)
{
	struct ha_msg m = { .type = HA_SNAP_BEGIN, .u.snap_begin.epoch = ha.epoch };
	uint8_t mask = 0;
	uint32_t count = 0;
	size_t sas = 0, pols = 0;

	for (uint8_t g = 0; g < ha.n_groups; g++)
		if (owns_group(g) && peer_backup_of(g))
			mask |= (uint8_t)(1u << g);
	if (mask == 0)
		return;
	send_msg(&m);
	count += send_limits(mask);
	for (size_t i = 0; i < ha.n_sas; i++)
		if (mask >> ha.sas[i].group & 1) {
			send_sa_add(&ha.sas[i].m);
			sas++;
		}
	for (size_t i = 0; i < ha.n_pols; i++)
		if (mask >> ha.pols[i].group & 1) {
			send_policy(DPVPN_MSG_POLICY_ADD, &ha.pols[i].p);
			pols++;
		}
	count += (uint32_t)(sas + pols) + send_records(mask);
	m = (struct ha_msg){ .type = HA_SNAP_END, .u.snap_end.count = count };
	send_msg(&m);
	ha.snap_end_seq = ha.tx_seq;
	ha.resyncs++;
	fprintf(stderr, "dpvpnd: ha: the whole state to %s: %u messages (%zu SAs, %zu policies)\n",
		ha.peer_node, count, sas, pols);
}

/* ---- the master's taps ---- */

static void tap_sent(const struct cfg_tunnel *t, uint16_t type, const void *msg, uint32_t len)
{
	uint8_t g;

	(void)len;	/* (each type's own size) */
	if (!ha.on || !t->ike.on || !owns_group(g = group_of(t->name)))
		return;
	switch (type) {
	case DPVPN_MSG_SA_ADD:
		j_sa_set(msg);
		if (peer_backup_of(g))
			send_sa_add(msg);
		break;
	case DPVPN_MSG_SA_DEL: {
		const struct dpvpn_sa_id *id = msg;
		struct ha_msg m = { .type = HA_SA_DEL };

		j_sa_del(id->spi, id->dir);
		snprintf(m.u.sa_del.name, sizeof(m.u.sa_del.name), "%s", t->name);
		m.u.sa_del.spi = id->spi;
		m.u.sa_del.dir = id->dir;
		if (peer_backup_of(g))
			send_msg(&m);
		break;
	}
	case DPVPN_MSG_POLICY_ADD:
	case DPVPN_MSG_POLICY_DEL:
		j_pol(type, msg, g);
		if (peer_backup_of(g))
			send_policy(type, msg);
		break;
	default:
		break;
	}
}

static void grant_now(uint32_t spi, uint64_t limit)
{
	struct dpvpn_seq_grant g = { .spi = htonl(spi), .limit = limit };

	if (dp_call(ha.dp, DPVPN_MSG_SEQ_GRANT, &g, sizeof(g), NULL, 0) != 0 &&
	    ha.dp->status != -ENOENT)	/* (an SA gone since: nothing to grant) */
		fprintf(stderr, "dpvpnd: ha: seq grant 0x%08x: %s\n", spi, ha.dp->err);
}

bool ha_seq_hold(const char *name, uint32_t spi, uint64_t limit)
{
	struct pending *p;

	uint8_t g = group_of(name);

	if (ha.on && !owns_group(g) && peer_carries(g)) {
		ha.blocks_refused++;	/* the peer carries it: numbers here only at a takeover */
		return true;
	}
	if (!ha.on || !owns_group(g) || !peer_backup_of(g))
		return false;	/* no backup to wait for: at once */
	p = grow(ha.pend, &ha.cap_pend, ha.n_pend, sizeof(*p));
	if (p == NULL)
		return false;
	ha.pend = p;
	send_seq(name, spi, limit);
	ha.pend[ha.n_pend++] = (struct pending){ .msgno = ha.tx_seq, .spi = spi, .limit = limit };
	return true;
}

static bool hold_tap(const char *name, uint32_t spi, uint64_t limit)
{
	return ha_seq_hold(name, spi, limit);
}

/* The backup has every message up to acked (or is gone: all). */
static void grant_pending(bool all)
{
	size_t k = 0;

	for (size_t i = 0; i < ha.n_pend; i++) {
		if (all || (int32_t)(ha.acked - ha.pend[i].msgno) >= 0)
			grant_now(ha.pend[i].spi, ha.pend[i].limit);
		else
			ha.pend[k++] = ha.pend[i];
	}
	ha.n_pend = k;
}

void ha_keep(const char *conn, const uint8_t *key, const void *rec, uint32_t len)
{
	struct ha_msg m = { .type = rec ? HA_IKE_SET : HA_IKE_DEL };
	uint8_t g = conn != NULL ? group_of(conn) : 0;

	if (!ha.on || !owns_group(g) || !peer_backup_of(g))
		return;
	if (rec != NULL) {
		memcpy(m.u.ike_set.key, key, DPVPN_KEEP_KEY_LEN);
		m.u.ike_set.len = len;
		m.u.ike_set.rec = rec;
	} else {
		memcpy(m.u.ike_del.key, key, DPVPN_KEEP_KEY_LEN);
	}
	send_msg(&m);
}

/* ---- the backup applies ---- */

static int dp_apply(uint16_t type, const void *msg, uint32_t len)
{
	int rc = dp_call(ha.dp, type, msg, len, NULL, 0);

	if (rc != 0 && ha.dp->status == -EEXIST && type == DPVPN_MSG_SA_ADD) {
		const struct dpvpn_sa_cfg *m = msg;
		struct dpvpn_sa_id id = { .spi = m->spi, .dir = m->dir };

		(void)dp_call(ha.dp, DPVPN_MSG_SA_DEL, &id, sizeof(id), NULL, 0);
		rc = dp_call(ha.dp, type, msg, len, NULL, 0);
	}
	if (rc != 0 && ha.dp->status == -ENOENT &&
	    (type == DPVPN_MSG_SA_DEL || type == DPVPN_MSG_POLICY_DEL || type == DPVPN_MSG_KEEP_DEL))
		rc = 0;		/* gone already: as wanted */
	if (rc != 0) {
		ha.apply_errors++;
		fprintf(stderr, "dpvpnd: ha: from %s: %s\n", ha.peer_node, ha.dp->err);
	}
	return rc;
}

/* An SA as the backup holds it: an outbound one silent at the highest block. */
static void apply_sa_add(const struct dpvpn_sa_cfg *in)
{
	struct dpvpn_sa_cfg m = *in;

	if (m.dir == DPVPN_DIR_OUT) {
		char name[DPVPN_NAME_LEN];
		uint64_t l;

		snprintf(name, sizeof(name), "%.*s", DPVPN_NAME_LEN - 1, m.name);
		l = seq_get(ha.seq, name, ntohl(m.spi));
		l = l > m.seq_limit ? l : m.seq_limit;
		l = l > m.seq_start ? l : m.seq_start;
		m.seq_start = m.seq_limit = l ? l : 1;
	}
	if (dp_apply(DPVPN_MSG_SA_ADD, &m, sizeof(m)) == 0)
		j_sa_set(in);
	explicit_bzero(&m, sizeof(m));
}

static void apply_keep(const struct ha_msg *m)
{
	static uint8_t buf[sizeof(struct dpvpn_keep) + DPVPN_KEEP_MAX] __attribute__((aligned(8)));
	struct dpvpn_keep *k = (struct dpvpn_keep *)buf;
	uint32_t len = 0;

	memset(k, 0, sizeof(*k));
	if (m->type == HA_IKE_SET) {
		memcpy(k->key, m->u.ike_set.key, sizeof(k->key));
		memcpy(k + 1, m->u.ike_set.rec, m->u.ike_set.len);
		k->len = len = m->u.ike_set.len;
	} else {
		memcpy(k->key, m->u.ike_del.key, sizeof(k->key));
	}
	dp_apply(m->type == HA_IKE_SET ? DPVPN_MSG_KEEP_SET : DPVPN_MSG_KEEP_DEL, buf,
		 (uint32_t)sizeof(*k) + len);
	explicit_bzero(buf, sizeof(*k) + len);
}

/* SNAP_BEGIN: what this node holds of the IKE tunnels of the groups in mask goes. */
static void forget_groups(uint8_t mask)
{
	static uint8_t reply[DPVPN_MSG_MAX] __attribute__((aligned(8)));
	uint8_t (*keys)[DPVPN_KEEP_KEY_LEN] = NULL;
	uint32_t n_keys = 0, got;
	struct dpvpn_dump_req req = { .start = 0 };

	for (size_t i = ha.n_pols; i-- > 0;)	/* (from the end: the last moves into i) */
		if (mask >> ha.pols[i].group & 1) {
			dp_apply(DPVPN_MSG_POLICY_DEL, &ha.pols[i].p, sizeof(ha.pols[i].p));
			pol_remove(i);
		}
	for (size_t i = ha.n_sas; i-- > 0;)
		if (mask >> ha.sas[i].group & 1) {
			struct dpvpn_sa_id id = { .spi = ha.sas[i].m.spi, .dir = ha.sas[i].m.dir };

			dp_apply(DPVPN_MSG_SA_DEL, &id, sizeof(id));
			sa_remove(i);
		}
	/* the records, listed first (a removal moves them about), then removed */
	for (;;) {
		const struct dpvpn_dump_hdr *h = (const struct dpvpn_dump_hdr *)reply;
		size_t at = sizeof(*h);

		if (dp_call_var(ha.dp, DPVPN_MSG_KEEP_LIST, &req, sizeof(req), reply, sizeof(reply),
				&got) != 0 || got < sizeof(*h) || h->count == 0)
			break;
		void *nk = realloc(keys, (n_keys + h->count) * sizeof(*keys));

		if (nk == NULL)
			break;
		keys = nk;
		for (uint32_t i = 0; i < h->count && at + sizeof(struct dpvpn_keep) <= got; i++) {
			struct dpvpn_keep rh;

			memcpy(&rh, reply + at, sizeof(rh));
			if (rh.len <= got - at - sizeof(rh) &&
			    mask >> rec_group(reply + at + sizeof(rh), rh.len) & 1)
				memcpy(keys[n_keys++], rh.key, sizeof(rh.key));
			at += sizeof(rh) + rh.len;
		}
		req.start += h->count;
		explicit_bzero(reply, got);
		if (req.start >= ((const struct dpvpn_dump_hdr *)reply)->total && got >= sizeof(*h))
			break;
	}
	for (uint32_t i = 0; i < n_keys; i++) {
		struct dpvpn_keep del = { .len = 0 };

		memcpy(del.key, keys[i], sizeof(del.key));
		dp_apply(DPVPN_MSG_KEEP_DEL, &del, sizeof(del));
	}
	free(keys);
}

/* The groups the peer's snapshot brings: those it carries, not this node. */
static uint8_t peer_groups(void)
{
	uint8_t mask = 0;

	for (uint8_t g = 0; g < ha.n_groups; g++)
		if (peer_carries(g) && !owns_group(g))
			mask |= (uint8_t)(1u << g);
	return mask;
}

/*
 * The group a message of the peer's state is of (the tunnel it names), or
 * -1 for one that is not of a group (the snapshot's ends).
 */
static int msg_group(const struct ha_msg *m)
{
	switch (m->type) {
	case HA_IKE_SET:
		return rec_group(m->u.ike_set.rec, m->u.ike_set.len);
	case HA_SA_ADD:
		return sa_group(m->u.sa_add.sa);
	case HA_SA_DEL:
		return group_of(m->u.sa_del.name);
	case HA_SEQ:
		return group_of(m->u.seq.name);
	case HA_POLICY:
		return pol_group(&m->u.policy.p);
	default:
		return -1;	/* (IKE_DEL names a key only: see doc/ha.md) */
	}
}

static void apply(const struct ha_msg *m)
{
	int g = msg_group(m);

	if (g >= 0 && owns_group((uint8_t)g)) {
		ha.ignored++;	/* ours: a master takes no state of its groups */
		return;
	}
	switch (m->type) {
	case HA_SNAP_BEGIN:
		ha.synced = ha.had_snapshot = false;
		forget_groups(peer_groups());
		marks_clear(&ha.marks);
		break;
	case HA_SNAP_END:
		ha.synced = ha.had_snapshot = true;
		fprintf(stderr, "dpvpnd: ha: in sync with %s (%zu SAs, %zu policies)\n",
			ha.peer_node, ha.n_sas, ha.n_pols);
		break;
	case HA_IKE_SET:
	case HA_IKE_DEL:
		apply_keep(m);
		break;
	case HA_SA_ADD:
		apply_sa_add(m->u.sa_add.sa);
		break;
	case HA_SA_DEL: {
		struct dpvpn_sa_id id = { .spi = m->u.sa_del.spi, .dir = m->u.sa_del.dir };

		dp_apply(DPVPN_MSG_SA_DEL, &id, sizeof(id));
		j_sa_del(id.spi, id.dir);
		break;
	}
	case HA_POLICY: {
		uint16_t type = m->u.policy.op == HA_POLICY_ADD ? DPVPN_MSG_POLICY_ADD :
								   DPVPN_MSG_POLICY_DEL;

		if (type == DPVPN_MSG_POLICY_ADD)	/* in place of one on its selectors */
			(void)dp_call(ha.dp, DPVPN_MSG_POLICY_DEL, &m->u.policy.p,
				      sizeof(m->u.policy.p), NULL, 0);
		if (dp_apply(type, &m->u.policy.p, sizeof(m->u.policy.p)) == 0)
			j_pol(type, &m->u.policy.p, (uint8_t)g);
		break;
	}
	case HA_SEQ: {
		uint32_t spi = ntohl(m->u.seq.spi);

		if (m->u.seq.limit > seq_get(ha.seq, m->u.seq.name, spi) &&
		    seq_put(ha.seq, m->u.seq.name, spi, m->u.seq.limit) != 0) {
			ha.apply_errors++;	/* not on disk: no ACK may say it is */
			fprintf(stderr, "dpvpnd: ha: sequence reservation of %s not saved (%s): "
				"the channel starts again\n", m->u.seq.name, strerror(errno));
			reset_due = true;
			return;
		}
		break;
	}
	default:
		return;
	}
	ha.applied++;
}

/* ---- the peer ---- */

static void settle(char *msg, size_t len);

/* The groups whose state this node sends the peer. */
static uint8_t feeding(void)
{
	uint8_t mask = 0;

	for (uint8_t g = 0; g < ha.n_groups; g++)
		if (owns_group(g) && peer_backup_of(g))
			mask |= (uint8_t)(1u << g);
	return mask;
}

/* After the peer's roles changed: ours settled; a group it now takes from here: whole. */
static void peer_changed(uint8_t fed_before)
{
	settle(NULL, 0);
	if (feeding() & ~fed_before)
		send_snapshot();
}

static void on_hello(const struct ha_msg *m)
{
	uint8_t fed = feeding();

	ha.peer_hello = true;
	ha.peer_role[0] = m->u.hello.role;
	ha.peer_role[1] = m->u.hello.role_b;
	ha.peer_priority = m->u.hello.priority;
	ha.peer_epoch = m->u.hello.epoch;
	snprintf(ha.peer_node, sizeof(ha.peer_node), "%s", m->u.hello.node);
	ha.incompatible = m->u.hello.version != HA_HELLO_VERSION ||
			  m->u.hello.sa_size != sizeof(struct dpvpn_sa_cfg);
	if (ha.incompatible) {
		fprintf(stderr, "dpvpnd: ha: peer %s runs another version (sync %08x, SA %u "
			"bytes; here %08x, %zu): nothing synced\n", ha.peer_node, m->u.hello.version,
			m->u.hello.sa_size, HA_HELLO_VERSION, sizeof(struct dpvpn_sa_cfg));
		return;
	}
	fprintf(stderr, "dpvpnd: ha: peer %s is %s%s%s (priority %u)\n", ha.peer_node,
		ha_role_name(ha.peer_role[0]), ha.n_groups > 1 ? " and " : "",
		ha.n_groups > 1 ? ha_role_name(ha.peer_role[1]) : "", ha.peer_priority);
	peer_changed(fed);
}

static void on_message(const struct ha_msg *m)
{
	ha.last_rx = mono_ms();
	ha.rx_last = m->seq;
	switch (m->type) {
	case HA_HELLO:
		on_hello(m);
		return;
	case HA_ROLE: {
		uint8_t fed = feeding();

		ha.peer_role[0] = m->u.role.role;
		ha.peer_role[1] = m->u.role.role_b;
		ha.peer_epoch = m->u.role.epoch;
		fprintf(stderr, "dpvpnd: ha: peer %s is now %s%s%s\n", ha.peer_node,
			ha_role_name(ha.peer_role[0]), ha.n_groups > 1 ? " and " : "",
			ha.n_groups > 1 ? ha_role_name(ha.peer_role[1]) : "");
		if (peer_up())
			peer_changed(fed);
		return;
	}
	case HA_ACK:
		ha.acked = m->u.ack.seq;
		grant_pending(false);
		return;
	case HA_MARKS:		/* (of the peer's groups: used when one is taken over) */
		for (uint16_t i = 0; i < m->u.marks.count; i++) {
			struct ha_mark k;

			ha_mark_get(m, i, &k);
			mark_set(&ha.marks, k.spi, k.high);
		}
		return;
	default:
		break;
	}
	if (!ha.incompatible)
		apply(m);	/* (not a group this node carries: apply checks) */
}

static void channel_events(int ev)
{
	if (ev & HA_CHAN_EV_DOWN) {
		ha.down_since = mono_ms();
		ha.peer_hello = false;
		ha.synced = false;
		fprintf(stderr, "dpvpnd: ha: sync channel down: %s\n", ha_chan_why(ha.chan));
		if (ha.n_pend > 0)
			fprintf(stderr, "dpvpnd: ha: peer gone: %zu sequence blocks granted without "
				"it\n", ha.n_pend);
		grant_pending(true);
		settle(NULL, 0);	/* a group yielded to the peer in a split brain: ours */
	}
	if (ev & HA_CHAN_EV_UP) {
		ha.down_since = 0;
		ha.tx_seq = ha.acked = ha.rx_last = ha.rx_acked = 0;
		fprintf(stderr, "dpvpnd: ha: sync channel up\n");
		send_hello();
	}
}

void ha_run(void)
{
	ssize_t n;
	int ev;

	if (!ha.on)
		return;
	if (ha.chan == NULL || reset_due) {
		if (ha.chan != NULL)
			channel_events(HA_CHAN_EV_DOWN);
		chan_reset();
		if (ha.chan == NULL)
			return;
	}
	ev = ha_chan_run(ha.chan, mono_ms());
	if (ev & (HA_CHAN_EV_UP | HA_CHAN_EV_DOWN))
		channel_events(ev);
	while (!reset_due && (n = ha_chan_recv(ha.chan, rxbuf, sizeof(rxbuf))) > 0) {
		struct ha_msg m;
		char err[160];

		if (ha_decode(rxbuf, (size_t)n, &m, err, sizeof(err)) != 0) {
			ha.apply_errors++;
			fprintf(stderr, "dpvpnd: ha: from %s: bad message: %s\n", ha.peer_node, err);
		} else {
			on_message(&m);
		}
		explicit_bzero(rxbuf, (size_t)n);
	}
	for (unsigned g = 0; g < ha.n_groups && g < HA_GROUPS; g++)
		if ((ha.split >> g & 1) && !both_master(g)) {
			settle(NULL, 0);	/* a split brain, and the peer silent or master no more */
			break;
		}
	if (!reset_due && feeding() && mono_ms() >= ha.next_marks) {
		send_marks();
		ha.next_marks = mono_ms() + HA_MARKS_EVERY_MS;
	}
	if (!reset_due && ha_chan_up(ha.chan) && ha.rx_last != ha.rx_acked) {	/* applied: said once a pass */
		struct ha_msg a = { .type = HA_ACK, .u.ack.seq = ha.rx_last };

		ha.rx_acked = ha.rx_last;
		send_msg(&a);
		(void)ha_chan_run(ha.chan, mono_ms());	/* (on its way now) */
	}
}

int ha_pollfds(struct pollfd *pfd, int max)
{
	return ha.on && ha.chan != NULL ? ha_chan_pollfds(ha.chan, pfd, max) : 0;
}

int ha_timeout_ms(void)
{
	if (!ha.on)
		return -1;
	return ha.chan != NULL && !reset_due ? ha_chan_timeout_ms(ha.chan, mono_ms()) : 100;
}

/* ---- virtual addresses ---- */

/* The VIP_SET of the port with id, a new one if it has none yet. */
static struct dpvpn_vip_set *vipset_of(uint16_t id)
{
	for (size_t k = 0; k < ha.n_vipset; k++)
		if (ha.vipset[k].port_id == id)
			return &ha.vipset[k];
	ha.vipset[ha.n_vipset] = (struct dpvpn_vip_set){ .port_id = id };
	return &ha.vipset[ha.n_vipset++];
}

/*
 * a into s's first free IPv4 or IPv6 slot: its index as ha.vipgroup counts
 * them (IPv6 ones after DPVPN_VIP_MAX), or -1 if there is none.
 */
static int vipset_add(struct dpvpn_vip_set *s, const struct cfg_addr *a)
{
	static const uint8_t none[16];
	int k;

	if (a->family == DPVPN_AF_INET) {
		for (k = 0; k < DPVPN_VIP_MAX && s->vip[k] != 0; k++)
			;
		if (k == DPVPN_VIP_MAX)
			return -1;
		s->vip[k] = htonl(a->v4);
		return k;
	}
	for (k = 0; k < DPVPN_VIP6_MAX && memcmp(s->vip6[k], none, 16) != 0; k++)
		;
	if (k == DPVPN_VIP6_MAX)
		return -1;
	memcpy(s->vip6[k], a->v6, 16);
	return DPVPN_VIP_MAX + k;
}

/* Each port's virtual addresses, IPv4 and IPv6, from the config. */
static void vips_from(const struct cfg *cfg)
{
	ha.n_vipset = 0;
	for (size_t i = 0; i < cfg->ha.n_vips; i++) {
		const struct cfg_ha_vip *v = &cfg->ha.vips[i];
		bool v6 = v->addr.addr.family == DPVPN_AF_INET6;
		size_t p;
		int k;

		for (p = 0; p < cfg->n_ports && strcmp(cfg->ports[p].name, v->port); p++)
			;
		if (p == cfg->n_ports)
			continue;	/* (the config check refuses it) */
		k = vipset_add(vipset_of(cfg->ports[p].id), &v->addr.addr);
		if (k < 0) {
			fprintf(stderr, "dpvpnd: ha: port %s: more than %d IPv%c virtual "
				"addresses: one left out\n", v->port,
				v6 ? DPVPN_VIP6_MAX : DPVPN_VIP_MAX, v6 ? '6' : '4');
			continue;
		}
		ha.vipgroup[vipset_of(cfg->ports[p].id) - ha.vipset][k] =
			(uint8_t)group_index(v->group);
	}
}

/* The dataplane's ports hold the virtual addresses of the groups in mask, no others. */
static void vips_hold(uint8_t mask)
{
	for (size_t i = 0; i < ha.n_vipset; i++) {
		struct dpvpn_vip_set s = ha.vipset[i];

		static const uint8_t none[16];

		s.held = s.held6 = 0;
		for (unsigned k = 0; k < DPVPN_VIP_MAX; k++)
			s.held |= (uint8_t)((s.vip[k] != 0 && (mask >> ha.vipgroup[i][k] & 1)) << k);
		for (unsigned k = 0; k < DPVPN_VIP6_MAX; k++)
			s.held6 |= (uint8_t)((memcmp(s.vip6[k], none, 16) != 0 &&
					      (mask >> ha.vipgroup[i][DPVPN_VIP_MAX + k] & 1)) << k);
		if (dp_call(ha.dp, DPVPN_MSG_VIP_SET, &s, sizeof(s), NULL, 0) != 0)
			fprintf(stderr, "dpvpnd: ha: virtual addresses of port %u: %s\n",
				s.port_id, ha.dp->err);
	}
}

/* As this node carries groups now. */
static void vips_set(void)
{
	vips_hold(ha.owned);
}

/*
 * The dataplane went away: this node holds nothing now (its addresses went
 * with it), so it is no longer master, whatever keepalived last said; its
 * keepalived sees the twins go and says fault, then backup once they are
 * back.  Nothing is sent on the channel until the dataplane is back (the
 * peer declares this node gone after dead-ms).
 */
void ha_dataplane_lost(void)
{
	if (!ha.on || ha.owned == 0)
		return;
	for (unsigned g = 0; g < ha.n_groups && g < HA_GROUPS; g++)
		if (owns_group((uint8_t)g))
			ha.role[g] = HA_ROLE_FAULT;
	ha.owned = 0;
	ha.n_pend = 0;		/* (no dataplane to grant them to) */
	send_role();		/* the peer may take over at once: said before the silence */
	if (ha.chan != NULL)
		(void)ha_chan_run(ha.chan, mono_ms());
	fprintf(stderr, "dpvpnd: ha: the dataplane went away: master no longer (fault until "
		"keepalived says otherwise)\n");
}

void ha_dataplane_back(void)
{
	if (ha.on)
		vips_set();
}

/* ---- roles ---- */

/*
 * Every outbound SA continues above the highest block either node reserved
 * (this node's state file has the old master's, as synced): on disk, then
 * SEQ_SET.  rekey: an IKE tunnel's stays silent instead (its CHILD_SA is
 * rekeyed: new keys, numbers from 1).  0, or -1 if the state could not be
 * saved (nothing granted).
 */
static int continue_above(bool rekey, uint8_t mask)
{
	struct dpvpn_sa_info *sa;
	uint32_t n, raised = 0;
	int rc = 0;

	if (dp_dump(ha.dp, DPVPN_MSG_SHOW_SA, sizeof(*sa), (void **)&sa, &n) != 0) {
		fprintf(stderr, "dpvpnd: ha: takeover: SAs: %s\n", ha.dp->err);
		return -1;
	}
	seq_batch_begin(ha.seq);
	for (uint32_t i = 0; i < n; i++) {
		char name[DPVPN_NAME_LEN];
		uint64_t used, limit, cap = sa[i].esn ? UINT64_MAX - 1 : UINT32_MAX;

		if (sa[i].dir != DPVPN_DIR_OUT)
			continue;
		snprintf(name, sizeof(name), "%.*s", DPVPN_NAME_LEN - 1, sa[i].name);
		if (!(mask >> group_of(name) & 1) ||	/* (a group this node carries already) */
		    (rekey && sa_find(sa[i].spi, DPVPN_DIR_OUT) != SIZE_MAX)) {
			sa[i].seq = 0;		/* rekey: silent until its rekey replaces it */
			continue;
		}
		used = seq_get(ha.seq, name, ntohl(sa[i].spi));
		used = used > sa[i].seq ? used : sa[i].seq;
		if (used == 0)
			continue;	/* no reservation: an SA without a limit */
		limit = cap - used > seq_block(ha.seq) ? used + seq_block(ha.seq) : cap;
		sa[i].seq = used;
		sa[i].drop_seq = limit;		/* (kept for the grant below) */
		if (seq_put(ha.seq, name, ntohl(sa[i].spi), limit) != 0)
			rc = -1;
	}
	if (seq_batch_end(ha.seq) != 0 || rc != 0) {
		fprintf(stderr, "dpvpnd: ha: takeover: sequence state not saved (%s): no SA "
			"sends until it is\n", strerror(errno));
		free(sa);
		return -1;
	}
	for (uint32_t i = 0; i < n; i++) {
		struct dpvpn_seq_set s = { .spi = sa[i].spi, .used = sa[i].seq,
					   .limit = sa[i].drop_seq };

		if (sa[i].dir != DPVPN_DIR_OUT || s.used == 0)
			continue;
		if (dp_call(ha.dp, DPVPN_MSG_SEQ_SET, &s, sizeof(s), NULL, 0) != 0)
			fprintf(stderr, "dpvpnd: ha: takeover: SA 0x%08x: %s\n", ntohl(s.spi),
				ha.dp->err);
		else
			raised++;
	}
	free(sa);
	if (ha.verbose)
		fprintf(stderr, "dpvpnd: ha: takeover: %u outbound SAs continue above the old "
			"master's numbers\n", raised);
	return 0;
}

/*
 * May the old master have granted blocks this node never saw?  It grants
 * one without an acknowledgement only once it has heard nothing from here
 * for dead-ms: not before, if this node heard from it less than dead-ms
 * minus a heartbeat ago (the connection's two ways fail together).  Nor can
 * it, without a whole state received since the last connection began.
 */
static bool stale_state(uint64_t now)
{
	return !ha.had_snapshot || ha.last_rx == 0 ||
	       now - ha.last_rx + ha.cfg.heartbeat_ms >= ha.cfg.dead_ms;
}

/*
 * Each inbound SA of the groups in mask starts its window at the old
 * master's last synced high mark (up to HA_MARKS_EVERY_MS old: a packet it
 * took since may be replayed here once, doc/ha.md).  How many were raised.
 */
static size_t replay_floors(uint8_t mask)
{
	struct dpvpn_sa_info *sa;
	uint32_t n;
	size_t raised = 0;

	if (ha.marks.n == 0 || dp_dump(ha.dp, DPVPN_MSG_SHOW_SA, sizeof(*sa), (void **)&sa,
					 &n) != 0)
		return 0;
	for (uint32_t i = 0; i < n; i++) {
		char name[DPVPN_NAME_LEN];
		const struct ha_mark *m;
		struct dpvpn_replay_floor f;

		snprintf(name, sizeof(name), "%.*s", DPVPN_NAME_LEN - 1, sa[i].name);
		if (sa[i].dir != DPVPN_DIR_IN || !(mask >> group_of(name) & 1))
			continue;
		m = mark_slot(&ha.marks, sa[i].spi);
		if (m->spi == 0)
			continue;
		f = (struct dpvpn_replay_floor){ .spi = m->spi, .high = m->high };
		if (dp_call(ha.dp, DPVPN_MSG_REPLAY_FLOOR, &f, sizeof(f), NULL, 0) == 0)
			raised++;
		else if (ha.dp->status != -ENOENT)
			fprintf(stderr, "dpvpnd: ha: takeover: inbound SA 0x%08x: %s\n",
				ntohl(f.spi), ha.dp->err);
	}
	free(sa);
	return raised;
}

/* ikd_rekey_all's choice: the tunnels of the groups being rekeyed. */
static uint8_t rekey_mask;
/* settle's: the groups in a split brain before it looked again */
static uint8_t split_before;
/* take_groups': a stale takeover's groups, whose IKE SAs are made anew */
static uint8_t fresh_mask;

bool ha_fresh(const char *tunnel)
{
	return ha.on && (fresh_mask >> group_of(tunnel) & 1);
}

static bool in_rekey_mask(const char *tunnel)
{
	return rekey_mask >> group_of(tunnel) & 1;
}

static size_t rekey_groups(uint8_t mask)
{
	rekey_mask = mask;
	return ikd_rekey_all(in_rekey_mask);
}

/* Names of the groups in mask, for messages ("dpvpn", "a and b"). */
static const char *group_names(uint8_t mask, char *buf, size_t len)
{
	size_t at = 0;

	buf[0] = '\0';
	for (unsigned g = 0; g < ha.n_groups && at < len; g++)
		if (mask >> g & 1)
			at += (size_t)snprintf(buf + at, len - at, "%s%s", at ? " and " : "",
					       ha.group[g]);
	return buf;
}

/*
 * This node carries the groups in mask from now: their outbound SAs
 * continue above the old master's numbers, their windows start at its
 * marks, the addresses are held, IKE (re)opens for every group carried.
 */
static int take_groups(uint8_t mask, char *msg, size_t len)
{
	uint64_t t0 = mono_ms(), quiet = ha.last_rx ? t0 - ha.last_rx : 0;
	/* a group yielded in a split brain: its winner may still send on its SAs */
	bool stale = stale_state(t0) || (split_before & mask);
	bool rekey = ha.cfg.takeover_rekey == CFG_HA_REKEY_ALWAYS ||
		     (ha.cfg.takeover_rekey == CFG_HA_REKEY_AUTO && stale);
	size_t rekeys = 0, sas = 0;
	char names[2 * DPVPN_NAME_LEN + 8];

	group_names(mask, names, sizeof(names));
	if (continue_above(rekey, mask) != 0) {
		snprintf(msg, len, "takeover of %s refused: the sequence state could not be "
			 "saved", names);
		return -1;
	}
	ha.floors = replay_floors(mask);	/* before the addresses: no packet yet */
	ha.owned |= mask;
	ha.epoch++;
	vips_set();		/* ARP/ND, ESP, IKE to them: ours; each announced */
	fresh_mask = rekey && stale ? mask : 0;		/* new IKE SAs (initiators' tunnels) */
	if (ha.ops.take_over != NULL && ha.ops.take_over() != 0)
		fprintf(stderr, "dpvpnd: ha: IKE did not start: keying = ike tunnels stay down\n");
	fresh_mask = 0;
	if (rekey)
		rekeys = rekey_groups(mask);	/* (those taken up: remote-access clients') */
	if (stale && !rekey)
		fprintf(stderr, "dpvpnd: ha: takeover with a sync state that may be stale, and "
			"takeover-rekey = never: outbound SAs continue above the last blocks "
			"known here\n");
	ha.took_over_at = mono_ms();
	ha.gap_ms = quiet + (ha.took_over_at - t0);
	for (size_t i = 0; i < ha.n_sas; i++)
		sas += mask >> ha.sas[i].group & 1;
	snprintf(msg, len, "master (epoch %" PRIu64 ")%s%s: %zu SAs of IKE tunnels taken over "
		 "in %" PRIu64 " ms%s", ha.epoch, ha.n_groups > 1 ? " of " : "",
		 ha.n_groups > 1 ? names : "", sas, ha.took_over_at - t0,
		 !stale ? "" : rekey ? "; the sync state may be stale: IKE SAs made anew "
				       "(make before break), clients' CHILD_SAs rekeyed" :
				       "; the sync state may be stale");
	if (rekey)
		fprintf(stderr, "dpvpnd: ha: %zu CHILD_SA rekeys asked for; their old outbound "
			"SAs send nothing meanwhile\n", rekeys);
	if (stale)
		ha.stale_takeovers++;
	fprintf(stderr, "dpvpnd: ha: %s\n", msg);
	return 0;
}

/* This node no longer carries the groups in mask: IKE closes (or goes on for the rest). */
static void release_groups(uint8_t mask, char *msg, size_t len)
{
	char names[2 * DPVPN_NAME_LEN + 8];

	ha.owned &= (uint8_t)~mask;
	vips_set();
	if (ha.ops.release != NULL)
		ha.ops.release();	/* IKE closed: the SAs stay, records too */
	if (ha.owned != 0 && ha.ops.take_over != NULL && ha.ops.take_over() != 0)
		fprintf(stderr, "dpvpnd: ha: IKE did not start again for the groups still "
			"carried\n");
	grant_pending(true);
	snprintf(msg, len, "%s no longer carried here: IKE stopped for them; the SAs stay "
		 "until the master's state replaces them", group_names(mask, names, sizeof(names)));
	fprintf(stderr, "dpvpnd: ha: %s\n", msg);
}

/*
 * Split brain (both nodes master of a group, VRRP between them cut): found
 * when the peer's role says so.  The winner (we_win) carries the group on,
 * rekeys its CHILD_SAs (the other may have sent on the same SAs meanwhile)
 * and announces its addresses again; the other yields (want_owned).
 */
static void split_brain(void)
{
	for (uint8_t g = 0; g < ha.n_groups; g++) {
		uint8_t bit = (uint8_t)(1u << g);

		if (!both_master(g)) {
			ha.split &= (uint8_t)~bit;
			continue;
		}
		if (ha.split & bit)
			continue;
		ha.split |= bit;
		ha.split_brains++;
		fprintf(stderr, "dpvpnd: ha: split brain: %s and %s are both master of %s (check "
			"VRRP between them); %s carries it (priority %u against %u)\n", ha.cfg.node,
			ha.peer_node, ha.group[g], we_win() ? ha.cfg.node : ha.peer_node,
			ha.cfg.priority, ha.peer_priority);
		if (we_win() && owns_group(g)) {
			size_t n = rekey_groups(bit);

			vips_hold(ha.owned & (uint8_t)~bit);	/* again: gratuitous ARPs */
			vips_set();
			fprintf(stderr, "dpvpnd: ha: split brain: %zu CHILD_SAs of %s rekeyed, its "
				"addresses announced again\n", n, ha.group[g]);
		}
	}
}

/* The groups carried as the roles say now: taken over, given up. */
static void settle(char *msg, size_t len)
{
	char own[256];
	uint8_t want, lose, gain;

	if (msg == NULL) {
		msg = own;
		len = sizeof(own);
	}
	msg[0] = '\0';
	split_before = ha.split;
	split_brain();
	want = want_owned();
	lose = ha.owned & (uint8_t)~want;
	gain = want & (uint8_t)~ha.owned;
	if (lose)
		release_groups(lose, msg, len);
	if (gain && take_groups(gain, msg, len) != 0)
		fprintf(stderr, "dpvpnd: ha: %s\n", msg);
	if (lose || gain) {
		send_role();
		send_snapshot();	/* what the peer holds of them is the old master's: ours now */
	}
}

int ha_role_command(const char *role, const char *group, char *msg, size_t len)
{
	uint8_t want, mask = 0, before;
	bool same = true;

	if (!ha.on) {
		snprintf(msg, len, "no [ha] section in the config");
		return -1;
	}
	if (!strcmp(role, "master"))
		want = HA_ROLE_MASTER;
	else if (!strcmp(role, "backup"))
		want = HA_ROLE_BACKUP;
	else if (!strcmp(role, "fault"))
		want = HA_ROLE_FAULT;
	else {
		snprintf(msg, len, "role: expected master, backup or fault, got '%.32s'", role);
		return -1;
	}
	if (group != NULL && group[0] != '\0') {
		int g = group_index(group);

		if (g < 0) {
			snprintf(msg, len, "group: '%.32s' is not one of the [ha] section's (%s%s%s)",
				 group, ha.group[0], ha.n_groups > 1 ? ", " : "",
				 ha.n_groups > 1 ? ha.group[1] : "");
			return -1;
		}
		mask = (uint8_t)(1u << g);
	} else {
		mask = (uint8_t)((1u << ha.n_groups) - 1);	/* all of them */
	}
	for (unsigned g = 0; g < ha.n_groups && g < HA_GROUPS; g++)
		if (mask >> g & 1) {
			same = same && ha.role[g] == want;
			ha.role[g] = want;
		}
	if (same) {
		snprintf(msg, len, "%s already", ha_role_name(want));
		return 0;
	}
	before = ha.owned;
	settle(msg, len);
	if (ha.owned == before) {	/* (nothing taken or given up: only said) */
		send_role();
		snprintf(msg, len, "%s%s", ha_role_name(want),
			 want == HA_ROLE_MASTER && !(ha.owned & mask) ?
			 ": the peer carries it (split brain: doc/ha.md)" : "");
	}
	if (want == HA_ROLE_MASTER && !(ha.owned & mask) && strstr(msg, "refused"))
		return -1;
	return 0;
}

/* A group's role as shown: master (carried here), yielded (split brain), backup, fault. */
static const char *group_role(unsigned g)
{
	if (owns_group((uint8_t)g))
		return "master";
	return ha.role[g] == HA_ROLE_MASTER ? "yielded" : ha_role_name(ha.role[g]);
}

static json_t *groups_json(void)
{
	json_t *a = json_array();

	for (unsigned g = 0; a != NULL && g < ha.n_groups; g++)
		json_array_append_new(a, json_pack("{s:s,s:s,s:s,s:b}", "name", ha.group[g],
			"role", group_role(g), "peer_role", peer_up() ?
			ha_role_name(ha.peer_role[g]) : "unknown", "split_brain",
			(ha.split >> g) & 1));
	return a;
}

/* show ha's virtual addresses, IPv4 then IPv6 of each port, into the array vips. */
static void show_vips(json_t *vips)
{
	static const uint8_t none[16];

	for (size_t i = 0; i < ha.n_vipset; i++) {
		const struct dpvpn_vip_set *s = &ha.vipset[i];

		for (unsigned k = 0; k < DPVPN_VIP_MAX + DPVPN_VIP6_MAX; k++) {
			bool v6 = k >= DPVPN_VIP_MAX;
			const void *a = v6 ? (const void *)s->vip6[k - DPVPN_VIP_MAX] :
					     (const void *)&s->vip[k];
			char text[INET6_ADDRSTRLEN];

			if (v6 ? memcmp(a, none, 16) == 0 : s->vip[k] == 0)
				continue;
			inet_ntop(v6 ? AF_INET6 : AF_INET, a, text, sizeof(text));
			json_array_append_new(vips, json_pack("{s:i,s:s,s:s,s:b}", "port",
				s->port_id, "address", text, "group", ha.group[ha.vipgroup[i][k]],
				"held", owns_group(ha.vipgroup[i][k])));
		}
	}
}

json_t *ha_show(char *err, size_t len)
{
	uint64_t now = mono_ms();
	bool up;
	char sync[96];

	if (!ha.on) {
		snprintf(err, len, "no [ha] section in the config");
		return NULL;
	}
	up = ha.chan != NULL && ha_chan_up(ha.chan);
	if (!up)
		snprintf(sync, sizeof(sync), "down since %" PRIu64 " s",
			 ha.down_since ? (now - ha.down_since) / 1000 : 0);
	else if (ha.incompatible)
		snprintf(sync, sizeof(sync), "incompatible peer");
	else if (feeding() && ha.tx_seq != ha.acked)
		snprintf(sync, sizeof(sync), "behind by %u", ha.tx_seq - ha.acked);
	else if (peer_groups() && !ha.synced)
		snprintf(sync, sizeof(sync), "receiving the whole state");
	else
		snprintf(sync, sizeof(sync), "in sync");
	json_t *o = json_pack("{s:s,s:s,s:i,s:I,s:s,s:{s:s,s:s,s:s,s:b,s:s}}",
		"role", group_role(0), "node", ha.cfg.node, "priority", ha.cfg.priority,
		"epoch", (json_int_t)ha.epoch, "sync", sync,
		"peer", "address", ha.cfg.peer, "node", ha.peer_hello ? ha.peer_node : "",
		"role", ha.peer_hello ? ha_role_name(ha.peer_role[0]) : "unknown", "channel", up,
		"why", up ? "" : ha.chan ? ha_chan_why(ha.chan) : "not open");
	json_t *vips = json_array();
	const struct { const char *k; uint64_t v; } n[] = {
		{ "sas", ha.n_sas }, { "policies", ha.n_pols }, { "pending_grants", ha.n_pend },
		{ "applied", ha.applied }, { "errors", ha.apply_errors },
		{ "resyncs", ha.resyncs }, { "stale_takeovers", ha.stale_takeovers },
		{ "split_brains", ha.split_brains }, { "ignored", ha.ignored },
		{ "blocks_refused", ha.blocks_refused },
		{ "marks", ha.marks.n }, { "replay_floors", ha.floors },
	};

	if (o == NULL || vips == NULL) {
		json_decref(o);
		json_decref(vips);
		snprintf(err, len, "out of memory");
		return NULL;
	}
	for (size_t i = 0; i < sizeof(n) / sizeof(n[0]); i++)
		json_object_set_new(o, n[i].k, json_integer((json_int_t)n[i].v));
	show_vips(vips);
	json_object_set_new(o, "virtual_addresses", vips);
	json_object_set_new(o, "groups", groups_json());
	json_object_set_new(o, "last_takeover", ha.took_over_at == 0 ? json_null() :
		json_pack("{s:I,s:I}", "ago_ms", (json_int_t)(now - ha.took_over_at),
			  "gap_ms", (json_int_t)ha.gap_ms));
	return o;
}

/* ---- open and close ---- */

static const struct inst_tap tap = { .sent = tap_sent, .hold = hold_tap };

int ha_open(const struct cfg *cfg, struct dp_client *dp, struct seqstate *seq,
	    const struct ha_ops *ops, bool verbose)
{
	struct ha_chan_cfg *cc = &chan_cfg;
	char err[256];

	if (!cfg->ha.on)
		return 0;
	ha.cfg = cfg->ha;
	ha.dp = dp;
	ha.seq = seq;
	ha.ops = *ops;
	ha.verbose = verbose;
	ha.role[0] = ha.role[1] = HA_ROLE_BACKUP;	/* until keepalived says otherwise */
	ha.n_groups = 0;
	for (size_t i = 0; i < cfg->ha.n_vips; i++)
		if (group_index(cfg->ha.vips[i].group) < 0 && ha.n_groups < HA_GROUPS)
			snprintf(ha.group[ha.n_groups++], DPVPN_NAME_LEN, "%s",
				 cfg->ha.vips[i].group);
	if (ha.n_groups == 0)
		snprintf(ha.group[ha.n_groups++], DPVPN_NAME_LEN, "%s", CFG_HA_GROUP_DEFAULT);
	*cc = (struct ha_chan_cfg){ .local = ha.cfg.local_sa, .peer = ha.cfg.peer_sa,
				    .psk = ha.cfg.key, .psk_len = ha.cfg.key_len,
				    .hb_ms = ha.cfg.heartbeat_ms, .dead_ms = ha.cfg.dead_ms };
	ha.chan = ha_chan_open(cc, err, sizeof(err));
	if (ha.chan == NULL) {
		fprintf(stderr, "dpvpnd: ha: sync channel on %s: %s\n", ha.cfg.local, err);
		explicit_bzero(&ha.cfg, sizeof(ha.cfg));
		return -1;
	}
	ha.on = true;
	ha.down_since = mono_ms();
	inst_set_tap(&tap);
	ha_tunnels(cfg);
	vips_from(cfg);
	vips_set();	/* known, not held: a backup answers no ARP for them */
	fprintf(stderr, "dpvpnd: ha: node %s, backup until keepalived says master; sync "
		"%s <-> %s\n", ha.cfg.node, ha.cfg.local, ha.cfg.peer);
	return 0;
}

void ha_close(void)
{
	if (!ha.on)
		return;
	inst_set_tap(NULL);
	if (ha.chan != NULL)
		ha_chan_close(ha.chan);
	if (ha.sas != NULL)
		explicit_bzero(ha.sas, ha.cap_sas * sizeof(*ha.sas));
	free(ha.sas);
	free(ha.pols);
	free(ha.pend);
	free(ha.second.e);
	marks_clear(&ha.marks);
	explicit_bzero(&ha.cfg, sizeof(ha.cfg));
	explicit_bzero(&chan_cfg, sizeof(chan_cfg));
	memset(&ha, 0, sizeof(ha));
}
