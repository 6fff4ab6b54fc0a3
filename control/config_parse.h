/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * config_parse.h - what the files of dpvpnd's config parser share (config.h is
 * the API): the parser's state, the section and key tables' types, and the
 * functions one file of the parser calls in another.  Not for use outside
 * control/config*.c.
 *
 * The parser is split by what it reads:
 *   config.c         the reader: inih driving, section headers, key dispatch,
 *                    errors with file:line, the entry points (cfg_load, ...)
 *   config_value.c   value parsers: numbers, addresses, prefixes, MACs, hex
 *   config_dp.c      [dataplane] and [control]
 *   config_port.c    [port NAME]
 *   config_route.c   [neighbor NAME] (or [neighbour NAME]), [route NAME] and
 *                    [routes] (route = PREFIX via tunnel NAME | via GW port NAME)
 *   config_tunnel.c  [tunnel NAME], its static keys and key files
 *   config_ike.c     [tunnel NAME]'s keying = ike keys and checks
 *   config_ha.c      [ha]: the pair of gateways, its sync channel and virtual
 *                    addresses
 *   config_check.c   checks across sections, once the whole file is read
 */
#ifndef DPVPN_CONFIG_PARSE_H
#define DPVPN_CONFIG_PARSE_H

#include <netinet/in.h>
#include <search.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "config.h"

enum sect_type {
	SECT_NONE,	/* before the first section */
	SECT_BAD,	/* header had an error: its keys are ignored */
	SECT_DATAPLANE,
	SECT_CONTROL,
	SECT_PORT,
	SECT_NEIGH,
	SECT_ROUTE,
	SECT_TUNNEL,
	SECT_ROUTES,
	SECT_HA,
};

/* The parser's state while it reads one file. */
struct parser {
	struct cfg *cfg;
	const char *file;	/* as given, for messages */
	char dir[4096];		/* the file's directory, for key files */
	char *text;		/* the whole file: wiped at the end */
	mode_t mode;		/* the file's permission bits (fstat of what was read) */
	bool key_mode_reported;	/* an inline key in a file others may read: said once */
	size_t text_len, pos;
	int line;
	enum sect_type type;
	const struct sect_def *def;
	char sect_name[DPVPN_NAME_LEN];
	int sect_line;
	size_t idx;		/* entry of the current section */
	uint64_t seen;		/* bit per key index of the current section */
	int key_line[64];	/* line of each key seen (valid where its bit is set) */
	int keying_line;	/* the tunnel's keying, 0 if not given (yet) */
	bool keying_bad;	/* the tunnel's keying value was refused */
	bool port_addr_bad;	/* a port's address was refused: the tunnels' local is not
				 * checked against the ports (no knock-on error) */
	const char *key;	/* key being handled, for messages */
	int seen_dataplane, seen_control, seen_routes, seen_ha;
	struct perror_ent *errs;
	size_t n_errs;
	/* Section names seen, "TYPE:NAME": a hash so that 100k tunnels parse
	 * in linear time (glibc's hsearch_r; the keys are ours to free). */
	struct hsearch_data names;
	bool names_ok;
	char **name_keys;
	size_t n_name_keys;
};

typedef int (*key_fn)(struct parser *p, const char *val);

#define KEY_BIT(i)	(UINT64_C(1) << (i))

/* Which tunnels a key belongs to: keying = static, keying = ike, or both. */
enum keying {
	KEYING_ANY,
	KEYING_STATIC,
	KEYING_IKE,
};

struct key_def {
	const char *name;
	key_fn fn;
	bool required;		/* by the tunnels of its keying (KEYING_ANY: all) */
	enum keying keying;
	bool repeat;		/* may be given more than once ([routes] route) */
};

struct sect_def {
	const char *type;
	enum sect_type id;
	bool named;
	const struct key_def *keys;
	size_t n_keys;
	int (*open)(struct parser *p);
	void (*finish)(struct parser *p);
};

/* A key table, as sect_def's keys and n_keys. */
#define KEYS(k)	k, sizeof(k) / sizeof(k[0])

/* The section kinds: the reader's table (find_section) lists them. */
extern const struct sect_def cfg_sect_dataplane, cfg_sect_control;
extern const struct sect_def cfg_sect_port;
extern const struct sect_def cfg_sect_neighbor, cfg_sect_neighbour, cfg_sect_route;
extern const struct sect_def cfg_sect_routes;
extern const struct sect_def cfg_sect_tunnel;
extern const struct sect_def cfg_sect_ha;

/* The entry of the current section: in array ARR of struct cfg, or the tunnel. */
#define CUR(p, arr)	(&(p)->cfg->arr[(p)->idx])
#define CUR_TUN(p)	((p)->cfg->tunnels[(p)->idx])

/* config.c: errors, collected and sorted by line when the file is done;
 * helpers of the reader that the sections use too. */
/* An error at a line of the file (0: about the whole file). */
__attribute__((format(printf, 3, 4)))
void cfg_err_at(struct parser *p, int line, const char *fmt, ...);
/* The line of key name in the current section, 0 if it was not given. */
int cfg_key_line(const struct parser *p, const char *name);
/* An error about the key being handled, at its line; returns -1. */
__attribute__((format(printf, 2, 3)))
int cfg_kerr(struct parser *p, const char *fmt, ...);
/* s without leading and trailing white space (trailing cut in place). */
char *cfg_trim(char *s);
/* Up to cap bytes of fd (short only at its end); -1 on an error. */
ssize_t cfg_read_small(int fd, char *buf, size_t cap);

/* config_value.c: value parsers, 0 on success, -1 on a malformed value
 * (cfg_parse_net, which takes the parser, reports the error itself). */
int cfg_parse_uint(const char *s, bool allow_hex, uint64_t max, uint64_t *out);
int cfg_parse_addr(const char *s, struct cfg_addr *a);
bool cfg_addr_is_zero(const struct cfg_addr *a);
bool cfg_addr_equal(const struct cfg_addr *a, const struct cfg_addr *b);
int cfg_parse_cidr(const char *s, struct cfg_prefix *pfx);
uint32_t cfg_prefix_mask(uint8_t len);
bool cfg_host_bits(const struct cfg_prefix *pfx, struct cfg_prefix *net);
const char *cfg_fmt_addr(const struct cfg_addr *a, char buf[INET6_ADDRSTRLEN]);
const char *cfg_family_name(uint8_t family);
int cfg_parse_mac(const char *s, uint8_t mac[6]);
int cfg_decode_hex(const char *s, uint8_t *out, size_t cap, size_t *n,
		   char *why, size_t why_len);
bool cfg_valid_name(const char *s);
bool cfg_valid_ifname(const char *s);
int cfg_parse_net(struct parser *p, const char *val, struct cfg_prefix *pfx);

/* config_port.c: a new entry in *arr ([port], [neighbor], [route]), made current. */
int cfg_open_array(struct parser *p, void **arr, size_t *n, size_t size);

/* config_tunnel.c: which keys belong to a tunnel by its keying; key files. */
bool cfg_key_belongs(struct parser *p, const struct key_def *d);
bool cfg_key_required(struct parser *p, const struct key_def *d);
int cfg_key_path(struct parser *p, const char *val, char path[4096]);
int cfg_open_key_file(struct parser *p, const char *path, bool nofollow);
int cfg_open_secret(const char *path, bool nofollow, char *err, size_t elen);

/* config_ike.c: [tunnel NAME] keying = ike, its keys (in the tunnel's key table)
 * and checks. */
int cfg_key_tun_keying(struct parser *p, const char *val);
int cfg_key_tun_psk_file(struct parser *p, const char *val);
int cfg_key_tun_local_id(struct parser *p, const char *val);
int cfg_key_tun_remote_id(struct parser *p, const char *val);
int cfg_key_tun_ike_props(struct parser *p, const char *val);
int cfg_key_tun_esp_props(struct parser *p, const char *val);
/* config_prop.c: proposals in strongSwan's syntax; 0, or -1 with an error at the key. */
int cfg_parse_props(struct parser *p, const char *val, bool esp, struct cfg_prop *out,
		    unsigned *n);
void cfg_default_ike_props(struct cfg_prop *out, unsigned *n);
void cfg_default_esp_props(struct cfg_prop *out, unsigned *n);
int cfg_key_tun_start(struct parser *p, const char *val);
int cfg_key_tun_virtual_ip(struct parser *p, const char *val);
int cfg_key_tun_dpd(struct parser *p, const char *val);
int cfg_key_tun_frag(struct parser *p, const char *val);
int cfg_key_tun_initial_contact(struct parser *p, const char *val);
int cfg_key_tun_frag_size(struct parser *p, const char *val);
int cfg_key_tun_ike_life(struct parser *p, const char *val);
void cfg_check_keying(struct parser *p, const struct cfg_tunnel *t);
void cfg_finish_ike(struct parser *p, struct cfg_tunnel *t);
int cfg_key_tun_ike_sa(struct parser *p, const char *val);
/* After the whole file: each ike-sa names a tunnel that owns an IKE SA, and
 * takes that tunnel's IKE settings. */
void cfg_check_ike_sa(struct parser *p);

/* config_ra.c: remote = %any (1: not %any, an address), pool, dns, checks. */
int cfg_tun_remote_any(struct parser *p, const char *val);
int cfg_key_tun_pool(struct parser *p, const char *val);
int cfg_key_tun_dns(struct parser *p, const char *val);
void cfg_finish_ra(struct parser *p, struct cfg_tunnel *t);

/* config_pki.c: auth = pubkey */
int cfg_key_tun_auth(struct parser *p, const char *val);
int cfg_key_tun_cert(struct parser *p, const char *val);
int cfg_key_tun_private_key(struct parser *p, const char *val);
int cfg_key_tun_ca(struct parser *p, const char *val);
int cfg_key_tun_crl(struct parser *p, const char *val);
void cfg_finish_pki(struct parser *p, struct cfg_tunnel *t);

/* config_check.c: checks that need the whole file, after its last section;
 * and the one-family check of a section's addresses, at the section's end. */
void cfg_check_all(struct parser *p);
/* config_route.c: every route's tunnels exist and are mode = route. */
void cfg_check_route_tunnels(struct parser *p);
/* config_ha.c: [ha]'s virtual addresses are on [port]s, and none a port's own. */
void cfg_check_ha(struct parser *p);
/* An error when two addresses (or prefixes) of a section are of two families. */
void cfg_check_family(struct parser *p, const char *sect, const char *name, int line,
		      const char *key_b, const struct cfg_addr *b, int len_b,
		      const char *key_a, const struct cfg_addr *a, int len_a,
		      const char *what, const char *rule);

#endif
