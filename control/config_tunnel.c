/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * config_tunnel.c - the [tunnel NAME] sections: addresses and traffic
 * selectors, cipher, SPIs and keys (inline or from key files), replay
 * window, lifetimes, MTU, MSS clamping, fragmentation and UDP encapsulation.
 * The keys of keying = ike are config_ike.c's; tunnel_keys lists both.
 * Checks across tunnels (in-spi, local addresses) run at the end
 * (config_check.c).
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config_parse.h"
#include "dpvpn_alg.h"

#define KEYFILE_MAX	256		/* 36 bytes of hex and some slack */

/*
 * Whether key d may be given in the current section: keys of one keying
 * belong only to its tunnels.  After a refused keying value every key is
 * taken, so that one typo does not bring an error for each key.
 */
bool cfg_key_belongs(struct parser *p, const struct key_def *d)
{
	if (p->type != SECT_TUNNEL || d->keying == KEYING_ANY || p->keying_bad)
		return true;
	return (d->keying == KEYING_IKE) == (CUR_TUN(p)->ike.on != 0);
}

/*
 * A required key of one keying is not missing after a refused keying value;
 * cipher is not required with keying = ike (esp-proposals, or their default).
 */
bool cfg_key_required(struct parser *p, const struct key_def *d)
{
	if (p->type == SECT_TUNNEL && !p->keying_bad && CUR_TUN(p)->ike.on &&
	    !strcmp(d->name, "cipher"))
		return false;
	if (p->type == SECT_TUNNEL && CUR_TUN(p)->ra.any && !strcmp(d->name, "remote-ts"))
		return false;		/* the pool is (config_ra.c) */
	if (p->type == SECT_TUNNEL && CUR_TUN(p)->route &&
	    (!strcmp(d->name, "local-ts") || !strcmp(d->name, "remote-ts")))
		return false;		/* mode = route: 0/0 and ::/0 */
	if (p->type == SECT_TUNNEL && CUR_TUN(p)->ike.parent[0] &&
	    (!strcmp(d->name, "local") || !strcmp(d->name, "remote")))
		return false;		/* ike-sa: the parent's (cfg_check_ike_sa) */
	return d->keying == KEYING_ANY || (!p->keying_bad && cfg_key_belongs(p, d));
}

static int tun_addr(struct parser *p, const char *val, struct cfg_addr *addr, int *line)
{
	struct cfg_addr a;

	*line = p->line;
	if (cfg_parse_addr(val, &a) || cfg_addr_is_zero(&a))
		return cfg_kerr(p, "expected an IPv4 or IPv6 address, got '%s'", val);
	*addr = a;
	return 0;
}

static int key_tun_local(struct parser *p, const char *val)
{
	return tun_addr(p, val, &CUR_TUN(p)->local, &CUR_TUN(p)->local_line);
}

static int key_tun_remote(struct parser *p, const char *val)
{
	int rc = cfg_tun_remote_any(p, val);

	if (rc <= 0)
		return rc;
	return tun_addr(p, val, &CUR_TUN(p)->remote, &CUR_TUN(p)->remote_line);
}

/* Do two prefixes (host bits zero, one family) share an address? */
static bool ts_overlap(const struct cfg_prefix *a, const struct cfg_prefix *b)
{
	struct cfg_prefix x = *a, y = *b, xn, yn;

	x.len = y.len = a->len < b->len ? a->len : b->len;
	cfg_host_bits(&x, &xn);
	cfg_host_bits(&y, &yn);
	if (a->addr.family == DPVPN_AF_INET)
		return xn.addr.v4 == yn.addr.v4;
	return memcmp(xn.addr.v6, yn.addr.v6, sizeof(xn.addr.v6)) == 0;
}

/*
 * local-ts / remote-ts: one prefix or a comma list of up to CFG_TS_MAX,
 * of one family and none overlapping another (a packet must select one
 * tunnel's policy, and two overlapping entries would be one policy twice).
 */
static int parse_ts_list(struct parser *p, const char *val, struct cfg_prefix *first,
			 struct cfg_prefix *more, uint8_t *n_more)
{
	struct cfg_prefix list[CFG_TS_MAX];
	char buf[512], *rest = buf, *tok;
	unsigned n = 0;

	if (strlen(val) >= sizeof(buf))
		return cfg_kerr(p, "list too long (%zu characters)", strlen(val));
	/* padding too: a reload compares tunnels byte for byte (inst_tunnel_same) */
	memset(list, 0, sizeof(list));
	memcpy(buf, val, strlen(val) + 1);
	while ((tok = strsep(&rest, ",")) != NULL) {	/* an empty entry is an error */
		struct cfg_prefix x;
		char *end;

		while (*tok == ' ' || *tok == '\t')
			tok++;
		end = tok + strlen(tok);
		while (end > tok && (end[-1] == ' ' || end[-1] == '\t'))
			*--end = '\0';
		if (n == CFG_TS_MAX)
			return cfg_kerr(p, "at most %d prefixes in a list", CFG_TS_MAX);
		if (cfg_parse_net(p, tok, &x))
			return -1;
		/* field by field: x's padding and unused bytes are the stack's */
		list[n].addr.family = x.addr.family;
		if (x.addr.family == DPVPN_AF_INET)
			list[n].addr.v4 = x.addr.v4;
		else
			memcpy(list[n].addr.v6, x.addr.v6, sizeof(x.addr.v6));
		list[n].len = x.len;
		if (list[n].addr.family != list[0].addr.family)
			return cfg_kerr(p, "'%s' is not of the first prefix's family (%s): "
					"one family per list", tok,
					cfg_family_name(list[0].addr.family));
		for (unsigned i = 0; i < n; i++)
			if (ts_overlap(&list[i], &list[n]))
				return cfg_kerr(p, "'%s' overlaps entry %u of the list", tok,
						i + 1);
		n++;
	}
	memcpy(first, &list[0], sizeof(*first));
	memcpy(more, list + 1, (n - 1) * sizeof(*more));
	*n_more = (uint8_t)(n - 1);
	return 0;
}

static int key_tun_lts(struct parser *p, const char *val)
{
	struct cfg_tunnel *t = CUR_TUN(p);

	t->lts_line = p->line;
	return parse_ts_list(p, val, &t->local_ts, t->more_lts, &t->n_more_lts);
}

static int key_tun_rts(struct parser *p, const char *val)
{
	struct cfg_tunnel *t = CUR_TUN(p);

	t->rts_line = p->line;
	return parse_ts_list(p, val, &t->remote_ts, t->more_rts, &t->n_more_rts);
}

static int key_tun_cipher(struct parser *p, const char *val)
{
	char names[256] = "";
	size_t n = 0;

	for (unsigned int a = 0; a < DPVPN_ALG_MAX; a++) {
		const struct dpvpn_alg_info *info = dpvpn_alg_get(a);

		if (info == NULL)
			continue;
		if (!strcmp(val, info->name)) {
			CUR_TUN(p)->alg = (uint8_t)a;
			return 0;
		}
		n += snprintf(names + n, sizeof(names) - n, "%s%s", n ? ", " : "", info->name);
	}
	return cfg_kerr(p, "expected one of %s; got '%s'", names, val);
}

static int tun_spi(struct parser *p, const char *val, struct cfg_sa_key *k)
{
	uint64_t v;

	k->spi_line = p->line;
	if (cfg_parse_uint(val, true, UINT32_MAX, &v))
		return cfg_kerr(p, "expected an SPI (0x100..0xffffffff or decimal), got '%s'",
				val);
	if (v < CFG_SPI_MIN)
		return cfg_kerr(p, "SPI %s is reserved (1..255 by IANA, 0 is invalid); "
				"use 256 or more", val);
	k->spi = (uint32_t)v;
	return 0;
}

static int key_tun_out_spi(struct parser *p, const char *val)
{
	return tun_spi(p, val, &CUR_TUN(p)->out);
}

static int key_tun_in_spi(struct parser *p, const char *val)
{
	return tun_spi(p, val, &CUR_TUN(p)->in);
}

/* Both "x-key" and "x-key-file" given: the second one is the error. */
static int key_once(struct parser *p, struct cfg_sa_key *k, bool auth, bool file)
{
	const char *dir = k == &CUR_TUN(p)->out ? "out" : "in", *what = auth ? "auth-key" : "key";
	int *line = auth ? &k->auth_line : &k->key_line;

	if (*line)
		return cfg_kerr(p, "give either %s-%s or %s-%s-file, not both "
				"(other one at line %d)", dir, what, dir, what, *line);
	*line = p->line;
	if (auth)
		k->auth_is_file = file;
	else
		k->key_is_file = file;
	return 0;
}

static int set_key_hex(struct parser *p, struct cfg_sa_key *k, bool auth, const char *hex,
		       const char *what)
{
	uint8_t *mat = auth ? k->authmat : k->keymat;
	size_t cap = auth ? sizeof(k->authmat) : sizeof(k->keymat);
	size_t *len = auth ? &k->authmat_len : &k->keymat_len;
	char why[96];

	if (cfg_decode_hex(hex, mat, cap, len, why, sizeof(why))) {
		*len = 0;
		return cfg_kerr(p, "%sbad hex: %s", what, why);
	}
	return 0;
}

/*
 * A key written in the config itself is as private as the file: one that
 * group or others may read is refused (once per file, naming the first key).
 */
static int inline_key_private(struct parser *p)
{
	if (!(p->mode & 044) || p->key_mode_reported)
		return 0;
	p->key_mode_reported = true;
	return cfg_kerr(p, "%s is mode %04o: group or others can read this key (chmod 600 it, "
			"or move the key to %s-file)", p->file, (unsigned)p->mode, p->key);
}

static int key_tun_key(struct parser *p, const char *val, struct cfg_sa_key *k)
{
	if (key_once(p, k, false, false))
		return -1;
	inline_key_private(p);
	return set_key_hex(p, k, false, val, "");
}

static int key_tun_auth_key(struct parser *p, const char *val, struct cfg_sa_key *k)
{
	if (key_once(p, k, true, false))
		return -1;
	inline_key_private(p);
	return set_key_hex(p, k, true, val, "");
}

static int key_tun_out_auth_key(struct parser *p, const char *val)
{
	return key_tun_auth_key(p, val, &CUR_TUN(p)->out);
}

static int key_tun_in_auth_key(struct parser *p, const char *val)
{
	return key_tun_auth_key(p, val, &CUR_TUN(p)->in);
}

static int key_tun_out_key(struct parser *p, const char *val)
{
	return key_tun_key(p, val, &CUR_TUN(p)->out);
}

static int key_tun_in_key(struct parser *p, const char *val)
{
	return key_tun_key(p, val, &CUR_TUN(p)->in);
}

/*
 * The file must be a private regular file of root or of us.  The checks are
 * on the descriptor that is read (fstat), not on the path: a symbolic link is
 * judged by the file it leads to, and nothing can be swapped in between.
 */
static int check_key_file(int fd, const char *path, char *err, size_t elen)
{
	struct stat st;

	if (fstat(fd, &st))
		return snprintf(err, elen, "%s: %s", path, strerror(errno)), -1;
	if (!S_ISREG(st.st_mode))
		return snprintf(err, elen, "%s: not a regular file", path), -1;
	if (st.st_mode & 077)
		return snprintf(err, elen, "%s: mode %04o lets group or others access the key "
				"(chmod 600 it)", path, (unsigned)(st.st_mode & 07777)), -1;
	if (st.st_uid != 0 && st.st_uid != geteuid())
		return snprintf(err, elen, "%s: owned by uid %u, not by root or uid %u", path,
				(unsigned)st.st_uid, (unsigned)geteuid()), -1;
	return 0;
}

/* Trim the file's text to its single line; -1 if there is more than one. */
static int one_line(char *s)
{
	char *e = s + strlen(s);

	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return strpbrk(s, "\r\n") ? -1 : 0;
}

/*
 * Open a secret file and check it (check_key_file): the descriptor, or -1
 * with the reason in err.  nofollow: a symbolic link as the last component
 * is refused rather than judged by its target.  Also for dpvpnd when it
 * reads a private key again (config_pki.c), without a parser.
 */
int cfg_open_secret(const char *path, bool nofollow, char *err, size_t elen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK |
		      (nofollow ? O_NOFOLLOW : 0));

	if (fd < 0 && nofollow && errno == ELOOP)
		return snprintf(err, elen, "%s: a symbolic link: refused (name the file itself)",
				path), -1;
	if (fd < 0)
		return snprintf(err, elen, "%s: %s", path, strerror(errno)), -1;
	if (check_key_file(fd, path, err, elen)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* cfg_open_secret, the error reported at the current line. */
int cfg_open_key_file(struct parser *p, const char *path, bool nofollow)
{
	char err[4096 + 128];
	int fd = cfg_open_secret(path, nofollow, err, sizeof(err));

	if (fd < 0)
		cfg_kerr(p, "%s", err);
	return fd;
}

static int load_key_file(struct parser *p, struct cfg_sa_key *k, bool auth, const char *path)
{
	char buf[KEYFILE_MAX + 1], what[CFG_PATH_MAX + 4096];
	char *s = buf;
	ssize_t n;
	int fd, rc = -1;

	fd = cfg_open_key_file(p, path, false);
	if (fd < 0)
		return -1;
	n = cfg_read_small(fd, buf, KEYFILE_MAX + 1);
	if (n < 0 || n > KEYFILE_MAX) {
		cfg_kerr(p, "%s: %s", path, n < 0 ? strerror(errno) : "too big for a key file");
		goto out;
	}
	buf[n] = '\0';
	while (isspace((unsigned char)*s))
		s++;
	if (one_line(s)) {
		cfg_kerr(p, "%s: expected the key as hex on one line", path);
		goto out;
	}
	snprintf(what, sizeof(what), "%s: ", path);
	rc = set_key_hex(p, k, auth, s, what);
out:
	explicit_bzero(buf, sizeof(buf));
	close(fd);
	return rc;
}

/* A key file's path: absolute, or relative to the config's directory. */
int cfg_key_path(struct parser *p, const char *val, char path[4096])
{
	if (!*val)
		return cfg_kerr(p, "empty path");
	if (val[0] == '/')
		snprintf(path, 4096, "%s", val);
	else if (snprintf(path, 4096, "%s/%s", p->dir, val) >= 4096)
		return cfg_kerr(p, "path too long");
	return 0;
}

static int key_tun_key_file(struct parser *p, const char *val, struct cfg_sa_key *k,
			    bool auth)
{
	char path[4096];

	if (key_once(p, k, auth, true) || cfg_key_path(p, val, path))
		return -1;
	return load_key_file(p, k, auth, path);
}

static int key_tun_out_key_file(struct parser *p, const char *val)
{
	return key_tun_key_file(p, val, &CUR_TUN(p)->out, false);
}

static int key_tun_in_key_file(struct parser *p, const char *val)
{
	return key_tun_key_file(p, val, &CUR_TUN(p)->in, false);
}

static int key_tun_out_auth_key_file(struct parser *p, const char *val)
{
	return key_tun_key_file(p, val, &CUR_TUN(p)->out, true);
}

static int key_tun_in_auth_key_file(struct parser *p, const char *val)
{
	return key_tun_key_file(p, val, &CUR_TUN(p)->in, true);
}

static int key_tun_replay(struct parser *p, const char *val)
{
	uint64_t v;

	/* 0 turns anti-replay off (RFC 4303 3.4.3 lets a receiver do so):
	 * for benchmarks that replay a capture, never for a real peer. */
	if (cfg_parse_uint(val, false, UINT32_MAX, &v) || (v != 0 && (v < CFG_REPLAY_WIN_MIN ||
	    v > DPVPN_REPLAY_WIN_MAX || (v & (v - 1)))))
		return cfg_kerr(p, "expected 0 (off) or a power of two from %d to %d, got '%s'",
				CFG_REPLAY_WIN_MIN, DPVPN_REPLAY_WIN_MAX, val);
	CUR_TUN(p)->replay_window = (uint32_t)v;
	return 0;
}

static int key_tun_df(struct parser *p, const char *val)
{
	static const char *const modes[] = {
		[DPVPN_DF_COPY] = "copy", [DPVPN_DF_SET] = "set", [DPVPN_DF_CLEAR] = "clear",
	};

	for (uint8_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		if (!strcmp(val, modes[i])) {
			CUR_TUN(p)->df = i;
			return 0;
		}
	}
	return cfg_kerr(p, "expected copy, set or clear, got '%s'", val);
}

static int life(struct parser *p, const char *val, uint64_t max, uint64_t *out)
{
	uint64_t v;

	if (cfg_parse_uint(val, false, max, &v))
		return cfg_kerr(p, "expected a number 0..%llu (0: no limit), got '%s'",
				(unsigned long long)max, val);
	*out = v;
	return 0;
}

static int life32(struct parser *p, const char *val, uint32_t *out)
{
	uint64_t v = 0;
	int rc = life(p, val, UINT32_MAX, &v);

	*out = (uint32_t)v;
	return rc;
}

static int key_soft_bytes(struct parser *p, const char *v)
{
	return life(p, v, UINT64_MAX, &CUR_TUN(p)->life_bytes[0]);
}

static int key_hard_bytes(struct parser *p, const char *v)
{
	return life(p, v, UINT64_MAX, &CUR_TUN(p)->life_bytes[1]);
}

static int key_soft_packets(struct parser *p, const char *v)
{
	return life(p, v, UINT64_MAX, &CUR_TUN(p)->life_packets[0]);
}

static int key_hard_packets(struct parser *p, const char *v)
{
	return life(p, v, UINT64_MAX, &CUR_TUN(p)->life_packets[1]);
}

static int key_soft_seconds(struct parser *p, const char *v)
{
	return life32(p, v, &CUR_TUN(p)->life_seconds[0]);
}

static int key_hard_seconds(struct parser *p, const char *v)
{
	return life32(p, v, &CUR_TUN(p)->life_seconds[1]);
}

static int key_tun_esn(struct parser *p, const char *val)
{
	if (strcmp(val, "yes") && strcmp(val, "no"))
		return cfg_kerr(p, "expected yes or no, got '%s'", val);
	CUR_TUN(p)->esn = !strcmp(val, "yes");
	return 0;
}

static int key_tun_seq_start(struct parser *p, const char *val)
{
	uint64_t v;

	if (cfg_parse_uint(val, true, UINT64_MAX - 1, &v))
		return cfg_kerr(p, "expected a sequence number (decimal or 0x hex), got '%s'",
				val);
	CUR_TUN(p)->out_seq_start = v;
	CUR_TUN(p)->seq_line = p->line;
	return 0;
}

static int key_tun_mtu(struct parser *p, const char *val)
{
	uint64_t v;

	if (cfg_parse_uint(val, false, 9000, &v) || v < DPVPN_MTU_MIN)
		return cfg_kerr(p, "expected a tunnel MTU of %d..9000 bytes, got '%s'",
				DPVPN_MTU_MIN, val);
	CUR_TUN(p)->mtu = (uint16_t)v;
	return 0;
}

static int key_tun_mss(struct parser *p, const char *val)
{
	uint64_t v;

	if (!strcmp(val, "auto")) {
		CUR_TUN(p)->mss = 0;
		return 0;
	}
	if (!strcmp(val, "off")) {
		CUR_TUN(p)->mss = DPVPN_MSS_OFF;
		return 0;
	}
	if (cfg_parse_uint(val, false, 65535, &v) || v < 88 || v > 8960)
		return cfg_kerr(p, "expected auto, off or an MSS of 88..8960, got '%s'", val);
	CUR_TUN(p)->mss = (uint16_t)v;
	return 0;
}

static int key_tun_fragment(struct parser *p, const char *val)
{
	if (strcmp(val, "inner") && strcmp(val, "outer"))
		return cfg_kerr(p, "expected inner (before encryption, RFC 4459) or outer, "
				"got '%s'", val);
	CUR_TUN(p)->frag_outer = !strcmp(val, "outer");
	CUR_TUN(p)->frag_line = p->line;
	return 0;
}

static int key_tun_encap(struct parser *p, const char *val)
{
	if (strcmp(val, "esp") && strcmp(val, "udp"))
		return cfg_kerr(p, "expected esp or udp, got '%s'", val);
	CUR_TUN(p)->udp = !strcmp(val, "udp");
	return 0;
}

static int tun_port(struct parser *p, const char *val, uint16_t *port)
{
	uint64_t v;

	if (cfg_parse_uint(val, false, 65535, &v) || v == 0)
		return cfg_kerr(p, "expected a UDP port 1..65535, got '%s'", val);
	*port = (uint16_t)v;
	CUR_TUN(p)->port_line = p->line;
	return 0;
}

static int key_tun_local_ports(struct parser *p, const char *val)
{
	uint64_t v;
	uint8_t log2 = 0;

	if (cfg_parse_uint(val, false, 256, &v) || v == 0 || (v & (v - 1)))
		return cfg_kerr(p, "expected a power of two from 1 to 256, got '%s'", val);
	while ((1u << log2) < v)
		log2++;
	CUR_TUN(p)->udp_spread_log2 = log2;
	CUR_TUN(p)->port_line = p->line;
	return 0;
}

static int key_tun_local_port(struct parser *p, const char *val)
{
	return tun_port(p, val, &CUR_TUN(p)->udp_local);
}

static int key_tun_remote_port(struct parser *p, const char *val)
{
	return tun_port(p, val, &CUR_TUN(p)->udp_remote);
}

/* mode = policy (default) | route: a route-based tunnel (doc/route-based.md). */
static int key_tun_mode(struct parser *p, const char *val)
{
	CUR_TUN(p)->mode_line = p->line;
	if (!strcmp(val, "policy") || !strcmp(val, "route")) {
		CUR_TUN(p)->route = !strcmp(val, "route");
		return 0;
	}
	return cfg_kerr(p, "expected policy or route, got '%s'", val);
}

/* rpf = off | loose (default) | strict: what a route-based tunnel decrypts. */
static int key_tun_rpf(struct parser *p, const char *val)
{
	static const char *const names[] = { "off", "loose", "strict" };

	CUR_TUN(p)->rpf_line = p->line;
	for (uint8_t i = 0; i < 3; i++)
		if (!strcmp(val, names[i])) {
			CUR_TUN(p)->rpf = i;
			return 0;
		}
	return cfg_kerr(p, "expected off, loose or strict, got '%s'", val);
}

/*
 * host-access = yes | no (default no, as strongSwan's hostaccess): decrypted
 * packets for the gateway's own addresses go to the host (the owning port's
 * twin) rather than being answered (pings) or dropped to-self.  Checked at
 * the end (check_host): policy tunnels only, a port with a twin.
 */
static int key_tun_host_access(struct parser *p, const char *val)
{
	CUR_TUN(p)->host_access_line = p->line;
	if (strcmp(val, "yes") && strcmp(val, "no"))
		return cfg_kerr(p, "expected yes or no, got '%s'", val);
	CUR_TUN(p)->host_access = !strcmp(val, "yes");
	return 0;
}

/*
 * host-interface = NAME (mode = route): the tunnel's Linux twin, a TUN
 * device whose routes a routing daemon (FRR) sets and dpvpnd mirrors
 * (deploy/NEXT-DESIGN.md C.1).  Unique across ports and tunnels: checked at
 * the end (check_host).
 */
static int key_tun_host(struct parser *p, const char *val)
{
	struct cfg_tunnel *t = CUR_TUN(p);

	_Static_assert(sizeof(t->host_iface) == 16, "cfg_valid_ifname's limit");
	if (!cfg_valid_ifname(val))
		return cfg_kerr(p, "expected a Linux interface name (1..15 bytes, not '.' or "
				"'..', none of / : , = or blanks), got '%s'", val);
	strcpy(t->host_iface, val);
	t->host_line = p->line;
	return 0;
}

/*
 * inside-address = A/len[, A6/len6]: the twin's own addresses (a BGP
 * session's end, 169.254.10.1/30 as AWS and Azure number them), at most one
 * a family; the host bits are the address.
 */
static int key_tun_inside(struct parser *p, const char *val)
{
	struct cfg_tunnel *t = CUR_TUN(p);
	char *list = strdup(val), *item, *next;
	int rc = 0;

	if (!list)
		return cfg_kerr(p, "out of memory");
	t->inside_line = p->line;
	for (item = list; item; item = next) {
		struct cfg_prefix pfx, *slot;

		next = strchr(item, ',');
		if (next)
			*next++ = '\0';
		item = cfg_trim(item);
		if (cfg_parse_cidr(item, &pfx) || pfx.len == 0 || cfg_addr_is_zero(&pfx.addr)) {
			rc = cfg_kerr(p, "expected an IPv4 address with prefix length 1..32 "
				      "(169.254.10.1/30) or an IPv6 address with prefix length "
				      "1..128 (fd00:10::1/126), got '%s'", item);
			continue;
		}
		slot = pfx.addr.family == DPVPN_AF_INET ? &t->inside4 : &t->inside6;
		if (slot->addr.family) {
			rc = cfg_kerr(p, "two %s addresses: give at most one per family",
				      cfg_family_name(pfx.addr.family));
			continue;
		}
		*slot = pfx;
	}
	free(list);
	return rc;
}

/* host-interface and inside-address: mode = route only, the second needs the first. */
static void finish_twin(struct parser *p, const struct cfg_tunnel *t)
{
	if (t->host_line && !t->route)
		cfg_err_at(p, t->host_line, "[tunnel %s] host-interface: only for mode = route "
			   "(a policy tunnel's traffic is chosen by its selectors, not by the "
			   "host's routes)", t->name);
	if (t->inside_line && !t->host_line)
		cfg_err_at(p, t->inside_line, "[tunnel %s] inside-address: needs host-interface "
			   "(the addresses are the twin's)", t->name);
}

/* mode = route: no selectors of its own, static keys (IKE's comes later). */
static void finish_route_mode(struct parser *p, const struct cfg_tunnel *t)
{
	if (!t->route) {
		if (t->rpf_line)
			cfg_err_at(p, t->rpf_line, "[tunnel %s] rpf: only for mode = route (a "
				   "policy tunnel checks its remote-ts)", t->name);
		return;
	}
	if (t->lts_line)
		cfg_err_at(p, t->lts_line, "[tunnel %s] local-ts: not with mode = route "
			   "(its selectors are 0.0.0.0/0 and ::/0; [routes] choose its traffic)",
			   t->name);
	if (t->rts_line)
		cfg_err_at(p, t->rts_line, "[tunnel %s] remote-ts: not with mode = route "
			   "(its selectors are 0.0.0.0/0 and ::/0; [routes] choose its traffic)",
			   t->name);
	if (t->ike.parent[0] || t->ra.any)
		cfg_err_at(p, t->mode_line, "[tunnel %s] mode: route is not for ike-sa or "
			   "remote = %%any tunnels (their CHILD_SAs are chosen by selectors)",
			   t->name);
}

static int open_tunnel(struct parser *p)
{
	struct cfg *c = p->cfg;
	struct cfg_tunnel **t, *tun;

	tun = calloc(1, sizeof(*tun));
	t = realloc(c->tunnels, (c->n_tunnels + 1) * sizeof(*t));
	if (!tun || !t) {
		free(tun);
		if (t)
			c->tunnels = t;
		return -1;
	}
	c->tunnels = t;
	strcpy(tun->name, p->sect_name);
	tun->line = p->sect_line;
	tun->replay_window = DPVPN_REPLAY_WIN_DEFAULT;
	tun->udp_local = tun->udp_remote = 4500;	/* RFC 3948 */
	tun->rpf = DPVPN_RPF_LOOSE;
	tun->ike.start = 1;
	tun->ike.frag_size = CFG_IKE_FRAG_SIZE;
	tun->ike.dpd_seconds = CFG_DPD_DEFAULT;
	tun->ike.ike_lifetime = CFG_IKE_LIFE_DEFAULT;
	p->idx = c->n_tunnels;
	t[c->n_tunnels++] = tun;
	return 0;
}

/* The keys a tunnel gives must be the ones its cipher takes, at their sizes. */
static void check_key_len(struct parser *p, const struct cfg_tunnel *t,
			  const struct cfg_sa_key *k, const char *dir)
{
	const struct dpvpn_alg_info *a = dpvpn_alg_get(t->alg);
	size_t want;

	if (a == NULL)
		return;	/* no cipher: reported */
	want = (size_t)a->key_len + a->salt_len;
	if (want == 0 && k->key_line)
		cfg_err_at(p, k->key_line, "[tunnel %s] %s-key%s: cipher %s has no encryption key",
			   t->name, dir, k->key_is_file ? "-file" : "", a->name);
	else if (want != 0 && !k->key_line)
		cfg_err_at(p, t->line, "[tunnel %s] missing %s-key or %s-key-file", t->name, dir,
			   dir);
	else if (want != 0 && k->keymat_len && k->keymat_len != want) {
		if (a->salt_len)
			cfg_err_at(p, k->key_line, "[tunnel %s] %s-key%s: expected %zu bytes "
				   "of hex (%u-byte key + %u-byte salt), got %zu", t->name, dir,
				   k->key_is_file ? "-file" : "", want, a->key_len, a->salt_len,
				   k->keymat_len);
		else
			cfg_err_at(p, k->key_line, "[tunnel %s] %s-key%s: expected %zu bytes "
				   "of hex (the %s key), got %zu", t->name, dir,
				   k->key_is_file ? "-file" : "", want, a->name, k->keymat_len);
	}
	want = a->auth_key_len;
	if (want == 0 && k->auth_line)
		cfg_err_at(p, k->auth_line, "[tunnel %s] %s-auth-key%s: cipher %s has no separate "
			   "integrity key", t->name, dir, k->auth_is_file ? "-file" : "", a->name);
	else if (want != 0 && !k->auth_line)
		cfg_err_at(p, t->line, "[tunnel %s] missing %s-auth-key or %s-auth-key-file "
			   "(cipher %s needs a %zu-byte HMAC key)", t->name, dir, dir, a->name,
			   want);
	else if (want != 0 && k->authmat_len && k->authmat_len != want)
		cfg_err_at(p, k->auth_line, "[tunnel %s] %s-auth-key%s: expected %zu bytes of hex "
			   "(the HMAC key of %s), got %zu", t->name, dir,
			   k->auth_is_file ? "-file" : "", want, a->name, k->authmat_len);
}

static void finish_static(struct parser *p, struct cfg_tunnel *t)
{
	check_key_len(p, t, &t->out, "out");
	if (!t->esn && t->out_seq_start > UINT32_MAX)
		cfg_err_at(p, t->seq_line, "[tunnel %s] out-seq-start: %llu needs esn = yes "
			   "(32-bit sequence numbers end at 4294967295)", t->name,
			   (unsigned long long)t->out_seq_start);
	check_key_len(p, t, &t->in, "in");
	if (t->out.spi && t->out.spi == t->in.spi)
		cfg_err_at(p, t->in.spi_line, "[tunnel %s] in-spi: must differ from out-spi "
			   "(both 0x%08x)", t->name, t->in.spi);
}

static void finish_tunnel(struct parser *p)
{
	struct cfg_tunnel *t = CUR_TUN(p);

	cfg_check_keying(p, t);
	cfg_finish_ra(p, t);
	finish_route_mode(p, t);
	finish_twin(p, t);
	if (t->ike.on) {
		cfg_finish_ike(p, t);
	} else {
		/* nothing of IKE's is kept, a PSK read before the keying least of all
		 * (the PSK wiped on its own: gcc's object-size check under ASan takes
		 * &t->ike for its first byte) */
		explicit_bzero(t->ike.psk, sizeof(t->ike.psk));
		memset(&t->ike, 0, sizeof(t->ike));
		if (!p->keying_bad)
			finish_static(p, t);
	}
	/* The outer pair and the inner pair each of one family; 4o6 and 6o4
	 * are fine. */
	cfg_check_family(p, "tunnel", t->name, t->remote_line, "remote", &t->remote, -1, "local",
			 &t->local, -1, "address", "local and remote must be of one family");
	cfg_check_family(p, "tunnel", t->name, t->rts_line, "remote-ts", &t->remote_ts.addr,
			 t->remote_ts.len, "local-ts", &t->local_ts.addr, t->local_ts.len,
			 "prefix", "local-ts and remote-ts must be of one family");
}

/* Not a key that does something: strongSwan's compress, refused saying why
 * (doc/security.md "Non-goals"), where any other unknown key is just unknown. */
static int key_tun_compress(struct parser *p, const char *val)
{
	(void)val;
	return cfg_kerr(p, "not supported: dpvpn never compresses before encrypting (IPComp, "
			"LZO, LZ4): the packet length would tell an attacker about the "
			"plaintext (VORACLE); remove the key (doc/security.md \"Non-goals\")");
}

static const struct key_def tunnel_keys[] = {
	{ "local", key_tun_local, true },
	{ "remote", key_tun_remote, true },
	{ "local-ts", key_tun_lts, true },
	{ "remote-ts", key_tun_rts, true },
	{ "cipher", key_tun_cipher, true },
	{ "out-spi", key_tun_out_spi, true, KEYING_STATIC },
	{ "in-spi", key_tun_in_spi, true, KEYING_STATIC },
	{ "out-key", key_tun_out_key, false, KEYING_STATIC },
	{ "in-key", key_tun_in_key, false, KEYING_STATIC },
	{ "out-key-file", key_tun_out_key_file, false, KEYING_STATIC },
	{ "in-key-file", key_tun_in_key_file, false, KEYING_STATIC },
	{ "out-auth-key", key_tun_out_auth_key, false, KEYING_STATIC },
	{ "in-auth-key", key_tun_in_auth_key, false, KEYING_STATIC },
	{ "out-auth-key-file", key_tun_out_auth_key_file, false, KEYING_STATIC },
	{ "in-auth-key-file", key_tun_in_auth_key_file, false, KEYING_STATIC },
	{ "replay-window", key_tun_replay, false },
	{ "df", key_tun_df, false },
	{ "encap", key_tun_encap, false },
	{ "esn", key_tun_esn, false },
	{ "out-seq-start", key_tun_seq_start, false, KEYING_STATIC },
	{ "mtu", key_tun_mtu, false },
	{ "mss-clamp", key_tun_mss, false },
	{ "fragment", key_tun_fragment, false },
	{ "soft-bytes", key_soft_bytes, false },
	{ "hard-bytes", key_hard_bytes, false },
	{ "soft-packets", key_soft_packets, false },
	{ "hard-packets", key_hard_packets, false },
	{ "soft-seconds", key_soft_seconds, false },
	{ "hard-seconds", key_hard_seconds, false },
	{ "local-port", key_tun_local_port, false },
	{ "local-ports", key_tun_local_ports, false },
	{ "remote-port", key_tun_remote_port, false },
	{ "keying", cfg_key_tun_keying, false },
	{ "psk-file", cfg_key_tun_psk_file, false, KEYING_IKE },	/* auth = psk: checked */
	{ "auth", cfg_key_tun_auth, false, KEYING_IKE },
	{ "cert", cfg_key_tun_cert, false, KEYING_IKE },
	{ "private-key", cfg_key_tun_private_key, false, KEYING_IKE },
	{ "ca", cfg_key_tun_ca, false, KEYING_IKE },
	{ "crl", cfg_key_tun_crl, false, KEYING_IKE },
	{ "local-id", cfg_key_tun_local_id, false, KEYING_IKE },
	{ "remote-id", cfg_key_tun_remote_id, false, KEYING_IKE },
	{ "ike-proposals", cfg_key_tun_ike_props, false, KEYING_IKE },
	{ "esp-proposals", cfg_key_tun_esp_props, false, KEYING_IKE },
	{ "start", cfg_key_tun_start, false, KEYING_IKE },
	{ "dpd", cfg_key_tun_dpd, false, KEYING_IKE },
	{ "fragmentation", cfg_key_tun_frag, false, KEYING_IKE },
	{ "initial-contact", cfg_key_tun_initial_contact, false, KEYING_IKE },
	{ "fragment-size", cfg_key_tun_frag_size, false, KEYING_IKE },
	{ "ike-lifetime", cfg_key_tun_ike_life, false, KEYING_IKE },
	{ "ike-sa", cfg_key_tun_ike_sa, false, KEYING_IKE },
	{ "pool", cfg_key_tun_pool, false, KEYING_IKE },
	{ "dns", cfg_key_tun_dns, false, KEYING_IKE },
	{ "virtual-ip", cfg_key_tun_virtual_ip, false, KEYING_IKE },
	{ "compress", key_tun_compress, false },	/* refused, see key_tun_compress */
	{ "mode", key_tun_mode, false },
	{ "rpf", key_tun_rpf, false },
	{ "host-interface", key_tun_host, false },
	{ "inside-address", key_tun_inside, false },
	{ "host-access", key_tun_host_access, false },
};

const struct sect_def cfg_sect_tunnel = {
	"tunnel", SECT_TUNNEL, true, KEYS(tunnel_keys), open_tunnel, finish_tunnel
};

_Static_assert(sizeof(tunnel_keys) / sizeof(tunnel_keys[0]) <= 64, "grow parser.seen");
