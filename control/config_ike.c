/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * config_ike.c - a [tunnel NAME] with keying = ike: its keys (psk-file,
 * local-id, remote-id, ike-proposals, esp-proposals, start, dpd,
 * ike-lifetime), which are part of the tunnel's key table
 * (config_tunnel.c), and the checks at the section's end: no key of the
 * other keying, a cipher IKE can negotiate, the default proposals.  IKEv2 itself is ike_sa.c's.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config_parse.h"
#include "dpvpn_alg.h"
#include "ike_pki.h"

int cfg_key_tun_keying(struct parser *p, const char *val)
{
	struct cfg_ike *ike = &CUR_TUN(p)->ike;

	p->keying_line = p->line;
	if (!strcmp(val, "ike")) {
		ike->on = 1;
		ike->line = p->line;
	} else if (strcmp(val, "static")) {
		/* which keys belong is unknown: finish_tunnel checks neither set */
		p->keying_bad = true;
		return cfg_kerr(p, "expected static or ike, got '%s'", val);
	}
	return 0;
}

/*
 * The whole file is the PSK, less one final newline (echo adds it).  Unlike
 * key files, a symbolic link is refused: the PSK authenticates the peer for
 * every SA to come, so it must be exactly the file the config names.
 * Messages never quote the file's bytes.
 */
int cfg_key_tun_psk_file(struct parser *p, const char *val)
{
	struct cfg_ike *ike = &CUR_TUN(p)->ike;
	uint8_t buf[CFG_PSK_MAX + 2];
	char path[4096];
	ssize_t n;
	int fd;

	ike->psk_line = p->line;
	if (cfg_key_path(p, val, path) || (fd = cfg_open_key_file(p, path, true)) < 0)
		return -1;
	n = cfg_read_small(fd, (char *)buf, sizeof(buf));
	close(fd);
	if (n > 0 && n <= CFG_PSK_MAX + 1 && buf[n - 1] == '\n')
		n--;
	if (n < 0)
		cfg_kerr(p, "%s: %s", path, strerror(errno));
	else if (n == (ssize_t)sizeof(buf))
		cfg_kerr(p, "%s: expected a pre-shared key of %d..%d bytes, got more than %d",
			 path, CFG_PSK_MIN, CFG_PSK_MAX, CFG_PSK_MAX);
	else if (n < CFG_PSK_MIN || n > CFG_PSK_MAX)
		cfg_kerr(p, "%s: expected a pre-shared key of %d..%d bytes, got %zd", path,
			 CFG_PSK_MIN, CFG_PSK_MAX, n);
	else
		memcpy(ike->psk, buf, (size_t)n);
	ike->psk_len = n >= CFG_PSK_MIN && n <= CFG_PSK_MAX ? (size_t)n : 0;
	explicit_bzero(buf, sizeof(buf));
	return ike->psk_len ? 0 : -1;
}

/*
 * fqdn: letters, digits, '-' and '.'; email: one '@' between printable text.
 * A pattern (remote-id with auth = pubkey) may start with '*': "*", "*.a.b",
 * "*@a.b".
 */
static bool id_text_ok(const char *s, bool email, bool pattern)
{
	const char *at = strchr(s, '@');

	if (!*s || strlen(s) > CFG_IKE_ID_MAX)
		return false;
	if (pattern && s[0] == '*' && (s[1] == '\0' || s[1] == (email ? '@' : '.')))
		return s[1] == '\0' || id_text_ok(s + 2, false, false);
	if (email && (!at || at == s || !at[1] || strchr(at + 1, '@')))
		return false;
	for (; *s; s++) {
		if (email ? !isgraph((unsigned char)*s) :
			    !isalnum((unsigned char)*s) && *s != '-' && *s != '.')
			return false;
	}
	return true;
}

/* "TYPE:VALUE" into an IKE identity (RFC 7296 3.5); -1 if malformed. */
static int parse_ike_id(const char *val, uint8_t *type, uint8_t *id, uint8_t *len,
			bool pattern)
{
	const char *v = strchr(val, ':');
	struct cfg_addr a;
	char why[96];
	size_t n;

	if (v == NULL)
		return -1;
	v++;
	if (!strncmp(val, "fqdn:", 5) || !strncmp(val, "email:", 6)) {
		if (!id_text_ok(v, val[0] == 'e', pattern))
			return -1;
		*type = val[0] == 'e' ? 3 : 2;
		*len = (uint8_t)strlen(v);
		memcpy(id, v, *len);
	} else if (!strncmp(val, "dn:", 3)) {
		/* "CN=*" values match anything: patterns only (a DN has no other '*') */
		if (ike_pki_dn_parse(v, id, CFG_IKE_ID_MAX, &n, why, sizeof(why)) ||
		    (!pattern && strchr(v, '*')))
			return -1;
		*type = IKE_ID_DER_ASN1_DN;
		*len = (uint8_t)n;
	} else if (!strncmp(val, "keyid:", 6)) {
		if (cfg_decode_hex(v, id, CFG_IKE_ID_MAX, &n, why, sizeof(why)) || n > 64)
			return -1;
		*type = 11;
		*len = (uint8_t)n;
	} else if (!strncmp(val, "ip:", 3)) {
		if (cfg_parse_addr(v, &a) || cfg_addr_is_zero(&a))
			return -1;
		*type = a.family == DPVPN_AF_INET ? 1 : 5;
		*len = a.family == DPVPN_AF_INET ? 4 : 16;
		if (a.family == DPVPN_AF_INET)
			a.v4 = htonl(a.v4);	/* the ID carries it as on the wire */
		memcpy(id, a.family == DPVPN_AF_INET ? (uint8_t *)&a.v4 : a.v6, *len);
	} else {
		return -1;
	}
	return 0;
}

static int tun_ike_id(struct parser *p, const char *val, uint8_t *type, uint8_t *id,
		      uint8_t *len, bool pattern)
{
	if (parse_ike_id(val, type, id, len, pattern)) {
		*type = 0;
		*len = 0;
		return cfg_kerr(p, "expected fqdn:NAME (letters, digits, '-', '.'), "
				"email:USER@HOST, dn:DN (\"CN=gw, O=Example\", up to %d bytes "
				"as DER), keyid:HEX (1..64 bytes) or ip:ADDRESS%s, got '%s'",
				CFG_IKE_ID_MAX, pattern ? "; remote-id patterns: fqdn:*.NAME, "
				"email:*@HOST, dn:CN=*, O=Example" : "", val);
	}
	return 0;
}

int cfg_key_tun_local_id(struct parser *p, const char *val)
{
	struct cfg_ike *ike = &CUR_TUN(p)->ike;

	return tun_ike_id(p, val, &ike->local_id_type, ike->local_id, &ike->local_id_len, false);
}

int cfg_key_tun_remote_id(struct parser *p, const char *val)
{
	struct cfg_ike *ike = &CUR_TUN(p)->ike;

	if (tun_ike_id(p, val, &ike->remote_id_type, ike->remote_id, &ike->remote_id_len, true))
		return -1;
	ike->remote_id_pattern = strchr(val, '*') != NULL;
	return 0;
}

/* "P1, P2, ...": 1..CFG_IKE_PROPS_MAX proposals, in order of preference (config_prop.c). */
int cfg_key_tun_ike_props(struct parser *p, const char *val)
{
	struct cfg_ike *ike = &CUR_TUN(p)->ike;

	return cfg_parse_props(p, val, false, ike->props, &ike->n_props);
}

/* The same for ESP; a DH group there is the PFS group of CREATE_CHILD_SA. */
int cfg_key_tun_esp_props(struct parser *p, const char *val)
{
	struct cfg_ike *ike = &CUR_TUN(p)->ike;

	return cfg_parse_props(p, val, true, ike->esp, &ike->n_esp);
}

int cfg_key_tun_start(struct parser *p, const char *val)
{
	if (strcmp(val, "yes") && strcmp(val, "no"))
		return cfg_kerr(p, "expected yes (initiate at start) or no (wait for the peer), "
				"got '%s'", val);
	CUR_TUN(p)->ike.start = !strcmp(val, "yes");
	return 0;
}

int cfg_key_tun_dpd(struct parser *p, const char *val)
{
	uint64_t v;

	if (cfg_parse_uint(val, false, CFG_DPD_MAX, &v))
		return cfg_kerr(p, "expected seconds 0..%d (0: off), got '%s'", CFG_DPD_MAX, val);
	CUR_TUN(p)->ike.dpd_seconds = (uint32_t)v;
	return 0;
}

/* RFC 7383 IKE fragmentation: offered, and used when the peer offers it too. */
int cfg_key_tun_frag(struct parser *p, const char *val)
{
	if (strcmp(val, "yes") && strcmp(val, "no"))
		return cfg_kerr(p, "expected yes or no, got '%s'", val);
	CUR_TUN(p)->ike.no_frag = !strcmp(val, "no");
	return 0;
}

/*
 * INITIAL_CONTACT (RFC 7296 2.4): yes (default) sends it when this tunnel has
 * no other IKE SA, and takes the peer's as the end of its older IKE SAs; no
 * does neither (one identity shared by several peers, which must not end
 * each other's), as strongSwan's unique = never.
 */
int cfg_key_tun_initial_contact(struct parser *p, const char *val)
{
	if (strcmp(val, "yes") && strcmp(val, "no"))
		return cfg_kerr(p, "expected yes (a peer that starts again replaces its IKE SAs) "
				"or no (identities shared: ignored), got '%s'", val);
	CUR_TUN(p)->ike.no_initial_contact = !strcmp(val, "no");
	return 0;
}

/* The IP datagram size of one IKE fragment, as strongSwan's charon.fragment_size. */
int cfg_key_tun_frag_size(struct parser *p, const char *val)
{
	uint64_t v;

	if (cfg_parse_uint(val, false, 65535, &v) || v < CFG_IKE_FRAG_MIN)
		return cfg_kerr(p, "expected bytes %d..65535, got '%s'", CFG_IKE_FRAG_MIN, val);
	CUR_TUN(p)->ike.frag_size = (uint16_t)v;
	return 0;
}

int cfg_key_tun_ike_life(struct parser *p, const char *val)
{
	uint64_t v;

	if (cfg_parse_uint(val, false, CFG_IKE_LIFE_MAX, &v) || v < CFG_IKE_LIFE_MIN)
		return cfg_kerr(p, "expected seconds %d..%d, got '%s'", CFG_IKE_LIFE_MIN,
				CFG_IKE_LIFE_MAX, val);
	CUR_TUN(p)->ike.ike_lifetime = (uint32_t)v;
	return 0;
}

/* Line of key NAME in the current section, 0 if it was not given. */
static int seen_line(const struct parser *p, const char *name)
{
	for (size_t i = 0; i < p->def->n_keys; i++)
		if (!strcmp(p->def->keys[i].name, name))
			return p->seen & KEY_BIT(i) ? p->key_line[i] : 0;
	return 0;
}

/* Each key of the other keying, an error at its line. */
void cfg_check_keying(struct parser *p, const struct cfg_tunnel *t)
{
	const struct sect_def *d = p->def;

	for (size_t i = 0; i < d->n_keys; i++) {
		if (!(p->seen & KEY_BIT(i)) || cfg_key_belongs(p, &d->keys[i]))
			continue;
		if (t->ike.on)
			cfg_err_at(p, p->key_line[i], "[tunnel %s] %s: not with keying = ike "
				   "(IKE negotiates SPIs and keys)", t->name, d->keys[i].name);
		else
			cfg_err_at(p, p->key_line[i], "[tunnel %s] %s: only with keying = ike",
				   t->name, d->keys[i].name);
	}
}

/* The ESP transforms ike_sa.c can propose (RFC 7296 3.3.2: ENCR and INTEG ids). */
static bool ike_can_negotiate(uint8_t alg)
{
	return alg == DPVPN_ALG_AES128_GCM || alg == DPVPN_ALG_AES256_GCM ||
	       alg == DPVPN_ALG_AES128_CBC_SHA256 || alg == DPVPN_ALG_AES256_CBC_SHA256;
}

/* The keys of the IKE SA: a tunnel with ike-sa takes its parent's. */
static const char *const inherited[] = {
	"local", "remote", "psk-file", "auth", "cert", "private-key", "ca", "crl", "local-id",
	"remote-id", "ike-proposals", "dpd", "fragmentation", "fragment-size", "ike-lifetime",
	"initial-contact",
	"encap", "local-port", "local-ports", "remote-port", "pool", "dns",
};

int cfg_key_tun_ike_sa(struct parser *p, const char *val)
{
	struct cfg_tunnel *t = CUR_TUN(p);

	if (!val[0] || strlen(val) >= DPVPN_NAME_LEN)
		return cfg_kerr(p, "expected the name of a [tunnel] (1 to %d characters)",
				DPVPN_NAME_LEN - 1);
	memcpy(t->ike.parent, val, strlen(val) + 1);
	t->ike.parent_line = p->line;
	return 0;
}

/* ike-sa: the IKE SA's keys are not this tunnel's to give. */
static void finish_child(struct parser *p, struct cfg_tunnel *t)
{
	for (size_t i = 0; i < sizeof(inherited) / sizeof(inherited[0]); i++) {
		int line = seen_line(p, inherited[i]);

		if (line)
			cfg_err_at(p, line, "[tunnel %s] %s: inherited from tunnel %s (ike-sa)",
				   t->name, inherited[i], t->ike.parent);
	}
	if (t->ra.any)
		cfg_err_at(p, t->ike.parent_line, "[tunnel %s] ike-sa: not with remote = %%any",
			   t->name);
}

/* The parent's IKE settings into child t (its own: selectors, esp, life, start, mtu...). */
static void inherit(struct cfg_tunnel *t, const struct cfg_tunnel *y)
{
	struct cfg_ike own = t->ike;

	t->local = y->local;
	t->remote = y->remote;
	t->udp = y->udp;
	t->udp_local = y->udp_local;
	t->udp_remote = y->udp_remote;
	t->udp_spread_log2 = y->udp_spread_log2;
	t->ike = y->ike;
	t->ike.line = own.line;
	t->ike.psk_line = 0;
	memcpy(t->ike.esp, own.esp, sizeof(own.esp));
	t->ike.n_esp = own.n_esp;
	t->ike.start = own.start;
	memcpy(t->ike.parent, own.parent, sizeof(own.parent));
	t->ike.parent_line = own.parent_line;
	explicit_bzero(&own, sizeof(own));
}

static const struct cfg_tunnel *tunnel_named(const struct cfg *c, const char *name)
{
	for (size_t i = 0; i < c->n_tunnels; i++)
		if (!strcmp(c->tunnels[i]->name, name))
			return c->tunnels[i];
	return NULL;
}

void cfg_check_ike_sa(struct parser *p)
{
	const struct cfg *c = p->cfg;

	for (size_t i = 0; i < c->n_tunnels; i++) {
		struct cfg_tunnel *t = c->tunnels[i];
		const struct cfg_tunnel *y;
		unsigned kids = 1;

		if (!t->ike.on || !t->ike.parent[0])
			continue;
		y = tunnel_named(c, t->ike.parent);
		if (y == t) {
			cfg_err_at(p, t->ike.parent_line, "[tunnel %s] ike-sa: names this tunnel "
				   "itself", t->name);
			continue;
		}
		if (y == NULL || !y->ike.on || y->ike.parent[0] || y->ra.any) {
			cfg_err_at(p, t->ike.parent_line, "[tunnel %s] ike-sa: %s is %s", t->name,
				   t->ike.parent, y == NULL ? "no [tunnel] of this file" :
				   !y->ike.on ? "not keying = ike" : y->ra.any ?
				   "remote = %any (remote access: children later)" :
				   "itself an ike-sa tunnel (one level only)");
			continue;
		}
		for (size_t j = 0; j < i; j++)
			kids += c->tunnels[j]->ike.on &&
				!strcmp(c->tunnels[j]->ike.parent, t->ike.parent);
		if (kids >= CFG_IKE_CHILDREN_MAX)
			cfg_err_at(p, t->ike.parent_line, "[tunnel %s] ike-sa: tunnel %s has "
				   "%d CHILD_SAs already (itself and %d ike-sa tunnels), the most",
				   t->name, t->ike.parent, CFG_IKE_CHILDREN_MAX,
				   CFG_IKE_CHILDREN_MAX - 1);
		inherit(t, y);
	}
}

void cfg_finish_ike(struct parser *p, struct cfg_tunnel *t)
{
	struct cfg_ike *ike = &t->ike;

	if (t->alg && !ike_can_negotiate(t->alg) && ike->n_esp == 0)
		cfg_err_at(p, seen_line(p, "cipher"), "[tunnel %s] cipher: keying = ike "
			   "negotiates aes128-gcm, aes256-gcm, aes128-cbc-sha256 or "
			   "aes256-cbc-sha256, not %s (or use esp-proposals)", t->name,
			   cfg_alg_name(t->alg));
	/* no ike-proposals: strongSwan's default ones (config_prop.c) */
	if (!ike->n_props)
		cfg_default_ike_props(ike->props, &ike->n_props);
	/* neither esp-proposals nor cipher: strongSwan's default ESP ones */
	if (!ike->n_esp && !t->alg)
		cfg_default_esp_props(ike->esp, &ike->n_esp);
	/*
	 * esn = yes: every proposal asks for ESN only (strongSwan's "-esn"); with
	 * esp-proposals, the proposals say it (esn, noesn or both).
	 */
	if (t->esn && seen_line(p, "esp-proposals"))
		cfg_err_at(p, seen_line(p, "esn"), "[tunnel %s] esn: with keying = ike and "
			   "esp-proposals, put esn (or esn-noesn) in the proposals", t->name);
	for (unsigned i = 0; t->esn && i < ike->n_esp; i++)
		ike->esp[i].esn = 2;
	if (ike->parent[0])
		finish_child(p, t);	/* no auth of its own: the parent's */
	else
		cfg_finish_pki(p, t);
	/* static keys given before "keying = ike" were parsed: not kept */
	explicit_bzero(&t->out, sizeof(t->out));
	explicit_bzero(&t->in, sizeof(t->in));
	t->out_seq_start = 0;
	t->seq_line = 0;
}
