/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nl.c - kernel routes via tunnel twins, mirrored through a small RIB
 * (nl.h says what and why).
 *
 * Two NETLINK_ROUTE sockets: the event socket (link and route groups, big
 * receive buffer, never blocks) and the request socket (dumps, twin set-up;
 * its replies bounded by SO_RCVTIMEO).  A dump runs on the request socket
 * after the event socket was drained: whatever happened before the drain is
 * in the dump, whatever happened after it is read from the event socket
 * afterwards and applied in order, so the RIB converges on the kernel's table
 * without sequence bookkeeping (an event already in the dump is applied
 * twice, which leaves the same state).
 *
 * The RIB: entries sorted by prefix (binary search), each with the config
 * and ctl next hops (names), up to KVAR_MAX kernel routes of that prefix (one
 * per metric, next hops as ifindexes, resolved to names when the best is
 * chosen) and what was installed.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <libmnl/libmnl.h>
#include <linux/if.h>	/* IFF_LOWER_UP; after net/if.h */
#include <linux/if_addr.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>

#include "nl.h"

#define NL_BUF		32768	/* a recv: events or a dump's batch */
#define KVAR_MAX	4	/* kernel routes of one prefix (distinct metrics) */
#define DUMP_TRIES	3
#define DRAIN_MAX	1024	/* recvs of stale events before a dump, at most */
#define COMPAT_SYSCTL	"/proc/sys/net/ipv4/nexthop_compat_mode"
#define LINK_FLAGS	(IFF_UP | IFF_RUNNING | IFF_LOWER_UP)

struct twin {
	uint32_t ifindex;
	unsigned flags;		/* IFF_* of its last link message */
	bool seen;		/* in the last link dump */
	char name[NL_NAME_LEN];
};

struct nhset {
	uint8_t n;
	char name[NL_MAX_NH][NL_NAME_LEN];
};

struct kroute {
	uint32_t metric;
	bool mixed;		/* twin and non-twin next hops: not mirrored */
	bool stale;		/* not seen again by the resync under way */
	uint8_t n;
	uint32_t oif[NL_MAX_NH];
};

struct rib_ent {
	struct nl_prefix p;
	bool has[NL_SRC_KERNEL];		/* config, ctl */
	struct nhset src[NL_SRC_KERNEL];
	uint8_t nk;
	struct kroute k[KVAR_MAX];
	bool installed;
	struct nhset inst;
};

/* A route message, parsed. */
struct route {
	struct nl_prefix p;
	uint32_t table, metric;
	uint8_t n;
	uint32_t oif[NL_MAX_NH];
	bool nh_id;		/* RTA_NH_ID */
	bool too_many;		/* more than NL_MAX_NH live next hops */
};

struct nl {
	struct mnl_socket *ev, *req;
	uint32_t table, seq;
	struct nl_ops ops;
	struct twin *twins;
	size_t ntwins, twcap;
	struct rib_ent **ents;	/* sorted by prefix */
	size_t n, cap;
	bool dumping;		/* route messages update, update_ent waits */
	bool resync_due;
	bool resync_when_empty;	/* a resync's drain stopped before the queue emptied */
	_Alignas(8) char buf[NL_BUF];	/* netlink headers are read in place */
};

/* ---- prefixes ---- */

static unsigned addr_len(uint8_t family)
{
	return family == AF_INET ? 4 : 16;
}

static void prefix_mask(struct nl_prefix *p)
{
	for (unsigned i = 0; i < 16; i++) {
		unsigned bit = i * 8;

		if (bit >= p->len)
			p->addr[i] = 0;
		else if (bit + 8 > p->len)
			p->addr[i] &= (uint8_t)(0xff << (8 - (p->len - bit)));
	}
}

static int prefix_cmp(const struct nl_prefix *a, const struct nl_prefix *b)
{
	if (a->family != b->family)
		return a->family < b->family ? -1 : 1;
	if (a->len != b->len)
		return a->len < b->len ? -1 : 1;
	return memcmp(a->addr, b->addr, 16);
}

int nl_prefix_parse(const char *s, struct nl_prefix *p)
{
	char host[INET6_ADDRSTRLEN];
	const char *slash = strchr(s, '/');
	size_t hl = slash ? (size_t)(slash - s) : strlen(s);
	char *end;

	memset(p, 0, sizeof(*p));
	if (hl >= sizeof(host))
		return -1;
	memcpy(host, s, hl);
	host[hl] = '\0';
	p->family = strchr(host, ':') ? AF_INET6 : AF_INET;
	if (inet_pton(p->family, host, p->addr) != 1)
		return -1;
	unsigned long len = addr_len(p->family) * 8;

	if (slash) {
		errno = 0;
		len = strtoul(slash + 1, &end, 10);
		if (errno || end == slash + 1 || *end || len > addr_len(p->family) * 8)
			return -1;
	}
	p->len = (uint8_t)len;
	return 0;
}

const char *nl_prefix_str(const struct nl_prefix *p, char *buf, unsigned size)
{
	char a[INET6_ADDRSTRLEN];

	if (!inet_ntop(p->family, p->addr, a, sizeof(a)))
		snprintf(a, sizeof(a), "?");
	snprintf(buf, size, "%s/%u", a, p->len);
	return buf;
}

/* ---- twins ---- */

static struct twin *twin_find(const struct nl *nl, uint32_t ifindex)
{
	for (size_t i = 0; i < nl->ntwins; i++)
		if (nl->twins[i].ifindex == ifindex)
			return &nl->twins[i];
	return NULL;
}

int nl_twin_add(struct nl *nl, uint32_t ifindex, const char *name)
{
	struct twin *t = twin_find(nl, ifindex);

	if (ifindex == 0 || strlen(name) >= NL_NAME_LEN) {
		errno = EINVAL;
		return -1;
	}
	if (!t) {
		if (nl->ntwins == nl->twcap) {
			size_t cap = nl->twcap ? nl->twcap * 2 : 8;
			struct twin *tw = realloc(nl->twins, cap * sizeof(*tw));

			if (!tw)
				return -1;
			nl->twins = tw;
			nl->twcap = cap;
		}
		t = &nl->twins[nl->ntwins++];
		memset(t, 0, sizeof(*t));
		t->ifindex = ifindex;
	}
	snprintf(t->name, sizeof(t->name), "%s", name);
	nl->resync_due = true;	/* its routes were not kept while it was no twin */
	return 0;
}

int nl_twin_del(struct nl *nl, uint32_t ifindex)
{
	struct twin *t = twin_find(nl, ifindex);

	if (!t) {
		errno = ENOENT;
		return -1;
	}
	*t = nl->twins[--nl->ntwins];
	nl->resync_due = true;
	return 0;
}

/* ---- the RIB ---- */

/* Index of p, or where it would go (*found false). */
static size_t ent_pos(const struct nl *nl, const struct nl_prefix *p, bool *found)
{
	size_t lo = 0, hi = nl->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = prefix_cmp(&nl->ents[mid]->p, p);

		if (c == 0) {
			*found = true;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = false;
	return lo;
}

static struct rib_ent *ent_find(const struct nl *nl, const struct nl_prefix *p)
{
	bool found;
	size_t i = ent_pos(nl, p, &found);

	return found ? nl->ents[i] : NULL;
}

static struct rib_ent *ent_get(struct nl *nl, const struct nl_prefix *p)
{
	bool found;
	size_t i = ent_pos(nl, p, &found);

	if (found)
		return nl->ents[i];
	if (nl->n == nl->cap) {
		size_t cap = nl->cap ? nl->cap * 2 : 64;
		struct rib_ent **e = realloc(nl->ents, cap * sizeof(*e));

		if (!e)
			return NULL;
		nl->ents = e;
		nl->cap = cap;
	}
	struct rib_ent *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;
	e->p = *p;
	memmove(&nl->ents[i + 1], &nl->ents[i], (nl->n - i) * sizeof(*nl->ents));
	nl->ents[i] = e;
	nl->n++;
	return e;
}

static void ent_drop(struct nl *nl, struct rib_ent *e)
{
	bool found;
	size_t i = ent_pos(nl, &e->p, &found);

	if (!found)
		return;
	memmove(&nl->ents[i], &nl->ents[i + 1], (nl->n - i - 1) * sizeof(*nl->ents));
	nl->n--;
	free(e);
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(a, b);
}

/* Sorted, without repeats: two next hops on one twin are one tunnel. */
static void nhset_norm(struct nhset *s)
{
	unsigned out = 0;

	qsort(s->name, s->n, sizeof(s->name[0]), name_cmp);
	for (unsigned i = 0; i < s->n; i++)
		if (out == 0 || strcmp(s->name[out - 1], s->name[i]) != 0)
			memmove(s->name[out++], s->name[i], NL_NAME_LEN);
	s->n = (uint8_t)out;
}

static bool nhset_eq(const struct nhset *a, const struct nhset *b)
{
	if (a->n != b->n)
		return false;
	for (unsigned i = 0; i < a->n; i++)
		if (strcmp(a->name[i], b->name[i]) != 0)
			return false;
	return true;
}

/* The kernel's candidate: its lowest-metric route, if all its hops are twins. */
static bool kernel_best(const struct nl *nl, const struct rib_ent *e, struct nhset *out)
{
	const struct kroute *k = NULL;

	for (unsigned i = 0; i < e->nk; i++)
		if (!k || e->k[i].metric < k->metric)
			k = &e->k[i];
	if (!k || k->mixed || k->n == 0)
		return false;
	out->n = k->n;
	for (unsigned i = 0; i < k->n; i++) {
		const struct twin *t = twin_find(nl, k->oif[i]);

		if (!t)
			return false;	/* no twin any more: the resync drops it */
		memcpy(out->name[i], t->name, NL_NAME_LEN);
	}
	nhset_norm(out);
	return true;
}

static bool best_of(const struct nl *nl, const struct rib_ent *e, struct nhset *out)
{
	for (unsigned s = 0; s < NL_SRC_KERNEL; s++)
		if (e->has[s]) {
			*out = e->src[s];
			return true;
		}
	return kernel_best(nl, e, out);
}

/* Install, change or remove e's entry in the dataplane if its best changed. */
static void update_ent(struct nl *nl, struct rib_ent *e)
{
	struct nhset best;
	bool have = best_of(nl, e, &best);

	if (have && !(e->installed && nhset_eq(&best, &e->inst))) {
		const char *names[NL_MAX_NH];

		for (unsigned i = 0; i < best.n; i++)
			names[i] = best.name[i];
		e->installed = nl->ops.install(nl->ops.arg, &e->p, names, best.n) >= 0;
		e->inst = best;
	} else if (!have && e->installed) {
		nl->ops.remove(nl->ops.arg, &e->p);
		e->installed = false;
	}
	if (!have && !e->installed && !e->has[NL_SRC_CONFIG] && !e->has[NL_SRC_CTL] &&
	    e->nk == 0)
		ent_drop(nl, e);
}

static void update_all(struct nl *nl)
{
	for (size_t i = nl->n; i-- > 0;)
		update_ent(nl, nl->ents[i]);	/* may drop ents[i]: walk down */
}

int nl_rib_set(struct nl *nl, const struct nl_prefix *p, enum nl_source src,
	       const char *const names[], unsigned n)
{
	struct nl_prefix q = *p;

	if (n == 0)
		return nl_rib_clear(nl, p, src);
	if (src >= NL_SRC_KERNEL || n > NL_MAX_NH) {
		errno = EINVAL;
		return -1;
	}
	prefix_mask(&q);
	struct rib_ent *e = ent_get(nl, &q);

	if (!e)
		return -1;
	e->has[src] = true;
	e->src[src].n = (uint8_t)n;
	for (unsigned i = 0; i < n; i++)
		snprintf(e->src[src].name[i], NL_NAME_LEN, "%s", names[i]);
	nhset_norm(&e->src[src]);
	update_ent(nl, e);
	return 0;
}

int nl_rib_clear(struct nl *nl, const struct nl_prefix *p, enum nl_source src)
{
	struct nl_prefix q = *p;
	struct rib_ent *e;

	if (src >= NL_SRC_KERNEL) {
		errno = EINVAL;
		return -1;
	}
	prefix_mask(&q);
	e = ent_find(nl, &q);
	if (!e || !e->has[src]) {
		errno = ENOENT;
		return -1;
	}
	e->has[src] = false;
	update_ent(nl, e);
	return 0;
}

unsigned nl_rib_installed(const struct nl *nl, const struct nl_prefix *p,
			  char names[][NL_NAME_LEN])
{
	struct nl_prefix q = *p;
	const struct rib_ent *e;

	prefix_mask(&q);
	e = ent_find(nl, &q);
	if (!e || !e->installed)
		return 0;
	if (names)
		memcpy(names, e->inst.name, e->inst.n * sizeof(e->inst.name[0]));
	return e->inst.n;
}

/* ---- route messages ---- */

static int rt_attr_cb(const struct nlattr *a, void *data)
{
	const struct nlattr **tb = data;
	int type = mnl_attr_get_type(a);

	if (mnl_attr_type_valid(a, RTA_MAX) < 0)
		return MNL_CB_OK;	/* newer than these headers */
	switch (type) {
	case RTA_OIF:
	case RTA_PRIORITY:
	case RTA_TABLE:
	case RTA_NH_ID:
		if (mnl_attr_validate(a, MNL_TYPE_U32) < 0)
			return MNL_CB_OK;
		break;
	default:
		break;
	}
	tb[type] = a;
	return MNL_CB_OK;
}

/* Next hops count per interface: two gateways on one twin are one tunnel. */
static void rt_add_oif(struct route *r, uint32_t oif)
{
	for (unsigned i = 0; i < r->n; i++)
		if (r->oif[i] == oif)
			return;
	if (r->n == NL_MAX_NH)
		r->too_many = true;
	else
		r->oif[r->n++] = oif;
}

static void rt_multipath(struct route *r, const struct nlattr *mp)
{
	const struct rtnexthop *nh = mnl_attr_get_payload(mp);
	int left = (int)mnl_attr_get_payload_len(mp);

	while (left >= (int)sizeof(*nh) && nh->rtnh_len >= sizeof(*nh) &&
	       nh->rtnh_len <= left) {
		if (!(nh->rtnh_flags & RTNH_F_DEAD))
			rt_add_oif(r, (uint32_t)nh->rtnh_ifindex);
		left -= RTNH_ALIGN(nh->rtnh_len);
		nh = RTNH_NEXT(nh);
	}
}

/* 0: a unicast route, parsed into r; -1: not one to look at. */
static int rt_parse(const struct nlmsghdr *h, struct route *r)
{
	const struct rtmsg *rtm = mnl_nlmsg_get_payload(h);
	const struct nlattr *tb[RTA_MAX + 1] = { 0 };

	if (h->nlmsg_len < mnl_nlmsg_size(sizeof(*rtm)))
		return -1;
	if ((rtm->rtm_family != AF_INET && rtm->rtm_family != AF_INET6) ||
	    rtm->rtm_type != RTN_UNICAST || (rtm->rtm_flags & RTM_F_CLONED) ||
	    rtm->rtm_dst_len > addr_len(rtm->rtm_family) * 8)
		return -1;
	if (mnl_attr_parse(h, sizeof(*rtm), rt_attr_cb, tb) < 0)
		return -1;
	memset(r, 0, sizeof(*r));
	r->p.family = rtm->rtm_family;
	r->p.len = rtm->rtm_dst_len;
	if (tb[RTA_DST]) {
		if (mnl_attr_get_payload_len(tb[RTA_DST]) != addr_len(r->p.family))
			return -1;
		memcpy(r->p.addr, mnl_attr_get_payload(tb[RTA_DST]), addr_len(r->p.family));
	}
	prefix_mask(&r->p);
	r->table = tb[RTA_TABLE] ? mnl_attr_get_u32(tb[RTA_TABLE]) : rtm->rtm_table;
	r->metric = tb[RTA_PRIORITY] ? mnl_attr_get_u32(tb[RTA_PRIORITY]) : 0;
	r->nh_id = tb[RTA_NH_ID] != NULL;
	if (tb[RTA_MULTIPATH])
		rt_multipath(r, tb[RTA_MULTIPATH]);
	else if (tb[RTA_OIF] && !(rtm->rtm_flags & RTNH_F_DEAD))
		rt_add_oif(r, mnl_attr_get_u32(tb[RTA_OIF]));
	return 0;
}

/* IPv6 link-local and multicast: per link, not for a tunnel. */
static bool rt_local(const struct nl_prefix *p)
{
	return p->family == AF_INET6 &&
	       (p->addr[0] == 0xff || (p->addr[0] == 0xfe && (p->addr[1] & 0xc0) == 0x80));
}

static struct kroute *kvar_find(struct rib_ent *e, uint32_t metric)
{
	for (unsigned i = 0; i < e->nk; i++)
		if (e->k[i].metric == metric)
			return &e->k[i];
	return NULL;
}

static void kvar_drop(struct rib_ent *e, struct kroute *k)
{
	*k = e->k[--e->nk];
}

static bool kvar_has(const struct kroute *k, uint32_t oif)
{
	for (unsigned i = 0; i < k->n; i++)
		if (k->oif[i] == oif)
			return true;
	return false;
}

static void log_route(const struct route *r, const char *why)
{
	char ps[64];

	fprintf(stderr, "dpvpnd: netlink: route %s metric %u table %u: %s: not mirrored\n",
		nl_prefix_str(&r->p, ps, sizeof(ps)), r->metric, r->table, why);
}

/* How many of r's next hops are twins. */
static unsigned rt_twins(const struct nl *nl, const struct route *r)
{
	unsigned n = 0;

	for (unsigned i = 0; i < r->n; i++)
		n += twin_find(nl, r->oif[i]) != NULL;
	return n;
}

/* Store r as e's kernel route of its metric (append: IPv6 adds next hops). */
static void kvar_set(struct rib_ent *e, struct kroute *k, const struct route *r, bool append,
		     bool mixed)
{
	if (!k) {
		if (e->nk == KVAR_MAX)
			return;		/* a fifth metric for one prefix: the four lowest? rare */
		k = &e->k[e->nk++];
		memset(k, 0, sizeof(*k));
		k->metric = r->metric;
	} else if (append && r->p.family == AF_INET) {
		return;			/* IPv4 append: a second route the kernel does not use */
	} else if (!append) {
		k->n = 0;
	}
	k->stale = false;
	k->mixed = mixed || (append && k->mixed);
	for (unsigned i = 0; i < r->n; i++)
		if (!kvar_has(k, r->oif[i])) {
			if (k->n == NL_MAX_NH)
				k->mixed = true;	/* ECMP wider than the dataplane's */
			else
				k->oif[k->n++] = r->oif[i];
		}
}

static void on_newroute(struct nl *nl, const struct route *r, uint16_t flags)
{
	struct rib_ent *e = ent_find(nl, &r->p);
	struct kroute *k = e ? kvar_find(e, r->metric) : NULL;
	unsigned twins = rt_twins(nl, r);
	bool mixed = r->too_many || (twins && twins < r->n);

	/* r->nh_id without next hops: nexthop_compat_mode 0, warned at open */
	if (twins == 0) {
		if (k) {	/* replaced by a route that does not use a twin */
			kvar_drop(e, k);
			if (!nl->dumping)
				update_ent(nl, e);
		}
		return;
	}
	if (mixed && !(k && k->mixed))
		log_route(r, r->too_many ? "more next hops than the dataplane's ECMP"
			  : "next hops mix tunnel twins and other interfaces");
	if (!e && !(e = ent_get(nl, &r->p)))
		return;
	kvar_set(e, k, r, (flags & NLM_F_APPEND) && !(flags & NLM_F_REPLACE), mixed);
	if (!nl->dumping)
		update_ent(nl, e);
}

static void on_delroute(struct nl *nl, const struct route *r)
{
	struct rib_ent *e = ent_find(nl, &r->p);
	struct kroute *k = e ? kvar_find(e, r->metric) : NULL;
	bool subset = true;

	if (!k)
		return;
	for (unsigned i = 0; i < r->n; i++)
		subset = subset && kvar_has(k, r->oif[i]);
	if (subset && r->n > 0 && r->n < k->n) {
		/* IPv6: one next hop of a multipath route deleted */
		for (unsigned i = 0; i < r->n; i++)
			for (unsigned j = 0; j < k->n; j++)
				if (k->oif[j] == r->oif[i])
					k->oif[j--] = k->oif[--k->n];
	} else {
		kvar_drop(e, k);
	}
	update_ent(nl, e);
}

static void on_route(struct nl *nl, const struct nlmsghdr *h)
{
	struct route r;

	if (rt_parse(h, &r) < 0 || r.table != nl->table || rt_local(&r.p))
		return;
	if (h->nlmsg_type == RTM_NEWROUTE)
		on_newroute(nl, &r, h->nlmsg_flags);
	else
		on_delroute(nl, &r);
}

/* ---- links ---- */

static void on_link(struct nl *nl, const struct nlmsghdr *h)
{
	const struct ifinfomsg *ifi = mnl_nlmsg_get_payload(h);
	struct twin *t;

	if (h->nlmsg_len < mnl_nlmsg_size(sizeof(*ifi)))
		return;
	t = twin_find(nl, (uint32_t)ifi->ifi_index);
	if (!t)
		return;
	unsigned flags = h->nlmsg_type == RTM_DELLINK ? 0 : ifi->ifi_flags;

	/* IPv4 flushes a downed link's routes and marks its multipath hops dead
	 * without a route message: read the table again */
	if (!nl->dumping && ((flags ^ t->flags) & LINK_FLAGS))
		nl->resync_due = true;
	t->flags = flags;
	t->seen = h->nlmsg_type != RTM_DELLINK;
}

static int msg_cb(const struct nlmsghdr *h, void *data)
{
	struct nl *nl = data;

	switch (h->nlmsg_type) {
	case RTM_NEWROUTE:
	case RTM_DELROUTE:
		on_route(nl, h);
		break;
	case RTM_NEWLINK:
	case RTM_DELLINK:
		on_link(nl, h);
		break;
	default:
		break;
	}
	return MNL_CB_OK;
}

/* ---- sockets ---- */

static void warn_compat(void)
{
	FILE *f = fopen(COMPAT_SYSCTL, "r");
	int c;

	if (!f)
		return;		/* a kernel without nexthop objects */
	c = fgetc(f);
	fclose(f);
	if (c == '0')
		fprintf(stderr, "dpvpnd: netlink: %s is 0: routes that use nexthop objects "
			"(FRR's zebra) carry no next hop dpvpnd can read and are not mirrored; "
			"set it to 1\n", COMPAT_SYSCTL);
}

static struct mnl_socket *open_sock(int flags, unsigned groups)
{
	struct mnl_socket *s = mnl_socket_open2(NETLINK_ROUTE, flags | SOCK_CLOEXEC);

	if (!s || mnl_socket_bind(s, groups, MNL_SOCKET_AUTOPID) < 0) {
		fprintf(stderr, "dpvpnd: netlink: socket: %s\n", strerror(errno));
		if (s)
			mnl_socket_close(s);
		return NULL;
	}
	return s;
}

static int ev_bufsize(struct mnl_socket *s)
{
	int fd = mnl_socket_get_fd(s), size = NL_RCVBUF;

	/* FORCE passes net.core.rmem_max (root); the plain one is capped by it */
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)) == 0)
		return 0;
	return setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
}

static int req_timeout(struct mnl_socket *s)
{
	struct timeval tv = { NL_REQ_TIMEOUT_MS / 1000, (NL_REQ_TIMEOUT_MS % 1000) * 1000 };

	return setsockopt(mnl_socket_get_fd(s), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
}

struct nl *nl_open(uint32_t table, const struct nl_ops *ops)
{
	struct nl *nl = calloc(1, sizeof(*nl));

	if (!nl)
		return NULL;
	nl->table = table;
	nl->ops = *ops;
	nl->seq = (uint32_t)time(NULL);
	nl->ev = open_sock(SOCK_NONBLOCK, RTMGRP_LINK | RTMGRP_IPV4_ROUTE | RTMGRP_IPV6_ROUTE);
	nl->req = open_sock(0, 0);
	if (!nl->ev || !nl->req || ev_bufsize(nl->ev) < 0 || req_timeout(nl->req) < 0) {
		int e = errno;

		nl_close(nl);
		errno = e;
		return NULL;
	}
	warn_compat();
	return nl;
}

void nl_close(struct nl *nl)
{
	if (!nl)
		return;
	if (nl->ev)
		mnl_socket_close(nl->ev);
	if (nl->req)
		mnl_socket_close(nl->req);
	for (size_t i = 0; i < nl->n; i++)
		free(nl->ents[i]);
	free(nl->ents);
	free(nl->twins);
	free(nl);
}

int nl_fd(const struct nl *nl)
{
	return mnl_socket_get_fd(nl->ev);
}

/* Send the request in nl->buf and read its replies (an ack or a dump). */
static int req_run(struct nl *nl, struct nlmsghdr *h, mnl_cb_t cb)
{
	uint32_t portid = mnl_socket_get_portid(nl->req);
	int ret;

	h->nlmsg_seq = ++nl->seq;
	if (mnl_socket_sendto(nl->req, h, h->nlmsg_len) < 0)
		return -1;
	do {
		ssize_t n = mnl_socket_recvfrom(nl->req, nl->buf, sizeof(nl->buf));

		if (n < 0) {
			if (errno == EAGAIN)
				errno = ETIMEDOUT;
			return -1;
		}
		ret = mnl_cb_run(nl->buf, (size_t)n, nl->seq, portid, cb, nl);
	} while (ret > MNL_CB_STOP);
	return ret < 0 ? -1 : 0;
}

static int dump(struct nl *nl, uint16_t type, uint8_t family)
{
	_Alignas(8) char req[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *h = mnl_nlmsg_put_header(req);

	h->nlmsg_type = type;
	h->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	if (type == RTM_GETLINK) {
		struct ifinfomsg *ifi = mnl_nlmsg_put_extra_header(h, sizeof(*ifi));

		ifi->ifi_family = family;
	} else {
		struct rtmsg *rtm = mnl_nlmsg_put_extra_header(h, sizeof(*rtm));

		rtm->rtm_family = family;
	}
	return req_run(nl, h, msg_cb);
}

/*
 * Events already queued are in the coming dump: drop them.  Bounded: under a
 * storm the rest is read after the dump, and applying it in order still ends
 * in the kernel's state (only lost events need the dump).  True if the queue
 * was emptied.  If not, the kernel may still be dropping events without
 * saying so: after its first overrun it sets ENOBUFS once and then drops
 * silently until the queue has been read empty (netlink's congested bit), so
 * events lost during this dump would go unreported; nl_read reads the queue
 * empty and resyncs once more (resync_when_empty).  Found by test_tun_twin's
 * 20000-route delete under ASan: the last 6000 deletions never arrived.
 */
static bool ev_drain(struct nl *nl)
{
	for (int i = 0; i < DRAIN_MAX; i++)
		if (mnl_socket_recvfrom(nl->ev, nl->buf, sizeof(nl->buf)) < 0 && errno != ENOBUFS)
			return errno == EAGAIN;
	return false;
}

static int dump_all(struct nl *nl)
{
	for (size_t i = 0; i < nl->ntwins; i++)
		nl->twins[i].seen = false;
	if (dump(nl, RTM_GETLINK, AF_UNSPEC) < 0)
		return -1;
	for (size_t i = 0; i < nl->ntwins; i++)
		if (!nl->twins[i].seen)
			nl->twins[i].flags = 0;
	for (size_t i = 0; i < nl->n; i++)
		for (unsigned j = 0; j < nl->ents[i]->nk; j++)
			nl->ents[i]->k[j].stale = true;
	if (dump(nl, RTM_GETROUTE, AF_INET) < 0 || dump(nl, RTM_GETROUTE, AF_INET6) < 0)
		return -1;
	return 0;
}

/* A dump given up half-way leaves its rest queued: a new socket. */
static int req_reopen(struct nl *nl)
{
	struct mnl_socket *s = open_sock(0, 0);

	if (!s || req_timeout(s) < 0) {
		if (s)
			mnl_socket_close(s);
		return -1;
	}
	mnl_socket_close(nl->req);
	nl->req = s;
	return 0;
}

int nl_resync(struct nl *nl)
{
	bool empty = ev_drain(nl);
	int ret = -1;

	nl->dumping = true;
	/* EINTR (NLM_F_DUMP_INTR): the table changed under the dump */
	for (int i = 0; i < DUMP_TRIES && ret < 0; i++)
		if ((ret = dump_all(nl)) < 0 && req_reopen(nl) < 0)
			break;
	nl->dumping = false;
	if (ret < 0) {
		fprintf(stderr, "dpvpnd: netlink: route dump: %s\n", strerror(errno));
		nl->resync_due = true;
		return -1;
	}
	for (size_t i = 0; i < nl->n; i++) {
		struct rib_ent *e = nl->ents[i];

		for (unsigned j = e->nk; j-- > 0;)
			if (e->k[j].stale)
				kvar_drop(e, &e->k[j]);
	}
	update_all(nl);
	nl->resync_due = false;
	nl->resync_when_empty = !empty;
	return 0;
}

int nl_read(struct nl *nl)
{
	for (;;) {
		ssize_t n = mnl_socket_recvfrom(nl->ev, nl->buf, sizeof(nl->buf));

		if (n < 0) {
			if (errno == ENOBUFS) {
				fprintf(stderr, "dpvpnd: netlink: events lost (ENOBUFS): "
					"reading the routes again\n");
				nl->resync_due = true;
				break;
			}
			if (errno == EAGAIN && nl->resync_when_empty)
				nl->resync_due = true;	/* read empty: now nothing is dropped unsaid */
			if (errno == EAGAIN || errno == EINTR)
				break;
			fprintf(stderr, "dpvpnd: netlink: recv: %s\n", strerror(errno));
			return -1;
		}
		/* events: seq 0, portid 0 (from the kernel) */
		if (mnl_cb_run(nl->buf, (size_t)n, 0, 0, msg_cb, nl) < 0 && errno != ESRCH)
			fprintf(stderr, "dpvpnd: netlink: event: %s\n", strerror(errno));
	}
	return nl->resync_due ? nl_resync(nl) : 0;
}

/* ---- twin set-up ---- */

static int ack_report(struct nl *nl, struct nlmsghdr *h, const char *what, const char *obj)
{
	if (req_run(nl, h, NULL) == 0)
		return 0;
	int e = errno;

	fprintf(stderr, "dpvpnd: netlink: %s %s: %s\n", what, obj, strerror(e));
	errno = e;
	return -1;
}

static int link_set(struct nl *nl, uint32_t ifindex, const char *ifname, int up, uint32_t mtu)
{
	_Alignas(8) char req[MNL_SOCKET_BUFFER_SIZE];
	char obj[48];
	struct nlmsghdr *h = mnl_nlmsg_put_header(req);
	struct ifinfomsg *ifi;

	h->nlmsg_type = RTM_NEWLINK;
	h->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	ifi = mnl_nlmsg_put_extra_header(h, sizeof(*ifi));
	ifi->ifi_family = AF_UNSPEC;
	ifi->ifi_index = (int)ifindex;
	if (up >= 0) {
		ifi->ifi_change = IFF_UP;
		ifi->ifi_flags = up ? IFF_UP : 0;
	}
	if (ifname)
		mnl_attr_put_strz(h, IFLA_IFNAME, ifname);
	if (mtu)
		mnl_attr_put_u32(h, IFLA_MTU, mtu);
	if (ifname)
		snprintf(obj, sizeof(obj), "%s", ifname);
	else
		snprintf(obj, sizeof(obj), "ifindex %u", ifindex);
	return ack_report(nl, h, "set link", obj);
}

int nl_link_set(struct nl *nl, uint32_t ifindex, int up, uint32_t mtu)
{
	return link_set(nl, ifindex, NULL, up, mtu);
}

int nl_link_set_name(struct nl *nl, const char *ifname, int up, uint32_t mtu)
{
	if (strlen(ifname) >= IFNAMSIZ) {
		errno = EINVAL;
		return -1;
	}
	return link_set(nl, 0, ifname, up, mtu);
}

static int addr_req(struct nl *nl, uint16_t type, uint32_t ifindex, const struct nl_prefix *a)
{
	_Alignas(8) char req[MNL_SOCKET_BUFFER_SIZE];
	char obj[80], ps[64];
	struct nlmsghdr *h = mnl_nlmsg_put_header(req);
	struct ifaddrmsg *ifa;
	unsigned alen = addr_len(a->family);

	h->nlmsg_type = type;
	h->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	if (type == RTM_NEWADDR)
		h->nlmsg_flags |= NLM_F_CREATE | NLM_F_REPLACE;
	ifa = mnl_nlmsg_put_extra_header(h, sizeof(*ifa));
	ifa->ifa_family = a->family;
	ifa->ifa_prefixlen = a->len;
	ifa->ifa_index = ifindex;
	ifa->ifa_scope = RT_SCOPE_UNIVERSE;
	/* a tunnel has no neighbour to detect a duplicate with */
	ifa->ifa_flags = a->family == AF_INET6 ? IFA_F_NODAD : 0;
	mnl_attr_put(h, IFA_LOCAL, alen, a->addr);
	mnl_attr_put(h, IFA_ADDRESS, alen, a->addr);
	snprintf(obj, sizeof(obj), "%s ifindex %u", nl_prefix_str(a, ps, sizeof(ps)), ifindex);
	return ack_report(nl, h, type == RTM_NEWADDR ? "add address" : "delete address", obj);
}

int nl_addr_add(struct nl *nl, uint32_t ifindex, const struct nl_prefix *addr)
{
	return addr_req(nl, RTM_NEWADDR, ifindex, addr);
}

int nl_addr_del(struct nl *nl, uint32_t ifindex, const struct nl_prefix *addr)
{
	return addr_req(nl, RTM_DELADDR, ifindex, addr);
}
