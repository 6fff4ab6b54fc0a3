/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * config_ha.c - the [ha] section: this gateway as one node of a pair.
 * keepalived's VRRP decides which node is master and moves the virtual
 * addresses; dpvpnd syncs its IKE and CHILD SAs to the other node over a TLS
 * 1.3 channel keyed by sync-key (the channel itself is not the parser's).
 * Its keys, the checks within the section at its end (finish_ha), and those
 * that need the ports (cfg_check_ha, after the whole file).  A tunnel's local
 * may be a virtual address of an outside port: cfg_is_outside_addr
 * (config_check.c) counts them.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "config_parse.h"

#define HA_KEYFILE_MAX	256	/* 128 hex digits and some slack, as key files */
#define HA_ADDR_ERR	"expected ADDRESS[:PORT] (198.18.255.1, 198.18.255.1:4510, " \
			"[2001:db8:ff::1]:4510)"

static struct cfg_ha *ha(struct parser *p)
{
	return &p->cfg->ha;
}

static int key_ha_node(struct parser *p, const char *val)
{
	size_t len = strlen(val);
	bool ok = len > 0 && len <= CFG_NAME_MAX;

	for (size_t i = 0; ok && i < len; i++)
		ok = isgraph((unsigned char)val[i]);
	if (!ok)
		return cfg_kerr(p, "expected 1..%d printable characters without blanks, got '%s'",
				CFG_NAME_MAX, val);
	strcpy(ha(p)->node, val);
	return 0;
}

/* "ADDR", "ADDR:PORT", "[ADDR6]" or "[ADDR6]:PORT" into a and *port. */
static int split_addr_port(const char *val, struct cfg_addr *a, uint16_t *port)
{
	char buf[INET6_ADDRSTRLEN];
	bool bracket = val[0] == '[';
	const char *end, *colon;
	uint64_t v = CFG_HA_PORT;

	if (bracket) {
		end = strchr(++val, ']');
		if (end == NULL || (end[1] != '\0' && end[1] != ':'))
			return -1;
		colon = end[1] == ':' ? end + 1 : NULL;
	} else {
		colon = strchr(val, ':');
		end = colon != NULL ? colon : val + strlen(val);
	}
	if ((size_t)(end - val) >= sizeof(buf))
		return -1;
	memcpy(buf, val, (size_t)(end - val));
	buf[end - val] = '\0';
	if (colon != NULL && (cfg_parse_uint(colon + 1, false, 65535, &v) || v == 0))
		return -1;
	/* IPv6 only in brackets, IPv4 never: "2001:db8::1:4510" is no guess */
	if (cfg_parse_addr(buf, a) || cfg_addr_is_zero(a) ||
	    (a->family == DPVPN_AF_INET6) != bracket)
		return -1;
	*port = (uint16_t)v;
	return 0;
}

static void to_sockaddr(const struct cfg_addr *a, uint16_t port, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (a->family == DPVPN_AF_INET) {
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;

		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		sin->sin_addr.s_addr = htonl(a->v4);
	} else {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
		memcpy(&sin6->sin6_addr, a->v6, 16);
	}
}

/* The address of a sync endpoint (family 0: none parsed), and its port. */
static uint16_t from_sockaddr(const struct sockaddr_storage *ss, struct cfg_addr *a)
{
	memset(a, 0, sizeof(*a));
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)ss;

		a->family = DPVPN_AF_INET;
		a->v4 = ntohl(sin->sin_addr.s_addr);
		return ntohs(sin->sin_port);
	}
	if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)ss;

		a->family = DPVPN_AF_INET6;
		memcpy(a->v6, &sin6->sin6_addr, 16);
		return ntohs(sin6->sin6_port);
	}
	return 0;
}

static int sync_addr(struct parser *p, const char *val, char *text, size_t cap,
		     struct sockaddr_storage *ss)
{
	struct cfg_addr a;
	uint16_t port;

	if (strlen(val) >= cap || split_addr_port(val, &a, &port))
		return cfg_kerr(p, HA_ADDR_ERR ", got '%s'", val);
	strcpy(text, val);
	to_sockaddr(&a, port, ss);
	return 0;
}

static int key_ha_local(struct parser *p, const char *val)
{
	return sync_addr(p, val, ha(p)->local, sizeof(ha(p)->local), &ha(p)->local_sa);
}

static int key_ha_peer(struct parser *p, const char *val)
{
	return sync_addr(p, val, ha(p)->peer, sizeof(ha(p)->peer), &ha(p)->peer_sa);
}

/*
 * The channel's pre-shared key: hex on one line, optionally after 0x (as a
 * key file), of CFG_HA_KEY_MIN..CFG_HA_KEY_MAX bytes.  Like psk-file, a
 * symbolic link is refused: the key admits a peer to every SA this node
 * has, so it must be exactly the file the config names.  Messages never
 * quote the file's text; what was read is wiped.
 */
static int key_ha_sync_key(struct parser *p, const char *val)
{
	struct cfg_ha *h = ha(p);
	char buf[HA_KEYFILE_MAX + 1], path[4096], why[96], *s;
	size_t n = 0;
	ssize_t got;
	int fd, rc = -1;
	bool nul;

	if (cfg_key_path(p, val, path) || (fd = cfg_open_key_file(p, path, true)) < 0)
		return -1;
	got = cfg_read_small(fd, buf, sizeof(buf));
	close(fd);
	if (got < 0 || got > HA_KEYFILE_MAX) {
		cfg_kerr(p, "%s: %s", path, got < 0 ? strerror(errno) : "too big for a key file");
		goto out;
	}
	nul = memchr(buf, '\0', (size_t)got) != NULL;	/* before cfg_trim cuts the end */
	buf[got] = '\0';
	s = cfg_trim(buf);
	if (nul || strpbrk(s, "\r\n") != NULL)
		cfg_kerr(p, "%s: expected the key as hex on one line", path);
	else if (cfg_decode_hex(s, h->key, sizeof(h->key), &n, why, sizeof(why)))
		cfg_kerr(p, "%s: bad hex: %s", path, why);
	else if (n < CFG_HA_KEY_MIN || n > CFG_HA_KEY_MAX)
		cfg_kerr(p, "%s: expected %d..%d hex digits (a %d..%d-byte key), got %zu", path,
			 2 * CFG_HA_KEY_MIN, 2 * CFG_HA_KEY_MAX, CFG_HA_KEY_MIN, CFG_HA_KEY_MAX,
			 2 * n);
	else
		rc = 0;
out:
	h->key_len = rc == 0 ? n : 0;
	if (rc != 0)
		explicit_bzero(h->key, sizeof(h->key));
	explicit_bzero(buf, sizeof(buf));
	return rc;
}

static int key_ha_priority(struct parser *p, const char *val)
{
	uint64_t v;

	if (cfg_parse_uint(val, false, 254, &v) || v == 0)
		return cfg_kerr(p, "expected a VRRP priority 1..254 (as in keepalived's "
				"vrrp_instance; 255 is an address owner's), got '%s'", val);
	ha(p)->priority = (uint8_t)v;
	return 0;
}

static int key_ha_rekey(struct parser *p, const char *val)
{
	static const char *const names[] = {
		[CFG_HA_REKEY_AUTO] = "auto", [CFG_HA_REKEY_ALWAYS] = "always",
		[CFG_HA_REKEY_NEVER] = "never",
	};

	for (uint8_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(val, names[i])) {
			ha(p)->takeover_rekey = i;
			return 0;
		}
	return cfg_kerr(p, "expected auto (rekey when the sync channel was down at takeover), "
			"always or never, got '%s'", val);
}

static int key_ha_dead(struct parser *p, const char *val)
{
	uint64_t v;

	ha(p)->dead_ms = 0;	/* refused: not compared with heartbeat-ms (check_timers) */
	if (cfg_parse_uint(val, false, CFG_HA_DEAD_MS_MAX, &v) || v < CFG_HA_DEAD_MS_MIN)
		return cfg_kerr(p, "expected milliseconds %d..%d, got '%s'", CFG_HA_DEAD_MS_MIN,
				CFG_HA_DEAD_MS_MAX, val);
	ha(p)->dead_ms = (unsigned)v;
	return 0;
}

/* Against dead-ms at the section's end (finish_ha): the keys come in any order. */
static int key_ha_heartbeat(struct parser *p, const char *val)
{
	uint64_t v;

	ha(p)->heartbeat_ms = 0;	/* refused: as dead-ms */
	if (cfg_parse_uint(val, false, CFG_HA_DEAD_MS_MAX / 3, &v) ||
	    v < CFG_HA_HEARTBEAT_MS_MIN)
		return cfg_kerr(p, "expected milliseconds %d..%d (and at most dead-ms / 3), "
				"got '%s'", CFG_HA_HEARTBEAT_MS_MIN, CFG_HA_DEAD_MS_MAX / 3, val);
	ha(p)->heartbeat_ms = (unsigned)v;
	return 0;
}

/* The virtual address that a is, or NULL. */
static const struct cfg_ha_vip *vip_of(const struct cfg_ha *h, const struct cfg_addr *a)
{
	for (size_t i = 0; i < h->n_vips; i++)
		if (cfg_addr_equal(a, &h->vips[i].addr.addr))
			return &h->vips[i];
	return NULL;
}

/* A VIP's group: one of the section's at most CFG_HA_GROUP_MAX (two). */
static int vip_group(struct parser *p, const char *group)
{
	const struct cfg_ha *h = ha(p);
	const char *a = NULL, *b = NULL;

	_Static_assert(CFG_HA_GROUP_MAX == 2, "a and b are the groups");
	for (size_t i = 0; i < h->n_vips; i++) {
		const char *g = h->vips[i].group;

		if (!strcmp(g, group))
			return 0;
		if (a == NULL)
			a = g;
		else if (strcmp(g, a))
			b = g;
	}
	if (b != NULL)
		return cfg_kerr(p, "a third group, %s (%s and %s have addresses): at most %d, "
				"each node master of one when both are active", group, a, b,
				CFG_HA_GROUP_MAX);
	return 0;
}

static bool name_ok(const char *s)
{
	return *s && strlen(s) <= CFG_NAME_MAX && cfg_valid_name(s);
}

/* "PORT ADDR/LEN [group NAME]" into v; the port is looked up at the end. */
static int parse_vip(struct parser *p, const char *val, struct cfg_ha_vip *v)
{
	char buf[256], *save = NULL, *port, *addr, *kw, *group, *more;

	if (strlen(val) >= sizeof(buf))
		return cfg_kerr(p, "too long");
	strcpy(buf, val);
	port = strtok_r(buf, " \t", &save);
	addr = strtok_r(NULL, " \t", &save);
	kw = strtok_r(NULL, " \t", &save);
	group = strtok_r(NULL, " \t", &save);
	more = strtok_r(NULL, " \t", &save);
	if (addr == NULL || more != NULL || (kw != NULL && (strcmp(kw, "group") || !group)))
		return cfg_kerr(p, "expected PORT ADDRESS/LEN [group NAME] (outside "
				"198.19.0.10/24 group dpvpn), got '%s'", val);
	if (!name_ok(port))
		return cfg_kerr(p, "'%s' is not a [port] name (1..%d characters of A-Z a-z 0-9 "
				"- _ .)", port, CFG_NAME_MAX);
	if (cfg_parse_cidr(addr, &v->addr) || v->addr.len == 0 ||
	    cfg_addr_is_zero(&v->addr.addr))
		return cfg_kerr(p, "expected an IPv4 address with prefix length 1..32 "
				"(198.19.0.10/24) or an IPv6 address with prefix length 1..128 "
				"(2001:db8::10/64), got '%s'", addr);
	if (group != NULL && !name_ok(group))
		return cfg_kerr(p, "group: '%s' is not a name (1..%d characters of A-Z a-z 0-9 "
				"- _ .: keepalived's vrrp_instance)", group, CFG_NAME_MAX);
	strcpy(v->port, port);
	strcpy(v->group, group != NULL ? group : CFG_HA_GROUP_DEFAULT);
	return 0;
}

static int key_ha_vip(struct parser *p, const char *val)
{
	struct cfg_ha *h = ha(p);
	const struct cfg_ha_vip *dup;
	struct cfg_ha_vip v;
	char buf[INET6_ADDRSTRLEN];

	memset(&v, 0, sizeof(v));	/* padding too: a reload may compare configs */
	if (parse_vip(p, val, &v))
		return -1;
	if (h->n_vips == CFG_HA_VIP_MAX)
		return cfg_kerr(p, "more than %d virtual addresses", CFG_HA_VIP_MAX);
	if ((dup = vip_of(h, &v.addr.addr)) != NULL)
		return cfg_kerr(p, "%s is already a virtual address (line %d)",
				cfg_fmt_addr(&v.addr.addr, buf), dup->line);
	if (vip_group(p, v.group))
		return -1;
	v.line = p->line;
	h->vips[h->n_vips++] = v;
	return 0;
}

static int open_ha(struct parser *p)
{
	struct cfg_ha *h = ha(p);

	if (p->seen_ha++)
		return -1;
	h->on = 1;
	h->line = p->sect_line;
	h->priority = CFG_HA_PRIORITY;
	h->takeover_rekey = CFG_HA_REKEY_AUTO;
	h->dead_ms = CFG_HA_DEAD_MS;
	h->heartbeat_ms = CFG_HA_HEARTBEAT_MS;
	return 0;
}

/* node's default: the host name, cut to CFG_NAME_MAX bytes. */
static void default_node(struct parser *p)
{
	char host[256] = "";
	size_t len;
	bool ok;

	if (gethostname(host, sizeof(host) - 1) != 0)
		host[0] = '\0';
	host[CFG_NAME_MAX] = '\0';
	len = strlen(host);
	ok = len > 0;
	for (size_t i = 0; ok && i < len; i++)
		ok = isgraph((unsigned char)host[i]);
	if (ok)
		strcpy(ha(p)->node, host);
	else
		cfg_err_at(p, p->sect_line, "[ha] node: not given, and the host name is not 1..%d "
			   "printable characters (give node = NAME)", CFG_NAME_MAX);
}

/*
 * heartbeat-ms at most dead-ms / 3: the error at the key the file gave.  A
 * refused one (0) is not compared (one error for one mistake); the default
 * is put back, as in a config that is refused anyway.
 */
static void check_timers(struct parser *p)
{
	struct cfg_ha *h = ha(p);
	unsigned most = h->dead_ms / 3;
	int hb_line = cfg_key_line(p, "heartbeat-ms"), dead_line = cfg_key_line(p, "dead-ms");

	if (h->dead_ms == 0 || h->heartbeat_ms == 0) {
		h->dead_ms = h->dead_ms ? h->dead_ms : CFG_HA_DEAD_MS;
		h->heartbeat_ms = h->heartbeat_ms ? h->heartbeat_ms : CFG_HA_HEARTBEAT_MS;
		return;
	}
	if (h->heartbeat_ms <= most)
		return;
	if (hb_line)
		cfg_err_at(p, hb_line, "[ha] heartbeat-ms: %u is more than dead-ms / 3 = %u "
			   "(three heartbeats at least before the peer is declared gone)",
			   h->heartbeat_ms, most);
	else if (dead_line)
		cfg_err_at(p, dead_line, "[ha] dead-ms: %u leaves no room for three heartbeats "
			   "of %u ms (heartbeat-ms's default): give heartbeat-ms = %u or less",
			   h->dead_ms, h->heartbeat_ms, most);
}

/* local and peer: one family, two endpoints, neither a virtual address. */
static void check_sync(struct parser *p)
{
	const struct cfg_ha *h = ha(p);
	struct cfg_addr l, r;
	uint16_t lport = from_sockaddr(&h->local_sa, &l), rport = from_sockaddr(&h->peer_sa, &r);
	int line[2] = { cfg_key_line(p, "local"), cfg_key_line(p, "peer") };
	const struct cfg_addr *a[2] = { &l, &r };
	static const char *const key[2] = { "local", "peer" };
	char buf[INET6_ADDRSTRLEN];

	if (l.family && r.family && l.family != r.family)
		cfg_err_at(p, line[1], "[ha] peer: %s is %s, local %s is %s: one family", h->peer,
			   cfg_family_name(r.family), h->local, cfg_family_name(l.family));
	else if (l.family && cfg_addr_equal(&l, &r) && lport == rport)
		cfg_err_at(p, line[1], "[ha] peer: %s is local's address and port: give the "
			   "other node's", h->peer);
	for (int k = 0; k < 2; k++) {
		const struct cfg_ha_vip *v = a[k]->family ? vip_of(h, a[k]) : NULL;

		if (v != NULL)
			cfg_err_at(p, line[k], "[ha] %s: %s is a virtual-address (line %d), which "
				   "moves: the sync channel needs each node's own address", key[k],
				   cfg_fmt_addr(a[k], buf), v->line);
	}
}

static void finish_ha(struct parser *p)
{
	if (!ha(p)->node[0])
		default_node(p);
	check_timers(p);
	check_sync(p);
}

static const struct cfg_port *port_named(const struct cfg *c, const char *name)
{
	for (size_t i = 0; i < c->n_ports; i++)
		if (!strcmp(c->ports[i].name, name))
			return &c->ports[i];
	return NULL;
}

/* Is a one of port's own addresses (address =, extra-addresses)? */
static bool port_has(const struct cfg_port *port, const struct cfg_addr *a)
{
	const struct cfg_prefix *own = a->family == DPVPN_AF_INET6 ? &port->addr6 : &port->addr4;
	const struct cfg_prefix *x = &port->extra4;

	if (own->addr.family && cfg_addr_equal(&own->addr, a))
		return true;
	return x->addr.family && a->family == DPVPN_AF_INET &&
	       (a->v4 & cfg_prefix_mask(x->len)) == x->addr.v4;
}

/*
 * After the whole file: each virtual address names a [port] with an address
 * of its family, and is no port's own address (that one stays with its
 * node; a virtual one moves).
 */
void cfg_check_ha(struct parser *p)
{
	const struct cfg *c = p->cfg;
	char buf[INET6_ADDRSTRLEN];

	for (size_t i = 0; i < c->ha.n_vips; i++) {
		const struct cfg_ha_vip *v = &c->ha.vips[i];

		const struct cfg_port *port = port_named(c, v->port);
		bool v6 = v->addr.addr.family == DPVPN_AF_INET6;

		if (port == NULL)
			cfg_err_at(p, v->line, "[ha] virtual-address: no [port] named '%s'",
				   v->port);
		else if (!(v6 ? port->addr6 : port->addr4).addr.family)
			/* the dataplane's neighbour answers come from the port
			 * (dp_port_owns4/6 need its own address first) */
			cfg_err_at(p, v->line, "[ha] virtual-address: %s is IPv%c and [port %s] "
				   "has no IPv%c address of its own", cfg_fmt_addr(&v->addr.addr, buf),
				   v6 ? '6' : '4', v->port, v6 ? '6' : '4');
		for (size_t j = 0; j < c->n_ports; j++)
			if (port_has(&c->ports[j], &v->addr.addr)) {
				cfg_err_at(p, v->line, "[ha] virtual-address: %s is an address of "
					   "[port %s] (a port's own stays with its node)",
					   cfg_fmt_addr(&v->addr.addr, buf), c->ports[j].name);
				break;
			}
	}
}

static const struct key_def ha_keys[] = {
	{ "node", key_ha_node, false },
	{ "local", key_ha_local, true },
	{ "peer", key_ha_peer, true },
	{ "sync-key", key_ha_sync_key, true },
	{ "priority", key_ha_priority, false },
	{ "virtual-address", key_ha_vip, false, KEYING_ANY, true },
	{ "takeover-rekey", key_ha_rekey, false },
	{ "dead-ms", key_ha_dead, false },
	{ "heartbeat-ms", key_ha_heartbeat, false },
};

const struct sect_def cfg_sect_ha = {
	"ha", SECT_HA, false, KEYS(ha_keys), open_ha, finish_ha
};
