/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * config_value.c - the config parser's value parsers: numbers, addresses,
 * prefixes, MAC addresses, key hex and section names.  They return 0 on
 * success and -1 on a malformed value, and leave the message to the key's
 * handler; cfg_parse_net, which checks a prefix's host bits, reports its own.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "config_parse.h"

int cfg_parse_uint(const char *s, bool allow_hex, uint64_t max, uint64_t *out)
{
	unsigned base = 10;
	uint64_t v = 0;

	if (allow_hex && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s += 2;
	}
	if (!*s)
		return -1;
	for (; *s; s++) {
		unsigned d;

		if (isdigit((unsigned char)*s))
			d = *s - '0';
		else if (base == 16 && isxdigit((unsigned char)*s))
			d = tolower((unsigned char)*s) - 'a' + 10;
		else
			return -1;
		if (v > (max - d) / base)
			return -1;
		v = v * base + d;
	}
	*out = v;
	return 0;
}

/* An IPv4 or IPv6 address; *a is left alone unless it parses. */
int cfg_parse_addr(const char *s, struct cfg_addr *a)
{
	struct in_addr a4;
	uint8_t a6[16];

	/* every byte set, padding too: reloads compare configs with memcmp */
	if (inet_pton(AF_INET, s, &a4) == 1) {
		memset(a, 0, sizeof(*a));
		a->family = DPVPN_AF_INET;
		a->v4 = ntohl(a4.s_addr);
		return 0;
	}
	if (inet_pton(AF_INET6, s, a6) == 1) {
		memset(a, 0, sizeof(*a));
		a->family = DPVPN_AF_INET6;
		memcpy(a->v6, a6, sizeof(a6));
		return 0;
	}
	return -1;
}

/* 0.0.0.0 or :: */
bool cfg_addr_is_zero(const struct cfg_addr *a)
{
	static const uint8_t zero[16];

	return a->family == DPVPN_AF_INET ? a->v4 == 0 : !memcmp(a->v6, zero, sizeof(zero));
}

bool cfg_addr_equal(const struct cfg_addr *a, const struct cfg_addr *b)
{
	if (a->family != b->family)
		return false;
	if (a->family == DPVPN_AF_INET)
		return a->v4 == b->v4;
	return a->family != DPVPN_AF_INET6 || !memcmp(a->v6, b->v6, sizeof(a->v6));
}

/* "ADDR/LEN", LEN up to 32 or 128 by the address's family. */
int cfg_parse_cidr(const char *s, struct cfg_prefix *pfx)
{
	char buf[INET6_ADDRSTRLEN];
	const char *slash = strchr(s, '/');
	struct cfg_addr a;
	uint64_t len;

	if (!slash || (size_t)(slash - s) >= sizeof(buf))
		return -1;
	memcpy(buf, s, slash - s);
	buf[slash - s] = '\0';
	if (cfg_parse_addr(buf, &a) ||
	    cfg_parse_uint(slash + 1, false, a.family == DPVPN_AF_INET ? 32 : 128, &len))
		return -1;
	memset(pfx, 0, sizeof(*pfx));	/* padding too (memcmp) */
	memcpy(&pfx->addr, &a, sizeof(a));
	pfx->len = (uint8_t)len;
	return 0;
}

uint32_t cfg_prefix_mask(uint8_t len)
{
	return len ? ~(uint32_t)0 << (32 - len) : 0;
}

/* *net = pfx with its host bits cleared; true if pfx had any set. */
bool cfg_host_bits(const struct cfg_prefix *pfx, struct cfg_prefix *net)
{
	*net = *pfx;
	if (pfx->addr.family == DPVPN_AF_INET) {
		net->addr.v4 &= cfg_prefix_mask(pfx->len);
		return net->addr.v4 != pfx->addr.v4;
	}
	for (unsigned int i = 0; i < sizeof(net->addr.v6); i++) {
		unsigned int bits = pfx->len > i * 8 ? pfx->len - i * 8 : 0;

		if (bits < 8)
			net->addr.v6[i] &= (uint8_t)(0xff00 >> bits);
	}
	return memcmp(net->addr.v6, pfx->addr.v6, sizeof(net->addr.v6)) != 0;
}

const char *cfg_fmt_addr(const struct cfg_addr *a, char buf[INET6_ADDRSTRLEN])
{
	struct in_addr a4 = { .s_addr = htonl(a->v4) };

	if (a->family == DPVPN_AF_INET6)
		return inet_ntop(AF_INET6, a->v6, buf, INET6_ADDRSTRLEN);
	return inet_ntop(AF_INET, &a4, buf, INET6_ADDRSTRLEN);
}

const char *cfg_family_name(uint8_t family)
{
	return family == DPVPN_AF_INET6 ? "IPv6" : "IPv4";
}

int cfg_parse_mac(const char *s, uint8_t mac[6])
{
	unsigned b[6];
	int n = 0;

	if (strlen(s) != 17 ||
	    sscanf(s, "%2x:%2x:%2x:%2x:%2x:%2x%n", &b[0], &b[1], &b[2], &b[3], &b[4],
		   &b[5], &n) != 6 || n != 17)
		return -1;
	for (int i = 0; i < 6; i++) {
		if (!isxdigit((unsigned char)s[i * 3]) || !isxdigit((unsigned char)s[i * 3 + 1]))
			return -1;
		mac[i] = (uint8_t)b[i];
	}
	return 0;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = (char)tolower((unsigned char)c);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/*
 * Decode key hex ("0x" optional) into out[cap]; *n is the number of bytes the
 * text holds even beyond cap, so the length error can say what it got.
 * Messages never quote the text.
 */
int cfg_decode_hex(const char *s, uint8_t *out, size_t cap, size_t *n,
		   char *why, size_t why_len)
{
	size_t i, digits;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	digits = strlen(s);
	for (i = 0; i < digits; i++) {
		if (hexval(s[i]) < 0) {
			snprintf(why, why_len, "not a hex digit at position %zu", i + 1);
			return -1;
		}
	}
	if (digits == 0 || digits % 2) {
		snprintf(why, why_len, "expected an even, nonzero number of hex digits, got %zu",
			 digits);
		return -1;
	}
	*n = digits / 2;
	for (i = 0; i < *n && i < cap; i++)
		out[i] = (uint8_t)(hexval(s[2 * i]) << 4 | hexval(s[2 * i + 1]));
	return 0;
}

/*
 * A Linux interface name for a twin: dev_valid_name()'s rules (1..15 bytes,
 * not "." or "..", no '/', ':' or blanks), and no ',' or '=' (DPDK's device
 * arguments carry it).
 */
bool cfg_valid_ifname(const char *s)
{
	size_t len = strlen(s);
	bool ok = len > 0 && len < 16 && strcmp(s, ".") != 0 && strcmp(s, "..") != 0;

	for (size_t i = 0; ok && i < len; i++)
		ok = s[i] > ' ' && s[i] < 0x7f && strchr("/:,=", s[i]) == NULL;
	return ok;
}

bool cfg_valid_name(const char *s)
{
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr("-_.", *s))
			return false;
	return true;
}

/* A network prefix: host bits must be zero, so typos do not go unnoticed.
 * *pfx is left alone unless the prefix is good. */
int cfg_parse_net(struct parser *p, const char *val, struct cfg_prefix *pfx)
{
	char buf[INET6_ADDRSTRLEN];
	struct cfg_prefix in, net;

	if (cfg_parse_cidr(val, &in))
		return cfg_kerr(p, "expected an IPv4 or IPv6 prefix (a.b.c.d/len, x:x::/len), "
				"got '%s'", val);
	if (cfg_host_bits(&in, &net))
		return cfg_kerr(p, "%s has host bits set (did you mean %s/%u?)", val,
				cfg_fmt_addr(&net.addr, buf), net.len);
	memcpy(pfx, &in, sizeof(in));	/* padding too (memcmp) */
	return 0;
}
