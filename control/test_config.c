/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_config.c - table-driven tests of the config parser: each case is a
 * config text and the one error it must produce ("LINE: message", after the
 * file name), or NULL when it must parse.  Key files are written next to the
 * config with the mode and owner the case asks for.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"

#ifndef SOURCE_ROOT
#error "SOURCE_ROOT must name the source tree (set by meson)"
#endif

/* Lines 1-9. */
#define PORTS "[port inside]\nid = 0\nrole = inside\naddress = 198.18.1.1/24\n\n" \
	"[port outside]\nid = 1\nrole = outside\naddress = 198.19.0.1/24\n"
/* Lines 10-15 (after PORTS). */
#define TUNX(name, local, cipher) "[tunnel " name "]\nlocal = " local \
	"\nremote = 198.19.0.2\nlocal-ts = 198.18.1.0/24\nremote-ts = 198.18.2.0/24\n" \
	"cipher = " cipher "\n"
#define TUN(name, local) TUNX(name, local, "aes128-gcm")
#define TUN_HEAD TUN("t", "198.19.0.1")
#define TUN256 TUNX("t", "198.19.0.1", "aes256-gcm")
#define KEY16 "00112233445566778899aabbccddeeff"
#define SPIS "out-spi = 0x1001\nin-spi = 0x2001\n"		/* lines 16-17 */
#define KEY20 "0123456789abcdef0123456789abcdef01020304"
#define KEY20B "fedcba9876543210fedcba987654321005060708"
#define KEYS "out-key = 0x" KEY20 "\nin-key = " KEY20B "\n"	/* lines 18-19 */
#define GOOD PORTS TUN_HEAD SPIS KEYS
/* Lines 1-9, both families on both ports. */
#define PORTS46 "[port inside]\nid = 0\nrole = inside\naddress = 198.18.1.1/24, " \
	"2001:db8:1::1/64\n\n[port outside]\nid = 1\nrole = outside\n" \
	"address = 198.19.0.1/24, 2001:db8::1/64\n"
/* Lines 10-15, any addresses. */
#define TUNA(local, remote, lts, rts) "[tunnel t]\nlocal = " local "\nremote = " remote \
	"\nlocal-ts = " lts "\nremote-ts = " rts "\ncipher = aes128-gcm\n"
#define TUN_TS4(local, remote) TUNA(local, remote, "198.18.1.0/24", "198.18.2.0/24")
#define TUN_TS6(local, remote) TUNA(local, remote, "2001:db8:1::/64", "2001:db8:2::/64")
/* keying = ike: lines 16-17 (after PORTS and a tunnel head), the PSK file beside. */
#define IKE "keying = ike\npsk-file = a.psk\n"
#define PSK_TEXT "lab psk: not a secret\n"
#define PSK(mode) { "a.psk", PSK_TEXT, mode, 0 }
#define IKE_GOOD PORTS TUN_HEAD IKE
#define KID(y) "[tunnel k]\nkeying = ike\nlocal-ts = 10.1.0.0/24\nike-sa = " y \
	"\nremote-ts = 10.2.0.0/24\n"
#define COMPRESS_WHY "not supported: dpvpn never compresses before encrypting " \
	"(IPComp, LZO, LZ4): the packet length would tell an attacker about the " \
	"plaintext (VORACLE); remove the key (doc/security.md \"Non-goals\")"
#define NOT_IKE ": not with keying = ike (IKE negotiates SPIs and keys)"
#define ID_ERR_HEAD "expected fqdn:NAME (letters, digits, '-', '.'), email:USER@HOST, " \
	"dn:DN (\"CN=gw, O=Example\", up to 255 bytes as DER), keyid:HEX (1..64 bytes) or " \
	"ip:ADDRESS"
#define ID_ERR ID_ERR_HEAD ", got "
#define RID_ERR ID_ERR_HEAD "; remote-id patterns: fqdn:*.NAME, email:*@HOST, " \
	"dn:CN=*, O=Example, got "
#define PROP_ERR ": not an IKE algorithm dpvpn negotiates (aes128, aes256, aes128gcm16, " \
	"aes256gcm16, sha256, sha384, sha512, prfsha256, prfsha384, prfsha512, modp2048, ecp256, " \
	"ecp384, curve25519)"
#define P128E "aes128gcm16-prfsha256-ecp256"
#define P128X "aes128gcm16-prfsha256-x25519"
#define P256E "aes256gcm16-prfsha256-ecp256"
#define P256X "aes256gcm16-prfsha256-x25519"
#define KEY64 KEY16 KEY16 KEY16 KEY16
#define PSK_LEN_ERR ": expected a pre-shared key of 16..128 bytes, got "
/* 128 bytes */
#define PSK128 "0123456789abcdeffedcba98765432100123456789abcdeffedcba9876543210" \
	"0123456789abcdeffedcba98765432100123456789abcdeffedcba9876543210"
#define PORT_ERR "expected an IPv4 address with prefix length 1..32 (198.18.1.1/24) or " \
	"an IPv6 address with prefix length 1..128 (2001:db8:1::1/64)"

/* Lines 10-18 (after PORTS): a route-based tunnel with static keys. */
#define RTUN(name, o, i) "[tunnel " name "]\nmode = route\nlocal = 198.19.0.1\n" \
	"remote = 198.19.0.2\ncipher = aes128-gcm\nout-spi = " o "\nin-spi = " i "\n" KEYS
#define RGOOD PORTS RTUN("r1", "0x1001", "0x2001")
#define ROUTE_ONLY ": not with mode = route (its selectors are 0.0.0.0/0 and ::/0; [routes] " \
	"choose its traffic)"

/* [ha]: lines 20-23 after GOOD (local 21, peer 22, sync-key 23); 24 on: more.
 * The sync key's hex is what assert_no_key_text looks for. */
#define HA_KEY_HEX "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define HA_KEY(mode) { "sync.key", HA_KEY_HEX "\n", mode, 0 }
#define HA_KEY_TEXT(text) { "sync.key", text, 0600, 0 }
#define HA_SECT(local, peer) "[ha]\nlocal = " local "\npeer = " peer "\nsync-key = sync.key\n"
#define HA_HEAD HA_SECT("10.255.0.1", "10.255.0.2")
#define HA_GOOD GOOD HA_HEAD
#define HA_ADDR_ERR "expected ADDRESS[:PORT] (198.18.255.1, 198.18.255.1:4510, " \
	"[2001:db8:ff::1]:4510), got "
#define HA_VIP_ERR "expected PORT ADDRESS/LEN [group NAME] (outside 198.19.0.10/24 group " \
	"dpvpn), got "
#define HA_VIP_ADDR_ERR "expected an IPv4 address with prefix length 1..32 (198.19.0.10/24) " \
	"or an IPv6 address with prefix length 1..128 (2001:db8::10/64), got "
#define HA_MS_ERR "expected milliseconds 20..20000 (and at most dead-ms / 3), got "
#define HA_KEY_LEN_ERR ": expected 64..128 hex digits (a 32..64-byte key), got "

struct keyfile {
	const char *name;
	const char *text;
	mode_t mode;
	uid_t uid;
};

struct tcase {
	const char *name;
	const char *text;
	const char *error;	/* "LINE: message", NULL: parses */
	struct keyfile kf;
	size_t n_errors;	/* 0: exactly one, the first is checked */
	mode_t conf_mode;	/* the config file's mode; 0: 0600 */
};

static const struct tcase cases[] = {
	{ "good", GOOD, NULL, { 0 } },
	{ "route tunnel", RGOOD "rpf = strict\n[routes]\nroute = 10.9.0.0/16 via tunnel r1\n",
	  NULL, { 0 } },
	{ "route tunnel local-ts", RGOOD "local-ts = 10.0.0.0/8\n",
	  "19: [tunnel r1] local-ts" ROUTE_ONLY, { 0 } },
	{ "route tunnel remote-ts", RGOOD "remote-ts = 10.0.0.0/8\n",
	  "19: [tunnel r1] remote-ts" ROUTE_ONLY, { 0 } },
	{ "route tunnel rpf word", RGOOD "rpf = sideways\n",
	  "19: [tunnel r1] rpf: expected off, loose or strict, got 'sideways'", { 0 } },
	{ "rpf of a policy tunnel", GOOD "rpf = strict\n",
	  "20: [tunnel t] rpf: only for mode = route (a policy tunnel checks its remote-ts)",
	  { 0 } },
	{ "mode word", GOOD "mode = bridge\n",
	  "20: [tunnel t] mode: expected policy or route, got 'bridge'", { 0 } },
	{ "route mode with ike", PORTS "[tunnel r]\nmode = route\nlocal = 198.19.0.1\n"
	  "remote = 198.19.0.2\n" IKE, NULL, PSK(0600) },
	{ "route mode with ike-sa", IKE_GOOD "[tunnel k]\nkeying = ike\nike-sa = t\n"
	  "mode = route\n", "21: [tunnel k] mode: route is not for ike-sa or remote = %any "
	  "tunnels (their CHILD_SAs are chosen by selectors)", PSK(0600) },
	{ "route to a policy tunnel", GOOD "[routes]\nroute = 10.9.0.0/16 via tunnel t\n",
	  "21: [routes] route: tunnel t is not a route-based tunnel (mode = route): a policy "
	  "tunnel's traffic is chosen by its local-ts and remote-ts", { 0 } },
	{ "route to no tunnel", RGOOD "[routes]\nroute = 10.9.0.0/16 via tunnel nope\n",
	  "20: [routes] route: no [tunnel nope]", { 0 } },
	{ "routes syntax", RGOOD "[routes]\nroute = 10.9.0.0/16 to r1\n",
	  "20: [routes] route: expected 'PREFIX via tunnel NAME' or 'PREFIX via GATEWAY port "
	  "NAME', got '10.9.0.0/16 to r1'", { 0 } },
	{ "routes port twice", RGOOD "[routes]\nroute = 10.9.0.0/16 via 198.19.0.9 port outside\n"
	  "route = 10.9.0.0/16 via tunnel r1\n", "21: [routes] route: 10.9.0.0/16: already "
	  "routed at line 20 (only tunnels can share a prefix, ECMP)", { 0 } },
	{ "routes tunnel twice", RGOOD "[routes]\nroute = 10.9.0.0/16 via tunnel r1\n"
	  "route = 10.9.0.0/16 via tunnel r1\n",
	  "21: [routes] route: tunnel r1 named twice for one prefix", { 0 } },
	{ "routes gateway family", RGOOD "[routes]\nroute = 10.9.0.0/16 via 2001:db8::9 port "
	  "outside\n", "20: [routes] route: gateway 2001:db8::9 is not of 10.9.0.0/16's family",
	  { 0 } },
	{ "routes no port", RGOOD "[routes]\nroute = 10.9.0.0/16 via 198.19.0.9 port nope\n",
	  "20: [routes] route: no [port] named or numbered 'nope'", { 0 } },
	{ "routes twice", RGOOD "[routes]\n[routes]\n", "20: duplicate section [routes]",
	  { 0 } },
	{ "route section tunnel and port", RGOOD "[route x]\ndst = 10.9.0.0/16\nport = 1\n"
	  "tunnel = r1\n", "22: [route x] tunnel: a route goes into tunnels or out a port "
	  "(port, via), not both", { 0 } },
	{ "route section neither", RGOOD "[route x]\ndst = 10.9.0.0/16\n",
	  "19: [route x] missing required key 'port' (or tunnel)", { 0 } },
	{ "unknown key", GOOD "mtux = 1400\n", "20: [tunnel t] mtux: unknown key; did you mean "
	  "mtu?", { 0 } },
	/* [ops] 27.4: the key meant, strongSwan's name or a typo's closest */
	{ "unknown key alias", GOOD "rekey-time = 3600\n", "20: [tunnel t] rekey-time: unknown "
	  "key; did you mean soft-seconds (the CHILD_SA's rekey) or ike-lifetime (the IKE "
	  "SA's)?", { 0 } },
	{ "unknown key typo", GOOD "sof-seconds = 3600\n", "20: [tunnel t] sof-seconds: unknown "
	  "key; did you mean soft-seconds?", { 0 } },
	{ "unknown key far", GOOD "zzzzzzzz = 1\n", "20: [tunnel t] zzzzzzzz: unknown key "
	  "(doc/dpvpn.conf.5 lists the keys of [tunnel])", { 0 } },
	/* dpvpn does not compress, on purpose (doc/security.md "Non-goals"): the key
	 * strongSwan has is refused, saying why, not as just "unknown key". */
	{ "compress", GOOD "compress = yes\n", "20: [tunnel t] compress: " COMPRESS_WHY, { 0 } },
	{ "compress ike", IKE_GOOD "compress = no\n", "18: [tunnel t] compress: " COMPRESS_WHY,
	  PSK(0600) },
	{ "port mtu", "[port a]\nid = 0\nrole = inside\naddress = 198.18.1.1/24\nmtu = 9000\n",
	  NULL, { 0 } },
	{ "port mtu too big", "[port a]\nid = 0\nrole = inside\naddress = 198.18.1.1/24\n"
	  "mtu = 9601\n", "5: [port a] mtu: expected an MTU of 576..9600 bytes, got '9601'",
	  { 0 } },
	{ "mtu ok", GOOD "mtu = 1400\nmss-clamp = 1300\nfragment = outer\n", NULL, { 0 } },
	{ "mtu too small", GOOD "mtu = 500\n",
	  "20: [tunnel t] mtu: expected a tunnel MTU of 576..9000 bytes, got '500'", { 0 } },
	{ "mss word", GOOD "mss-clamp = small\n",
	  "20: [tunnel t] mss-clamp: expected auto, off or an MSS of 88..8960, got 'small'",
	  { 0 } },
	{ "fragment word", GOOD "fragment = both\n",
	  "20: [tunnel t] fragment: expected inner (before encryption, RFC 4459) or outer, "
	  "got 'both'", { 0 } },
	{ "unknown section", PORTS "[bridge br0]\n", "10: unknown section type 'bridge' "
	  "(expected dataplane, control, port, neighbor (or neighbour), route, routes, tunnel "
	  "or ha)", { 0 } },
	{ "bad cidr", "[port a]\nid = 0\nrole = inside\naddress = 198.18.1.300/24\n",
	  "4: [port a] address: " PORT_ERR ", got '198.18.1.300/24'", { 0 } },
	/* [ops] 27.4: the bad address alone, not also "local: ... is not the address of an
	 * outside port" for the tunnel that uses it */
	{ "bad outside cidr, no knock-on", "[port inside]\nid = 0\nrole = inside\n"
	  "address = 198.18.1.1/24\n\n[port outside]\nid = 1\nrole = outside\n"
	  "address = 198.19.0.300/24\n" TUN_HEAD SPIS KEYS,
	  "9: [port outside] address: " PORT_ERR ", got '198.19.0.300/24'", { 0 } },
	{ "cidr without length", "[port a]\nid = 0\nrole = inside\naddress = 198.18.1.1\n",
	  "4: [port a] address: " PORT_ERR ", got '198.18.1.1'", { 0 } },
	{ "bad role", "[port a]\nid = 0\nrole = sideways\naddress = 198.18.1.1/24\n",
	  "3: [port a] role: expected 'inside' or 'outside', got 'sideways'", { 0 } },
	{ "missing required key", "; comment\n[port a]\nid = 0\naddress = 198.18.1.1/24\n",
	  "2: [port a] missing required key 'role'", { 0 } },
	{ "empty section", "[port a]\n\n",
	  "1: [port a] missing required key 'id'", { 0 }, 3 },
	{ "port id range", "[port a]\nid = 1024\nrole = inside\naddress = 198.18.1.1/24\n",
	  "2: [port a] id: expected a DPDK port id 0..1023, got '1024'", { 0 } },
	{ "duplicate port id", PORTS "[port third]\nid = 1\nrole = inside\n"
	  "address = 10.0.0.1/8\n", "11: [port third] id: 1 is already the id of "
	  "[port outside]", { 0 } },
	{ "duplicate key", "[port a]\nid = 0\nid = 1\nrole = inside\naddress = 10.0.0.1/8\n",
	  "3: [port a] id: duplicate key", { 0 } },
	{ "duplicate section", PORTS "[port inside]\n",
	  "10: duplicate section [port inside]", { 0 } },
	{ "no ports", "[dataplane]\nsocket = /tmp/x.sock\n",
	  "2: no [port NAME] section: at least one is needed", { 0 } },
	{ "syntax", PORTS "just words\n", "10: expected 'key = value' or '[type name]'", { 0 } },
	{ "key before section", "id = 0\n" PORTS, "1: 'id' outside of any section", { 0 } },
	{ "long name", PORTS "[route a23456789012345678901234567890123]\n",
	  "10: [route a23456789012345678901234567890123] name must be 1..31 characters of "
	  "A-Z a-z 0-9 - _ .", { 0 } },
	{ "key wrong length", PORTS TUN_HEAD SPIS "out-key = 0x" KEY20 "\nin-key = "
	  "fedcba9876543210fedcba98765432100506ff\n",
	  "19: [tunnel t] in-key: expected 20 bytes of hex (16-byte key + 4-byte salt), got 19",
	  { 0 } },
	{ "duplicate cipher", GOOD "cipher = aes256-gcm\n", "20: [tunnel t] cipher: "
	  "duplicate key", { 0 } },
	{ "aes256 wants 36", PORTS TUN256 SPIS "out-key = " KEY20 KEY16 "\nin-key = " KEY20B "\n",
	  "19: [tunnel t] in-key: expected 36 bytes of hex (32-byte key + 4-byte salt), got 20",
	  { 0 } },
	{ "aes256 ok", PORTS TUN256 SPIS "out-key = " KEY20 KEY16 "\nin-key = " KEY16 KEY20B
	  "\n", NULL, { 0 } },
	{ "bad cipher", PORTS TUNX("t", "198.19.0.1", "aes128-cbc") SPIS KEYS,
	  "15: [tunnel t] cipher: expected one of aes128-gcm, aes256-gcm, aes128-cbc-sha1, "
	  "aes256-cbc-sha1, aes128-cbc-sha256, aes256-cbc-sha256, chacha20-poly1305, "
	  "null-sha256; got 'aes128-cbc'", { 0 } },
	{ "cbc ok", PORTS TUNX("t", "198.19.0.1", "aes256-cbc-sha256") SPIS
	  "out-key = " KEY16 KEY16 "\nin-key = " KEY16 KEY16 "\nout-auth-key = " KEY16 KEY16
	  "\nin-auth-key = " KEY16 KEY16 "\n", NULL, { 0 } },
	{ "cbc wants auth key", PORTS TUNX("t", "198.19.0.1", "aes128-cbc-sha1") SPIS
	  "out-key = " KEY16 "\nin-key = " KEY16 "\nout-auth-key = " KEY20 "\n",
	  "10: [tunnel t] missing in-auth-key or in-auth-key-file (cipher aes128-cbc-sha1 "
	  "needs a 20-byte HMAC key)", { 0 } },
	{ "cbc key has no salt", PORTS TUNX("t", "198.19.0.1", "aes128-cbc-sha1") SPIS
	  "out-key = " KEY20 "\nin-key = " KEY16 "\nout-auth-key = " KEY20 "\n"
	  "in-auth-key = " KEY20B "\n",
	  "18: [tunnel t] out-key: expected 16 bytes of hex (the aes128-cbc-sha1 key), got 20",
	  { 0 } },
	{ "sha256 auth key length", PORTS TUNX("t", "198.19.0.1", "aes128-cbc-sha256") SPIS
	  "out-key = " KEY16 "\nin-key = " KEY16 "\nout-auth-key = " KEY20 "\n"
	  "in-auth-key = " KEY16 KEY16 "\n",
	  "20: [tunnel t] out-auth-key: expected 32 bytes of hex (the HMAC key of "
	  "aes128-cbc-sha256), got 20", { 0 } },
	{ "gcm has no auth key", GOOD "out-auth-key = " KEY20 "\n",
	  "20: [tunnel t] out-auth-key: cipher aes128-gcm has no separate integrity key",
	  { 0 } },
	{ "null has no key", PORTS TUNX("t", "198.19.0.1", "null-sha256") SPIS
	  "out-key = " KEY16 "\nout-auth-key = " KEY16 KEY16 "\nin-auth-key = " KEY16 KEY16
	  "\n", "18: [tunnel t] out-key: cipher null-sha256 has no encryption key", { 0 } },
	{ "null ok", PORTS TUNX("t", "198.19.0.1", "null-sha256") SPIS
	  "out-auth-key = " KEY16 KEY16 "\nin-auth-key = " KEY16 KEY16 "\n", NULL, { 0 } },
	{ "chacha key length", PORTS TUNX("t", "198.19.0.1", "chacha20-poly1305") SPIS
	  "out-key = " KEY16 KEY20 KEY16 "\nin-key = " KEY16 KEY16 "01020304\n",
	  "18: [tunnel t] out-key: expected 36 bytes of hex (32-byte key + 4-byte salt), got 52",
	  { 0 } },
	{ "chacha ok", PORTS TUNX("t", "198.19.0.1", "chacha20-poly1305") SPIS
	  "out-key = " KEY16 KEY20 "\nin-key = " KEY16 KEY16 "01020304\n", NULL, { 0 } },
	{ "bad hex", PORTS TUN_HEAD SPIS "out-key = 0x0123456789abcdef0123456789abcdef0102030g\n"
	  "in-key = " KEY20B "\n",
	  "18: [tunnel t] out-key: bad hex: not a hex digit at position 40", { 0 } },
	{ "odd hex", PORTS TUN_HEAD SPIS "out-key = 0x" KEY20 "1\nin-key = " KEY20B "\n",
	  "18: [tunnel t] out-key: bad hex: expected an even, nonzero number of hex digits, "
	  "got 41", { 0 } },
	{ "bad spi", PORTS TUN_HEAD "out-spi = 0x10g1\nin-spi = 0x2001\n" KEYS,
	  "16: [tunnel t] out-spi: expected an SPI (0x100..0xffffffff or decimal), "
	  "got '0x10g1'", { 0 } },
	{ "spi too big", PORTS TUN_HEAD "out-spi = 0x100000000\nin-spi = 0x2001\n" KEYS,
	  "16: [tunnel t] out-spi: expected an SPI (0x100..0xffffffff or decimal), "
	  "got '0x100000000'", { 0 } },
	{ "reserved spi", PORTS TUN_HEAD "out-spi = 0x1001\nin-spi = 255\n" KEYS,
	  "17: [tunnel t] in-spi: SPI 255 is reserved (1..255 by IANA, 0 is invalid); "
	  "use 256 or more", { 0 } },
	{ "same spi both ways", PORTS TUN_HEAD "out-spi = 0x1001\nin-spi = 4097\n" KEYS,
	  "17: [tunnel t] in-spi: must differ from out-spi (both 0x00001001)", { 0 } },
	{ "duplicate in-spi", GOOD TUN("u", "198.19.0.1") "out-spi = 0x1002\n"
	  "in-spi = 0x2001\n" KEYS, "27: [tunnel u] in-spi: 0x00002001 is already the in-spi "
	  "of [tunnel t]", { 0 } },
	{ "bad replay-window", GOOD "replay-window = 1000\n",
	  "20: [tunnel t] replay-window: expected 0 (off) or a power of two from 64 to 4096, got '1000'",
	  { 0 } },
	{ "port without udp", GOOD "local-port = 4501\n",
	  "20: [tunnel t] local-port/remote-port/local-ports need encap = udp", { 0 } },
	{ "soft above hard", GOOD "soft-packets = 10\nhard-packets = 5\n",
	  "10: [tunnel t] soft-packets 10 is above hard-packets 5", { 0 } },
	{ "bad lifetime", GOOD "hard-seconds = -1\n",
	  "20: [tunnel t] hard-seconds: expected a number 0..4294967295 (0: no limit), got '-1'",
	  { 0 } },
	{ "bad esn", GOOD "esn = maybe\n",
	  "20: [tunnel t] esn: expected yes or no, got 'maybe'", { 0 } },
	{ "bad encap", GOOD "encap = tcp\n",
	  "20: [tunnel t] encap: expected esp or udp, got 'tcp'", { 0 } },
	{ "bad df", GOOD "df = maybe\n",
	  "20: [tunnel t] df: expected copy, set or clear, got 'maybe'", { 0 } },
	{ "replay-window too big", GOOD "replay-window = 8192\n",
	  "20: [tunnel t] replay-window: expected 0 (off) or a power of two from 64 to 4096, got '8192'",
	  { 0 } },
	{ "local not outside", PORTS TUN("t", "198.18.1.1") SPIS KEYS,
	  "11: [tunnel t] local: 198.18.1.1 is not the address of an outside port", { 0 } },
	/* extra-addresses: line 10, the tunnel's local on line 12 */
	{ "extra-addresses", PORTS "extra-addresses = 198.19.128.0/17\n" TUN("t", "198.19.128.5")
	  SPIS KEYS, NULL, { 0 } },
	{ "local beyond extra-addresses", PORTS "extra-addresses = 198.19.128.0/17\n"
	  TUN("t", "198.19.64.1") SPIS KEYS, "12: [tunnel t] local: 198.19.64.1 is not the "
	  "address of an outside port (nor in its extra-addresses)", { 0 } },
	{ "extra-addresses host bits", PORTS "extra-addresses = 198.19.128.1/17\n",
	  "10: [port outside] extra-addresses: 198.19.128.1/17 has host bits set (did you mean "
	  "198.19.128.0/17?)", { 0 } },
	{ "extra-addresses too long", PORTS "extra-addresses = 198.19.128.0/33\n",
	  "10: [port outside] extra-addresses: expected an IPv4 or IPv6 prefix (a.b.c.d/len, "
	  "x:x::/len), got '198.19.128.0/33'", { 0 } },
	{ "extra-addresses v6", PORTS "extra-addresses = 2001:db8::/64\n",
	  "10: [port outside] extra-addresses: expected an IPv4 prefix of length 1..32 "
	  "(198.19.128.0/17), got '2001:db8::/64' (IPv6 extra addresses are not supported)",
	  { 0 } },
	{ "extra-addresses all", PORTS "extra-addresses = 0.0.0.0/0\n",
	  "10: [port outside] extra-addresses: expected an IPv4 prefix of length 1..32 "
	  "(198.19.128.0/17), got '0.0.0.0/0' (IPv6 extra addresses are not supported)",
	  { 0 } },
	{ "extra-addresses inside", "[port a]\nid = 0\nrole = inside\naddress = 198.18.1.1/24\n"
	  "extra-addresses = 198.18.2.0/24\n", "5: [port a] extra-addresses: only an outside "
	  "port takes them (role = outside)", { 0 } },
	{ "extra-addresses without IPv4", "[port o]\nid = 1\nrole = outside\n"
	  "address = 2001:db8::1/64\nextra-addresses = 198.19.128.0/17\n",
	  "5: [port o] extra-addresses: 198.19.128.0/17 needs the port's own IPv4 address "
	  "(address =) too", { 0 } },
	/* a route tunnel's twin (deploy/NEXT-DESIGN.md C.1) */
	{ "tunnel host-interface", RGOOD "host-interface = vti-r1\n"
	  "inside-address = 169.254.10.1/30, fd00:10::1/126\n",
	  NULL, { 0 } },
	{ "tunnel host-interface name", RGOOD "host-interface = a,b\n",
	  "19: [tunnel r1] host-interface: expected a Linux interface name (1..15 bytes, "
	  "not '.' or '..', none of / : , = or blanks), got 'a,b'", { 0 } },
	{ "tunnel host-interface policy", GOOD "host-interface = vti-t\n",
	  "20: [tunnel t] host-interface: only for mode = route (a policy tunnel's traffic "
	  "is chosen by its selectors, not by the host's routes)", { 0 } },
	{ "inside-address alone", RGOOD "inside-address = 169.254.10.1/30\n",
	  "19: [tunnel r1] inside-address: needs host-interface (the addresses are the "
	  "twin's)", { 0 } },
	{ "inside-address two IPv4", RGOOD "inside-address = 169.254.10.1/30, 169.254.10.5/30\n"
	  "host-interface = vti-r1\n", "19: [tunnel r1] inside-address: two IPv4 addresses: "
	  "give at most one per family", { 0 } },
	{ "inside-address no length", RGOOD "inside-address = 169.254.10.1\n"
	  "host-interface = vti-r1\n", "19: [tunnel r1] inside-address: expected an IPv4 "
	  "address with prefix length 1..32 (169.254.10.1/30) or an IPv6 address with prefix "
	  "length 1..128 (fd00:10::1/126), got '169.254.10.1'", { 0 } },
	{ "tunnel host-interface of a port", PORTS "host-interface = vti-r1\n"
	  RTUN("r1", "0x1001", "0x2001") "host-interface = vti-r1\n",
	  "20: [tunnel r1] host-interface: vti-r1 is already the host interface of [port "
	  "outside]", { 0 } },
	{ "tunnel host-interface twice", RGOOD "host-interface = vti-r1\n"
	  RTUN("r2", "0x1002", "0x2002") "host-interface = vti-r1\n",
	  "29: [tunnel r2] host-interface: vti-r1 is already the host interface of [tunnel "
	  "r1]", { 0 } },
	/* host-access = yes: policy tunnels, a port with a twin */
	{ "host-access", PORTS "host-interface = dpvpn-out\n" TUN("t", "198.19.0.1") SPIS KEYS
	  "host-access = yes\n", NULL, { 0 } },
	{ "host-access without a twin", GOOD "host-access = yes\n",
	  "20: [tunnel t] host-access: no [port] has a host-interface to give it to", { 0 } },
	{ "host-access no", GOOD "host-access = no\n", NULL, { 0 } },
	{ "host-access maybe", GOOD "host-access = maybe\n",
	  "20: [tunnel t] host-access: expected yes or no, got 'maybe'", { 0 } },
	{ "host-access route", RGOOD "host-access = yes\n",
	  "19: [tunnel r1] host-access: not with mode = route (what is for the host arrives "
	  "through the tunnel's own twin: host-interface)", { 0 } },
	/* host-interface: line 10 (outside), or 5 (inside, before the blank line) */
	{ "host-interface", PORTS "host-interface = dpvpn-out\n" TUN("t", "198.19.0.1") SPIS KEYS,
	  NULL, { 0 } },
	{ "host-interface slash", PORTS "host-interface = a/b\n",
	  "10: [port outside] host-interface: expected a Linux interface name (1..15 bytes, "
	  "not '.' or '..', none of / : , = or blanks), got 'a/b'", { 0 } },
	{ "host-interface too long", PORTS "host-interface = abcdefghijklmnop\n",
	  "10: [port outside] host-interface: expected a Linux interface name (1..15 bytes, "
	  "not '.' or '..', none of / : , = or blanks), got 'abcdefghijklmnop'", { 0 } },
	{ "host-interface dotdot", PORTS "host-interface = ..\n",
	  "10: [port outside] host-interface: expected a Linux interface name (1..15 bytes, "
	  "not '.' or '..', none of / : , = or blanks), got '..'", { 0 } },
	{ "host-interface twice", "[port inside]\nid = 0\nrole = inside\naddress = 198.18.1.1/24\n"
	  "host-interface = tw0\n[port outside]\nid = 1\nrole = outside\n"
	  "address = 198.19.0.1/24\nhost-interface = tw0\n",
	  "10: [port outside] host-interface: tw0 is already the host interface of "
	  "[port inside]", { 0 } },
	{ "host-interface extra", PORTS "extra-addresses = 198.19.128.0/17\n"
	  "host-interface = tw0\n", "11: [port outside] host-interface: not with "
	  "extra-addresses (the twin would need every address of the block)", { 0 } },
	{ "host bits in ts", PORTS "[route r]\ndst = 10.1.2.3/16\nport = inside\n",
	  "11: [route r] dst: 10.1.2.3/16 has host bits set (did you mean 10.1.0.0/16?)",
	  { 0 } },
	{ "route to unknown port", PORTS "[route r]\ndst = 10.1.0.0/16\nport = 7\n"
	  "via = 198.18.1.254\n", "12: [route r] port: no [port] named or numbered '7'", { 0 } },
	{ "neighbor ok", PORTS "[neighbor gw]\nport = 1\naddress = 198.19.0.2\n"
	  "mac = 02:00:00:00:00:02\n", NULL, { 0 } },
	{ "neighbour ok", PORTS "[neighbour gw]\nport = 1\naddress = 198.19.0.2\n"
	  "mac = 02:00:00:00:00:02\n", NULL, { 0 } },
	{ "neighbour error named as written", PORTS "[neighbour gw]\nport = outside\n"
	  "address = 198.19.0.2\nmac = 02:00:00:00:00\n",
	  "13: [neighbour gw] mac: expected a MAC address aa:bb:cc:dd:ee:ff, got "
	  "'02:00:00:00:00'", { 0 } },
	{ "neighbour missing key", PORTS "[neighbour gw]\nport = outside\n",
	  "10: [neighbour gw] missing required key 'address'", { 0 }, 2 },
	{ "neighbour port unknown", PORTS "[neighbour gw]\nport = 7\naddress = 198.19.0.2\n"
	  "mac = 02:00:00:00:00:02\n", "11: [neighbour gw] port: no [port] named or numbered '7'",
	  { 0 } },
	{ "neighbor and neighbour one name space", PORTS "[neighbor gw]\nport = 1\n"
	  "address = 198.19.0.2\nmac = 02:00:00:00:00:02\n[neighbour gw]\n",
	  "14: duplicate section [neighbour gw]", { 0 } },
	{ "neighbor multicast mac", PORTS "[neighbor gw]\nport = outside\n"
	  "address = 198.19.0.2\nmac = 01:00:5e:00:00:01\n",
	  "13: [neighbor gw] mac: 01:00:5e:00:00:01 is not a unicast MAC address", { 0 } },
	{ "missing key", PORTS TUN_HEAD SPIS "out-key = " KEY20 "\n",
	  "10: [tunnel t] missing in-key or in-key-file", { 0 } },
	{ "key-file 0600 accepted", PORTS TUN_HEAD SPIS "out-key = 0x" KEY20 "\n"
	  "in-key-file = in.hex ; comment\n", NULL, { "in.hex", "0x" KEY20B "\n", 0600, 0 } },
	{ "key-file 0644 refused", PORTS TUN_HEAD SPIS "out-key = 0x" KEY20 "\n"
	  "in-key-file = in.hex\n", "19: [tunnel t] in-key-file: @DIR@/in.hex: mode 0644 "
	  "lets group or others access the key (chmod 600 it)",
	  { "in.hex", KEY20B "\n", 0644, 0 } },
	{ "key-file wrong length", PORTS TUN_HEAD SPIS "out-key = 0x" KEY20 "\n"
	  "in-key-file = in.hex\n", "19: [tunnel t] in-key-file: expected 20 bytes of hex "
	  "(16-byte key + 4-byte salt), got 4", { "in.hex", "01020304\n", 0600, 0 } },
	{ "key-file two lines", PORTS TUN_HEAD SPIS "out-key = 0x" KEY20 "\n"
	  "in-key-file = in.hex\n", "19: [tunnel t] in-key-file: @DIR@/in.hex: expected the "
	  "key as hex on one line", { "in.hex", KEY20B "\n" KEY20B "\n", 0600, 0 } },
	{ "key-file missing", PORTS TUN_HEAD SPIS "out-key = 0x" KEY20 "\n"
	  "in-key-file = nope.hex\n", "19: [tunnel t] in-key-file: @DIR@/nope.hex: "
	  "No such file or directory", { 0 } },
	{ "both key and key-file", PORTS TUN_HEAD SPIS KEYS "in-key-file = in.hex\n",
	  "20: [tunnel t] in-key-file: give either in-key or in-key-file, not both "
	  "(other one at line 19)", { "in.hex", KEY20B "\n", 0600, 0 } },
	/* the config file itself: private if it holds a key, never writable by others */
	{ "config 0644 with a key refused", GOOD,
	  "18: [tunnel t] out-key: @DIR@/test.conf is mode 0644: group or others can read "
	  "this key (chmod 600 it, or move the key to out-key-file)", { 0 }, 0, 0644 },
	{ "config 0640 with an auth key refused", PORTS TUNX("t", "198.19.0.1",
	  "aes128-cbc-sha1") SPIS "out-key-file = k.hex\nin-key-file = k.hex\n"
	  "out-auth-key = 0x" KEY20 "\nin-auth-key = 0x" KEY20B "\n",
	  "20: [tunnel t] out-auth-key: @DIR@/test.conf is mode 0640: group or others can "
	  "read this key (chmod 600 it, or move the key to out-auth-key-file)",
	  { "k.hex", KEY16 "\n", 0600, 0 }, 0, 0640 },
	{ "config 0644 with key files only accepted", PORTS TUN_HEAD SPIS
	  "out-key-file = k.hex\nin-key-file = k.hex\n", NULL,
	  { "k.hex", KEY20 "\n", 0600, 0 }, 0, 0644 },
	/* (an error about the whole file has no line: "FILE: message") */
	{ "config 0664 refused", PORTS, " mode 0664 lets group or others change the "
	  "configuration: refused (chmod go-w it)", { 0 }, 0, 0664 },
	{ "config 0602 refused", PORTS, " mode 0602 lets group or others change the "
	  "configuration: refused (chmod go-w it)", { 0 }, 0, 0602 },
	{ "bad group", "[control]\ngroup = no-such-group-dpvpn\n" PORTS,
	  "2: [control] group: no such group 'no-such-group-dpvpn'", { 0 } },
	{ "named dataplane", "[dataplane x]\n" PORTS,
	  "1: [dataplane] takes no name, got 'x'", { 0 } },
	/* IPv6 */
	{ "port with both families", PORTS46, NULL, { 0 } },
	{ "port v6 first", "[port a]\nid = 0\nrole = inside\n"
	  "address = 2001:DB8:1::1/64,198.18.1.1/24\n", NULL, { 0 } },
	{ "v6-only port", "[port a]\nid = 0\nrole = outside\naddress = 2001:db8::1/64\n",
	  NULL, { 0 } },
	{ "two v6 addresses on a port", "[port a]\nid = 0\nrole = inside\n"
	  "address = 2001:db8:1::1/64, 198.18.1.1/24, 2001:db8:2::1/64\n",
	  "4: [port a] address: two IPv6 addresses, 2001:db8:1::1/64 and 2001:db8:2::1/64: "
	  "give at most one per family", { 0 } },
	{ "two v4 addresses on a port", "[port a]\nid = 0\nrole = inside\n"
	  "address = 198.18.1.1/24, 198.18.2.1/24\n",
	  "4: [port a] address: two IPv4 addresses, 198.18.1.1/24 and 198.18.2.1/24: "
	  "give at most one per family", { 0 } },
	{ "bad v6 in address list", "[port a]\nid = 0\nrole = inside\n"
	  "address = 198.18.1.1/24, 2001:db8:1::1/129\n",
	  "4: [port a] address: " PORT_ERR ", got '2001:db8:1::1/129'", { 0 } },
	{ "empty item in address list", "[port a]\nid = 0\nrole = inside\n"
	  "address = 198.18.1.1/24,\n", "4: [port a] address: " PORT_ERR ", got ''", { 0 } },
	{ "unspecified v6 port address", "[port a]\nid = 0\nrole = inside\n"
	  "address = ::/64\n", "4: [port a] address: " PORT_ERR ", got '::/64'", { 0 } },
	{ "v6 neighbour", PORTS46 "[neighbor gw6]\nport = outside\naddress = 2001:db8::2\n"
	  "mac = 02:00:00:00:00:02\n", NULL, { 0 } },
	{ "bad neighbour address", PORTS "[neighbor gw]\nport = outside\n"
	  "address = 2001:db8::g\nmac = 02:00:00:00:00:02\n",
	  "12: [neighbor gw] address: expected an IPv4 or IPv6 address, got '2001:db8::g'",
	  { 0 } },
	{ "route v6 via v6", PORTS46 "[route r]\ndst = 2001:db8:99::/48\nport = outside\n"
	  "via = fe80::1\n", NULL, { 0 } },
	{ "route v6 on-link", PORTS46 "[route r]\ndst = ::/0\nport = outside\n", NULL, { 0 } },
	{ "route v4 dst v6 via", PORTS46 "[route r]\ndst = 10.1.0.0/16\nport = outside\n"
	  "via = 2001:db8::fe\n", "13: [route r] via: 2001:db8::fe is an IPv6 address, "
	  "dst 10.1.0.0/16 is IPv4: the gateway must be of the destination's family", { 0 } },
	{ "route v6 via before v4 dst", PORTS46 "[route r]\nvia = 2001:db8::fe\n"
	  "dst = 10.1.0.0/16\nport = outside\n", "11: [route r] via: 2001:db8::fe is an IPv6 "
	  "address, dst 10.1.0.0/16 is IPv4: the gateway must be of the destination's family",
	  { 0 } },
	{ "bad route dst", PORTS "[route r]\ndst = 10.1.0.0/33\nport = inside\n",
	  "11: [route r] dst: expected an IPv4 or IPv6 prefix (a.b.c.d/len, x:x::/len), "
	  "got '10.1.0.0/33'", { 0 } },
	{ "bad route via", PORTS "[route r]\ndst = 10.1.0.0/16\nport = inside\n"
	  "via = 198.18.1\n", "13: [route r] via: expected an IPv4 or IPv6 gateway address, "
	  "got '198.18.1'", { 0 } },
	{ "v6 host bits", PORTS "[route r]\ndst = 2001:db8:1::1/48\nport = inside\n",
	  "11: [route r] dst: 2001:db8:1::1/48 has host bits set (did you mean "
	  "2001:db8:1::/48?)", { 0 } },
	{ "v6 host bits in a byte", PORTS46 TUNA("198.19.0.1", "198.19.0.2",
	  "2001:db8:1:ff::/57", "2001:db8:2::/64") SPIS KEYS,
	  "13: [tunnel t] local-ts: 2001:db8:1:ff::/57 has host bits set (did you mean "
	  "2001:db8:1:80::/57?)", { 0 } },
	{ "tunnel v6 local v4 remote", PORTS46 TUN_TS4("2001:db8::1", "198.19.0.2") SPIS
	  KEYS, "12: [tunnel t] remote: 198.19.0.2 is an IPv4 address, local 2001:db8::1 is "
	  "IPv6: local and remote must be of one family", { 0 } },
	{ "tunnel v6 over v6", PORTS46 TUN_TS6("2001:db8::1", "2001:db8::2") SPIS KEYS,
	  NULL, { 0 } },
	{ "tunnel 4o6", PORTS46 TUN_TS4("2001:db8::1", "2001:db8::2") SPIS KEYS, NULL,
	  { 0 } },
	{ "tunnel 6o4", PORTS46 TUN_TS6("198.19.0.1", "198.19.0.2") SPIS KEYS, NULL,
	  { 0 } },
	{ "tunnel 6o4, v4-only ports", PORTS TUN_TS6("198.19.0.1", "198.19.0.2") SPIS KEYS,
	  NULL, { 0 } },
	{ "ts of two families", PORTS TUNA("198.19.0.1", "198.19.0.2", "198.18.1.0/24",
	  "2001:db8:2::/64") SPIS KEYS, "14: [tunnel t] remote-ts: 2001:db8:2::/64 is an IPv6 "
	  "prefix, local-ts 198.18.1.0/24 is IPv4: local-ts and remote-ts must be of one "
	  "family", { 0 } },
	{ "tunnel v6 local not outside", PORTS46 TUN_TS4("2001:db8:1::1", "2001:db8::2")
	  SPIS KEYS, "11: [tunnel t] local: 2001:db8:1::1 is not the address of an outside "
	  "port", { 0 } },
	{ "tunnel v6 local, v4-only ports", PORTS TUN_TS4("2001:db8::1", "2001:db8::2")
	  SPIS KEYS, "11: [tunnel t] local: 2001:db8::1 is not the address of an outside port",
	  { 0 } },
	{ "tunnel unspecified v6 remote", PORTS46 TUN_TS4("2001:db8::1", "::") SPIS KEYS,
	  "12: [tunnel t] remote: expected an IPv4 or IPv6 address, got '::'", { 0 } },
	/* selector lists */
	{ "ts lists", PORTS TUNA("198.19.0.1", "198.19.0.2", "198.18.1.0/24, 10.1.0.0/16",
	  "198.18.2.0/24,10.2.0.0/16 , 10.3.0.0/16") SPIS KEYS, NULL, { 0 } },
	{ "ts list of 9", PORTS TUNA("198.19.0.1", "198.19.0.2", "198.18.1.0/24",
	  "10.1.0.0/24, 10.2.0.0/24, 10.3.0.0/24, 10.4.0.0/24, 10.5.0.0/24, 10.6.0.0/24, "
	  "10.7.0.0/24, 10.8.0.0/24, 10.9.0.0/24") SPIS KEYS,
	  "14: [tunnel t] remote-ts: at most 8 prefixes in a list", { 0 } },
	{ "ts list two families", PORTS46 TUNA("198.19.0.1", "198.19.0.2",
	  "198.18.1.0/24, 2001:db8:1::/64", "198.18.2.0/24") SPIS KEYS,
	  "13: [tunnel t] local-ts: '2001:db8:1::/64' is not of the first prefix's family "
	  "(IPv4): one family per list", { 0 } },
	{ "ts list overlap", PORTS TUNA("198.19.0.1", "198.19.0.2", "198.18.1.0/24",
	  "10.0.0.0/8, 198.18.2.0/24, 10.9.0.0/16") SPIS KEYS,
	  "14: [tunnel t] remote-ts: '10.9.0.0/16' overlaps entry 1 of the list", { 0 } },
	{ "ts list v6 overlap", PORTS46 TUNA("198.19.0.1", "198.19.0.2",
	  "2001:db8:1::/64, 2001:db8:1:0:8000::/65", "2001:db8:2::/64") SPIS KEYS,
	  "13: [tunnel t] local-ts: '2001:db8:1:0:8000::/65' overlaps entry 1 of the list",
	  { 0 } },
	{ "ts list empty entry", PORTS TUNA("198.19.0.1", "198.19.0.2", "198.18.1.0/24, ",
	  "198.18.2.0/24") SPIS KEYS, "13: [tunnel t] local-ts: expected an IPv4 or IPv6 "
	  "prefix (a.b.c.d/len, x:x::/len), got ''", { 0 } },
	{ "ts list host bits", PORTS TUNA("198.19.0.1", "198.19.0.2", "198.18.1.0/24",
	  "198.18.2.0/24, 10.1.1.1/16") SPIS KEYS, "14: [tunnel t] remote-ts: 10.1.1.1/16 "
	  "has host bits set (did you mean 10.1.0.0/16?)", { 0 } },
	{ "ts list with ike", PORTS TUNA("198.19.0.1", "198.19.0.2", "198.18.1.0/24",
	  "198.18.2.0/24, 10.1.0.0/16") IKE, NULL, PSK(0600) },
	/* keying = ike */
	{ "ike minimal", IKE_GOOD, NULL, PSK(0600) },
	/* ike-sa: a CHILD_SA on another tunnel's IKE SA (lines 18-22) */
	{ "ike-sa", IKE_GOOD KID("t"), NULL, PSK(0600) },
	{ "ike-sa before its parent", PORTS "[tunnel k]\nkeying = ike\nike-sa = t\n"
	  "local-ts = 10.1.0.0/24\nremote-ts = 10.2.0.0/24\n" TUN_HEAD IKE, NULL, PSK(0600) },
	{ "ike-sa unknown", IKE_GOOD KID("nope"), "21: [tunnel k] ike-sa: nope is no [tunnel] "
	  "of this file", PSK(0600) },
	{ "ike-sa itself", IKE_GOOD KID("k"), "21: [tunnel k] ike-sa: names this tunnel itself",
	  PSK(0600) },
	{ "ike-sa of a static", PORTS TUN_HEAD SPIS KEYS KID("t"), "23: [tunnel k] ike-sa: t is "
	  "not keying = ike", PSK(0600) },
	{ "ike-sa chain", IKE_GOOD KID("t") "[tunnel k2]\nkeying = ike\nike-sa = k\n"
	  "local-ts = 10.3.0.0/24\nremote-ts = 10.4.0.0/24\n", "25: [tunnel k2] ike-sa: k is "
	  "itself an ike-sa tunnel (one level only)", PSK(0600) },
	{ "ike-sa inherited keys", IKE_GOOD KID("t") "remote = 198.19.0.3\ndpd = 10\n"
	  "psk-file = a.psk\n", "23: [tunnel k] remote: inherited from tunnel t (ike-sa)",
	  PSK(0600), 3 },
	{ "ike-sa static keying", IKE_GOOD "[tunnel k]\nike-sa = t\nlocal-ts = 10.1.0.0/24\n"
	  "remote-ts = 10.2.0.0/24\ncipher = aes128-gcm\n" SPIS KEYS,
	  "19: [tunnel k] ike-sa: only with keying = ike", PSK(0600) },
	{ "ike all keys", IKE_GOOD "local-id = fqdn:gw-a.example\n"
	  "remote-id = fqdn:gw-b.example\nike-proposals = " P128E ", " P256X "\n"
	  "start = no\ndpd = 0\nencap = udp\nreplay-window = 4096\nmtu = 1400\n"
	  "mss-clamp = off\ndf = set\nesn = yes\nfragment = outer\nsoft-seconds = 3000\n"
	  "hard-seconds = 3600\nlocal-ports = 4\n", NULL, PSK(0400) },
	{ "ike keying first", "[tunnel t]\nkeying = ike\npsk-file = a.psk\n"
	  "local = 198.19.0.1\nremote = 198.19.0.2\nlocal-ts = 198.18.1.0/24\n"
	  "remote-ts = 198.18.2.0/24\ncipher = aes256-gcm\n" PORTS, NULL, PSK(0600) },
	{ "ike id email", IKE_GOOD "local-id = email:vpn@gw-a.example\n"
	  "remote-id = email:ops+vpn@b\n", NULL, PSK(0600) },
	{ "ike id keyid", IKE_GOOD "local-id = keyid:0x" KEY16 "\nremote-id = keyid:" KEY64
	  "\n", NULL, PSK(0600) },
	{ "ike id ip", IKE_GOOD "local-id = ip:198.19.0.1\nremote-id = ip:2001:db8::2\n",
	  NULL, PSK(0600) },
	{ "ike four proposals", IKE_GOOD "ike-proposals = " P256X "," P256E " , " P128X ", "
	  P128E "\n", NULL, PSK(0600) },
	{ "ike cbc-sha256", PORTS TUNX("t", "198.19.0.1", "aes128-cbc-sha256") IKE, NULL,
	  PSK(0600) },
	{ "ike psk of 16 bytes", IKE_GOOD, NULL, { "a.psk", "0123456789abcdef", 0600, 0 } },
	{ "ike psk of 128 bytes", IKE_GOOD, NULL, { "a.psk", PSK128 "\n", 0600, 0 } },
	{ "keying = static", GOOD "keying = static\n", NULL, { 0 } },
	{ "ike beside static", GOOD "[tunnel u]\nlocal = 198.19.0.1\nremote = 198.19.0.3\n"
	  "local-ts = 198.18.1.0/24\nremote-ts = 198.18.3.0/24\ncipher = aes128-gcm\n"
	  IKE, NULL, PSK(0600) },
	{ "ike missing psk-file", PORTS TUN_HEAD "keying = ike\n",
	  "10: [tunnel t] missing required key 'psk-file'", { 0 } },
	{ "ike missing remote", PORTS "[tunnel t]\nlocal = 198.19.0.1\n"
	  "local-ts = 198.18.1.0/24\nremote-ts = 198.18.2.0/24\ncipher = aes128-gcm\n" IKE,
	  "10: [tunnel t] missing required key 'remote'", PSK(0600) },
	{ "ike psk too short", IKE_GOOD, "17: [tunnel t] psk-file: @DIR@/a.psk" PSK_LEN_ERR
	  "15", { "a.psk", "0123456789abcde\n", 0600, 0 } },
	{ "ike psk empty", IKE_GOOD, "17: [tunnel t] psk-file: @DIR@/a.psk" PSK_LEN_ERR "0",
	  { "a.psk", "\n", 0600, 0 } },
	{ "ike psk too long", IKE_GOOD, "17: [tunnel t] psk-file: @DIR@/a.psk" PSK_LEN_ERR
	  "129", { "a.psk", PSK128 "x", 0600, 0 } },
	{ "ike psk far too long", IKE_GOOD, "17: [tunnel t] psk-file: @DIR@/a.psk" PSK_LEN_ERR
	  "more than 128", { "a.psk", PSK128 "x\n", 0600, 0 } },
	{ "ike psk 0644", IKE_GOOD, "17: [tunnel t] psk-file: @DIR@/a.psk: mode 0644 lets "
	  "group or others access the key (chmod 600 it)", PSK(0644) },
	{ "ike psk missing", IKE_GOOD, "17: [tunnel t] psk-file: @DIR@/a.psk: No such file "
	  "or directory", { 0 } },
	{ "ike with spis and keys", GOOD IKE, "16: [tunnel t] out-spi" NOT_IKE, PSK(0600), 4 },
	{ "ike with a key file", IKE_GOOD "in-key-file = nope.hex\n",
	  "18: [tunnel t] in-key-file" NOT_IKE, PSK(0600) },
	{ "ike with an auth key", PORTS TUNX("t", "198.19.0.1", "aes128-cbc-sha256")
	  "out-auth-key = " KEY16 KEY16 "\n" IKE,
	  "16: [tunnel t] out-auth-key" NOT_IKE, PSK(0600) },
	{ "ike with out-seq-start", IKE_GOOD "out-seq-start = 100\n",
	  "18: [tunnel t] out-seq-start" NOT_IKE, PSK(0600) },
	{ "ike with in-auth-key", IKE_GOOD "in-auth-key = " KEY16 "\n",
	  "18: [tunnel t] in-auth-key" NOT_IKE, PSK(0600) },
	{ "dpd without ike", GOOD "dpd = 10\n",
	  "20: [tunnel t] dpd: only with keying = ike", { 0 } },
	{ "psk-file without ike", GOOD "psk-file = a.psk\n",
	  "20: [tunnel t] psk-file: only with keying = ike", PSK(0600) },
	{ "ike keys with keying = static", GOOD "keying = static\nlocal-id = fqdn:a\n"
	  "remote-id = fqdn:b\nike-proposals = " P128E "\nstart = no\n",
	  "21: [tunnel t] local-id: only with keying = ike", { 0 }, 4 },
	{ "bad keying", GOOD "keying = ikev2\n",
	  "20: [tunnel t] keying: expected static or ike, got 'ikev2'", { 0 } },
	{ "bad keying, ike keys", PORTS TUN_HEAD "keying = IKE\npsk-file = a.psk\n",
	  "16: [tunnel t] keying: expected static or ike, got 'IKE'", PSK(0600) },
	{ "bad proposal", IKE_GOOD "ike-proposals = aes128cbc-prfsha256-ecp256\n",
	  "18: [tunnel t] ike-proposals: 'aes128cbc'" PROP_ERR, PSK(0600) },
	{ "bad proposal dh", IKE_GOOD "ike-proposals = " P128E
	  ", aes128gcm16-prfsha256-modp1024\n",
	  "18: [tunnel t] ike-proposals: 'modp1024'" PROP_ERR, PSK(0600) },
	{ "empty proposal", IKE_GOOD "ike-proposals = " P128E ",\n",
	  "18: [tunnel t] ike-proposals: an empty proposal", PSK(0600) },
	{ "proposal twice", IKE_GOOD "ike-proposals = " P128E ", " P128E "\n",
	  "18: [tunnel t] ike-proposals: '" P128E "' is listed twice", PSK(0600) },
	{ "five proposals", IKE_GOOD "ike-proposals = " P128E ", " P128X ", " P256E ", "
	  P256X ", " P128E "\n", "18: [tunnel t] ike-proposals: more than 4 proposals",
	  PSK(0600) },
	/* issue 16: strongSwan's checks, each naming the proposal or the keyword */
	{ "ike sha1", IKE_GOOD "ike-proposals = aes128-sha1-modp2048\n",
	  "18: [tunnel t] ike-proposals: 'sha1'" PROP_ERR, PSK(0600) },
	{ "ike aead without prf", IKE_GOOD "ike-proposals = aes128gcm16-x25519\n",
	  "18: [tunnel t] ike-proposals: 'aes128gcm16-x25519': no PRF (an AEAD proposal names "
	  "one: prfsha256...)", PSK(0600) },
	{ "ike no dh", IKE_GOOD "ike-proposals = aes256-sha384\n",
	  "18: [tunnel t] ike-proposals: 'aes256-sha384': no DH group", PSK(0600) },
	{ "ike aead and cbc", IKE_GOOD "ike-proposals = aes128-aes128gcm16-sha256-ecp256\n",
	  "18: [tunnel t] ike-proposals: 'aes128-aes128gcm16-sha256-ecp256': AEAD and classic "
	  "ciphers in one proposal; make two", PSK(0600) },
	{ "ike cbc no integ", IKE_GOOD "ike-proposals = aes128-prfsha256-ecp256\n",
	  "18: [tunnel t] ike-proposals: 'aes128-prfsha256-ecp256': no integrity algorithm "
	  "for the CBC cipher", PSK(0600) },
	{ "ike gcm with integ", IKE_GOOD "ike-proposals = aes128gcm16-sha256-ecp256\n",
	  "18: [tunnel t] ike-proposals: 'aes128gcm16-sha256-ecp256': an integrity algorithm "
	  "with an AEAD cipher", PSK(0600) },
	{ "esp prfsha256", IKE_GOOD "esp-proposals = aes128gcm16-prfsha256\n",
	  "18: [tunnel t] esp-proposals: 'prfsha256': not an ESP algorithm dpvpn negotiates "
	  "(aes128, aes256, aes128gcm16, aes256gcm16, chacha20poly1305, sha1, sha256, modp2048, "
	  "ecp256, ecp384, curve25519, esn, noesn)", PSK(0600) },
	{ "esp sha384", IKE_GOOD "esp-proposals = aes128-sha384\n",
	  "18: [tunnel t] esp-proposals: 'sha384': not an ESP algorithm dpvpn negotiates "
	  "(aes128, aes256, aes128gcm16, aes256gcm16, chacha20poly1305, sha1, sha256, modp2048, "
	  "ecp256, ecp384, curve25519, esn, noesn)", PSK(0600) },
	{ "esp esn", IKE_GOOD "esp-proposals = aes128gcm16-esn\nesn = yes\n",
	  "19: [tunnel t] esn: with keying = ike and esp-proposals, put esn (or esn-noesn) "
	  "in the proposals", PSK(0600) },
	{ "esp esn in ike-proposals", IKE_GOOD "ike-proposals = aes128gcm16-prfsha256-ecp256-esn\n",
	  "18: [tunnel t] ike-proposals: 'esn': not an IKE algorithm dpvpn negotiates "
	  "(aes128, aes256, aes128gcm16, aes256gcm16, sha256, sha384, sha512, prfsha256, "
	  "prfsha384, prfsha512, modp2048, ecp256, ecp384, curve25519)", PSK(0600) },
	{ "ike without cipher", PORTS "[tunnel t]\nlocal = 198.19.0.1\nremote = 198.19.0.2\n"
	  "local-ts = 198.18.1.0/24\nremote-ts = 198.18.2.0/24\nkeying = ike\n"
	  "psk-file = a.psk\nesp-proposals = aes256gcm16\nike-proposals = ecp256\n",
	  "18: [tunnel t] ike-proposals: 'ecp256': no encryption algorithm", PSK(0600) },
	{ "esp default", IKE_GOOD "esp-proposals = default\n",
	  "18: [tunnel t] esp-proposals: 'default': leave the key out for the defaults",
	  PSK(0600) },
	{ "id without type", IKE_GOOD "local-id = gw-a.example\n",
	  "18: [tunnel t] local-id: " ID_ERR "'gw-a.example'", PSK(0600) },
	{ "id unknown type", IKE_GOOD "remote-id = x500:CN=gw-b\n",
	  "18: [tunnel t] remote-id: " RID_ERR "'x500:CN=gw-b'", PSK(0600) },
	{ "id dn", IKE_GOOD "remote-id = dn:CN=gw-b, O=Example\nlocal-id = dn:C=CH/CN=gw-a\n",
	  NULL, PSK(0600) },
	/* 186 bytes as DER (over the old cap of 128); 25 RDNs C=CH: 25 x 13, over 255 */
	{ "id dn of 186 bytes", IKE_GOOD "local-id = dn:C=CH, ST=Canton of Zurich, L=Zurich, O=Example, OU=Network Operations and Engineering, OU=Site-to-site VPN gateways, CN=peer.example.org\n", NULL, PSK(0600) },
	{ "id dn over 255 bytes", IKE_GOOD "local-id = dn:C=CH, C=CH, C=CH, C=CH, C=CH, C=CH, C=CH, C=CH, C=CH, C=CH, C=CH, C=CH, C=CH, C=CH, C=CH, C=CH, C=CH, C=CH, C=CH, C=CH, C=CH, C=CH, C=CH, C=CH, C=CH\n",
	  "18: [tunnel t] local-id: " ID_ERR "'dn:C=CH, C=CH, C=CH, C=CH, C=CH, C=CH, C=CH, C=CH, C=CH, C=CH, C=CH, C=CH, C=CH, C=CH, C=CH, C=CH, C=CH, C=CH, C=CH, C=CH, C=CH, C=CH, C=CH, C=CH, C=CH'", PSK(0600) },
	{ "id dn bad attribute", IKE_GOOD "remote-id = dn:XY=gw-b\n",
	  "18: [tunnel t] remote-id: " RID_ERR "'dn:XY=gw-b'", PSK(0600) },
	{ "id local pattern", IKE_GOOD "local-id = fqdn:*.example.org\n",
	  "18: [tunnel t] local-id: " ID_ERR "'fqdn:*.example.org'", PSK(0600) },
	{ "id local dn pattern", IKE_GOOD "local-id = dn:CN=*\n",
	  "18: [tunnel t] local-id: " ID_ERR "'dn:CN=*'", PSK(0600) },
	{ "id pattern with psk", IKE_GOOD "remote-id = fqdn:*.example.org\n",
	  "10: [tunnel t] remote-id: a pattern ('*') only with auth = pubkey", PSK(0600) },
	{ "id bad pattern", IKE_GOOD "remote-id = fqdn:a*.example.org\n",
	  "18: [tunnel t] remote-id: " RID_ERR "'fqdn:a*.example.org'", PSK(0600) },
	{ "auth word", IKE_GOOD "auth = cert\n",
	  "18: [tunnel t] auth: expected psk or pubkey, got 'cert'", PSK(0600) },
	{ "cert with psk", IKE_GOOD "cert = gw.pem\n",
	  "18: [tunnel t] cert: only with auth = pubkey", PSK(0600) },
	{ "pubkey without cert", IKE_GOOD "auth = pubkey\n",
	  "10: [tunnel t] missing required key 'cert' (auth = pubkey)", PSK(0600), 4 },
	{ "cert in a static tunnel", GOOD "cert = gw.pem\n",
	  "20: [tunnel t] cert: only with keying = ike", { 0 } },
	{ "id empty fqdn", IKE_GOOD "local-id = fqdn:\n",
	  "18: [tunnel t] local-id: " ID_ERR "'fqdn:'", PSK(0600) },
	{ "id fqdn with a space", IKE_GOOD "local-id = fqdn:gw a\n",
	  "18: [tunnel t] local-id: " ID_ERR "'fqdn:gw a'", PSK(0600) },
	{ "id email without @", IKE_GOOD "local-id = email:gw-a.example\n",
	  "18: [tunnel t] local-id: " ID_ERR "'email:gw-a.example'", PSK(0600) },
	{ "id email, empty user", IKE_GOOD "local-id = email:@gw-a.example\n",
	  "18: [tunnel t] local-id: " ID_ERR "'email:@gw-a.example'", PSK(0600) },
	{ "id keyid too long", IKE_GOOD "local-id = keyid:" KEY64 "00\n",
	  "18: [tunnel t] local-id: " ID_ERR "'keyid:" KEY64 "00'", PSK(0600) },
	{ "id keyid not hex", IKE_GOOD "local-id = keyid:0xgg\n",
	  "18: [tunnel t] local-id: " ID_ERR "'keyid:0xgg'", PSK(0600) },
	{ "id bad ip", IKE_GOOD "remote-id = ip:198.19.0.300\n",
	  "18: [tunnel t] remote-id: " RID_ERR "'ip:198.19.0.300'", PSK(0600) },
	{ "ike with chacha", PORTS TUNX("t", "198.19.0.1", "chacha20-poly1305") IKE,
	  "15: [tunnel t] cipher: keying = ike negotiates aes128-gcm, aes256-gcm, "
	  "aes128-cbc-sha256 or aes256-cbc-sha256, not chacha20-poly1305 (or use "
	  "esp-proposals)", PSK(0600) },
	{ "ike with sha1", PORTS TUNX("t", "198.19.0.1", "aes256-cbc-sha1") IKE,
	  "15: [tunnel t] cipher: keying = ike negotiates aes128-gcm, aes256-gcm, "
	  "aes128-cbc-sha256 or aes256-cbc-sha256, not aes256-cbc-sha1 (or use "
	  "esp-proposals)", PSK(0600) },
	{ "start = maybe", IKE_GOOD "start = maybe\n", "18: [tunnel t] start: expected yes "
	  "(initiate at start) or no (wait for the peer), got 'maybe'", PSK(0600) },
	{ "dpd = -1", IKE_GOOD "dpd = -1\n",
	  "18: [tunnel t] dpd: expected seconds 0..86400 (0: off), got '-1'", PSK(0600) },
	{ "dpd too long", IKE_GOOD "dpd = 86401\n",
	  "18: [tunnel t] dpd: expected seconds 0..86400 (0: off), got '86401'", PSK(0600) },
	{ "ike-lifetime too short", IKE_GOOD "ike-lifetime = 59\n",
	  "18: [tunnel t] ike-lifetime: expected seconds 60..604800, got '59'", PSK(0600) },
	{ "fragmentation = maybe", IKE_GOOD "fragmentation = maybe\n",
	  "18: [tunnel t] fragmentation: expected yes or no, got 'maybe'", PSK(0600) },
	{ "initial-contact = 1", IKE_GOOD "initial-contact = 1\n",
	  "18: [tunnel t] initial-contact: expected yes (a peer that starts again replaces its "
	  "IKE SAs) or no (identities shared: ignored), got '1'", PSK(0600) },
	{ "fragment-size too small", IKE_GOOD "fragment-size = 255\n",
	  "18: [tunnel t] fragment-size: expected bytes 256..65535, got '255'", PSK(0600) },
	{ "fragment-size without ike", GOOD "fragment-size = 576\n",
	  "20: [tunnel t] fragment-size: only with keying = ike", { 0 } },
	{ "ike-lifetime without ike", GOOD "ike-lifetime = 3600\n",
	  "20: [tunnel t] ike-lifetime: only with keying = ike", { 0 } },
	{ "duplicate keying", IKE_GOOD "keying = ike\n",
	  "18: [tunnel t] keying: duplicate key", PSK(0600) },
	/* [ha] (config_ha.c) */
	{ "ha", HA_GOOD, NULL, HA_KEY(0600) },
	{ "ha every key", HA_GOOD "node = gw-a.example\npriority = 254\n"
	  "virtual-address = outside 198.19.0.10/24\n"
	  "virtual-address = inside\t198.18.1.10/24   group b\ntakeover-rekey = never\n"
	  "dead-ms = 60000\nheartbeat-ms = 20000\n", NULL, HA_KEY(0600) },
	{ "ha first", HA_HEAD PORTS TUN_HEAD SPIS KEYS, NULL, HA_KEY(0600) },
	{ "ha ipv6", GOOD HA_SECT("[2001:db8:ff::1]:4510", "[2001:db8:ff::2]"), NULL,
	  HA_KEY(0600) },
	{ "ha one address, two ports", GOOD HA_SECT("127.0.0.1:4510", "127.0.0.1:4511"), NULL,
	  HA_KEY(0600) },
	{ "ha no local", GOOD "[ha]\npeer = 10.255.0.2\nsync-key = sync.key\n",
	  "20: [ha] missing required key 'local'", HA_KEY(0600) },
	{ "ha no peer", GOOD "[ha]\nlocal = 10.255.0.1\nsync-key = sync.key\n",
	  "20: [ha] missing required key 'peer'", HA_KEY(0600) },
	{ "ha no sync-key", GOOD "[ha]\nlocal = 10.255.0.1\npeer = 10.255.0.2\n",
	  "20: [ha] missing required key 'sync-key'", { 0 } },
	{ "ha empty", GOOD "[ha]\n", "20: [ha] missing required key 'local'", { 0 }, 3 },
	{ "ha twice", HA_GOOD "[ha]\n", "24: duplicate section [ha]", HA_KEY(0600) },
	{ "ha named", GOOD "[ha pair]\n", "20: [ha] takes no name, got 'pair'", { 0 } },
	{ "ha unknown key", HA_GOOD "priorty = 5\n",
	  "24: [ha] priorty: unknown key; did you mean priority?", HA_KEY(0600) },
	{ "ha node blank", HA_GOOD "node = gw a\n", "24: [ha] node: expected 1..31 printable "
	  "characters without blanks, got 'gw a'", HA_KEY(0600) },
	{ "ha node long", HA_GOOD "node = gw-a.a-rather-longer.example.org\n",
	  "24: [ha] node: expected 1..31 printable characters without blanks, got "
	  "'gw-a.a-rather-longer.example.org'", HA_KEY(0600) },
	{ "ha local bad", GOOD HA_SECT("10.255.0.300", "10.255.0.2"),
	  "21: [ha] local: " HA_ADDR_ERR "'10.255.0.300'", HA_KEY(0600) },
	{ "ha local port 0", GOOD HA_SECT("10.255.0.1:0", "10.255.0.2"),
	  "21: [ha] local: " HA_ADDR_ERR "'10.255.0.1:0'", HA_KEY(0600) },
	{ "ha local port big", GOOD HA_SECT("10.255.0.1:65536", "10.255.0.2"),
	  "21: [ha] local: " HA_ADDR_ERR "'10.255.0.1:65536'", HA_KEY(0600) },
	{ "ha local empty port", GOOD HA_SECT("10.255.0.1:", "10.255.0.2"),
	  "21: [ha] local: " HA_ADDR_ERR "'10.255.0.1:'", HA_KEY(0600) },
	{ "ha local any", GOOD HA_SECT("0.0.0.0", "10.255.0.2"),
	  "21: [ha] local: " HA_ADDR_ERR "'0.0.0.0'", HA_KEY(0600) },
	{ "ha ipv6 bare", GOOD HA_SECT("[2001:db8:ff::1]", "2001:db8:ff::2"),
	  "22: [ha] peer: " HA_ADDR_ERR "'2001:db8:ff::2'", HA_KEY(0600) },
	{ "ha ipv6 unclosed", GOOD HA_SECT("[2001:db8:ff::1", "[2001:db8:ff::2]"),
	  "21: [ha] local: " HA_ADDR_ERR "'[2001:db8:ff::1'", HA_KEY(0600) },
	{ "ha ipv6 after bracket", GOOD HA_SECT("[2001:db8:ff::1]4510", "[2001:db8:ff::2]"),
	  "21: [ha] local: " HA_ADDR_ERR "'[2001:db8:ff::1]4510'", HA_KEY(0600) },
	{ "ha ipv4 in brackets", GOOD HA_SECT("[10.255.0.1]:4510", "10.255.0.2"),
	  "21: [ha] local: " HA_ADDR_ERR "'[10.255.0.1]:4510'", HA_KEY(0600) },
	{ "ha families", GOOD HA_SECT("10.255.0.1", "[2001:db8:ff::2]:4510"),
	  "22: [ha] peer: [2001:db8:ff::2]:4510 is IPv6, local 10.255.0.1 is IPv4: one family",
	  HA_KEY(0600) },
	{ "ha peer is local", GOOD HA_SECT("10.255.0.1", "10.255.0.1:4510"),
	  "22: [ha] peer: 10.255.0.1:4510 is local's address and port: give the other node's",
	  HA_KEY(0600) },
	{ "ha local is virtual", GOOD HA_SECT("198.19.0.10", "198.19.0.11") "virtual-address = "
	  "outside 198.19.0.10/24\n", "21: [ha] local: 198.19.0.10 is a virtual-address (line "
	  "24), which moves: the sync channel needs each node's own address", HA_KEY(0600) },
	{ "ha sync-key mode", HA_GOOD, "23: [ha] sync-key: @DIR@/sync.key: mode 0640 lets "
	  "group or others access the key (chmod 600 it)", HA_KEY(0640) },
	{ "ha sync-key missing", HA_GOOD,
	  "23: [ha] sync-key: @DIR@/sync.key: No such file or directory", { 0 } },
	{ "ha sync-key short", HA_GOOD, "23: [ha] sync-key: @DIR@/sync.key" HA_KEY_LEN_ERR "62",
	  HA_KEY_TEXT("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcd\n") },
	{ "ha sync-key long", HA_GOOD, "23: [ha] sync-key: @DIR@/sync.key" HA_KEY_LEN_ERR "130",
	  HA_KEY_TEXT(HA_KEY_HEX HA_KEY_HEX "01\n") },
	{ "ha sync-key longest", HA_GOOD, NULL, HA_KEY_TEXT("  0x" HA_KEY_HEX HA_KEY_HEX "\n") },
	{ "ha sync-key odd", HA_GOOD, "23: [ha] sync-key: @DIR@/sync.key: bad hex: expected an "
	  "even, nonzero number of hex digits, got 65", HA_KEY_TEXT(HA_KEY_HEX "0") },
	{ "ha sync-key not hex", HA_GOOD, "23: [ha] sync-key: @DIR@/sync.key: bad hex: not a hex "
	  "digit at position 5", HA_KEY_TEXT("0123x56789abcdef0123456789abcdef0123456789abcdef"
					     "0123456789abcdef\n") },
	{ "ha sync-key two lines", HA_GOOD, "23: [ha] sync-key: @DIR@/sync.key: expected the key "
	  "as hex on one line", HA_KEY_TEXT("0123456789abcdef0123456789abcdef\n"
					    "0123456789abcdef0123456789abcdef\n") },
	{ "ha sync-key empty", HA_GOOD, "23: [ha] sync-key: @DIR@/sync.key: bad hex: expected "
	  "an even, nonzero number of hex digits, got 0", HA_KEY_TEXT("\n") },
	{ "ha priority 0", HA_GOOD "priority = 0\n", "24: [ha] priority: expected a VRRP "
	  "priority 1..254 (as in keepalived's vrrp_instance; 255 is an address owner's), got "
	  "'0'", HA_KEY(0600) },
	{ "ha priority 255", HA_GOOD "priority = 255\n", "24: [ha] priority: expected a VRRP "
	  "priority 1..254 (as in keepalived's vrrp_instance; 255 is an address owner's), got "
	  "'255'", HA_KEY(0600) },
	{ "ha priority 1", HA_GOOD "priority = 1\n", NULL, HA_KEY(0600) },
	{ "ha takeover-rekey word", HA_GOOD "takeover-rekey = sometimes\n",
	  "24: [ha] takeover-rekey: expected auto (rekey when the sync channel was down at "
	  "takeover), always or never, got 'sometimes'", HA_KEY(0600) },
	{ "ha takeover-rekey always", HA_GOOD "takeover-rekey = always\n", NULL, HA_KEY(0600) },
	{ "ha dead-ms small", HA_GOOD "dead-ms = 199\n",
	  "24: [ha] dead-ms: expected milliseconds 200..60000, got '199'", HA_KEY(0600) },
	{ "ha dead-ms big", HA_GOOD "dead-ms = 60001\n",
	  "24: [ha] dead-ms: expected milliseconds 200..60000, got '60001'", HA_KEY(0600) },
	{ "ha heartbeat-ms small", HA_GOOD "heartbeat-ms = 19\n",
	  "24: [ha] heartbeat-ms: " HA_MS_ERR "'19'", HA_KEY(0600) },
	{ "ha heartbeat-ms big", HA_GOOD "heartbeat-ms = 20001\n",
	  "24: [ha] heartbeat-ms: " HA_MS_ERR "'20001'", HA_KEY(0600) },
	{ "ha heartbeat-ms over dead-ms / 3", HA_GOOD "heartbeat-ms = 201\ndead-ms = 600\n",
	  "24: [ha] heartbeat-ms: 201 is more than dead-ms / 3 = 200 (three heartbeats at "
	  "least before the peer is declared gone)", HA_KEY(0600) },
	{ "ha heartbeat-ms at dead-ms / 3", HA_GOOD "dead-ms = 200\nheartbeat-ms = 66\n", NULL,
	  HA_KEY(0600) },
	{ "ha dead-ms under the default heartbeat", HA_GOOD "dead-ms = 299\n",
	  "24: [ha] dead-ms: 299 leaves no room for three heartbeats of 100 ms (heartbeat-ms's "
	  "default): give heartbeat-ms = 99 or less", HA_KEY(0600) },
	{ "ha dead-ms at the default heartbeat", HA_GOOD "dead-ms = 300\n", NULL, HA_KEY(0600) },
	/* one error for one mistake: a refused value is not compared with the other */
	{ "ha dead-ms refused, heartbeat-ms given", HA_GOOD "dead-ms = 100\nheartbeat-ms = 400\n",
	  "24: [ha] dead-ms: expected milliseconds 200..60000, got '100'", HA_KEY(0600) },
	{ "ha heartbeat-ms refused, dead-ms given", HA_GOOD "heartbeat-ms = 5\ndead-ms = 200\n",
	  "24: [ha] heartbeat-ms: " HA_MS_ERR "'5'", HA_KEY(0600) },
	{ "ha virtual-address alone", HA_GOOD "virtual-address = outside\n",
	  "24: [ha] virtual-address: " HA_VIP_ERR "'outside'", HA_KEY(0600) },
	{ "ha virtual-address grp", HA_GOOD "virtual-address = outside 198.19.0.10/24 grp a\n",
	  "24: [ha] virtual-address: " HA_VIP_ERR "'outside 198.19.0.10/24 grp a'",
	  HA_KEY(0600) },
	{ "ha virtual-address group without name", HA_GOOD "virtual-address = outside "
	  "198.19.0.10/24 group\n", "24: [ha] virtual-address: " HA_VIP_ERR "'outside "
	  "198.19.0.10/24 group'", HA_KEY(0600) },
	{ "ha virtual-address more", HA_GOOD "virtual-address = outside 198.19.0.10/24 group a "
	  "b\n", "24: [ha] virtual-address: " HA_VIP_ERR "'outside 198.19.0.10/24 group a b'",
	  HA_KEY(0600) },
	{ "ha virtual-address port name", HA_GOOD "virtual-address = out/side 198.19.0.10/24\n",
	  "24: [ha] virtual-address: 'out/side' is not a [port] name (1..31 characters of A-Z "
	  "a-z 0-9 - _ .)", HA_KEY(0600) },
	{ "ha virtual-address no length", HA_GOOD "virtual-address = outside 198.19.0.10\n",
	  "24: [ha] virtual-address: " HA_VIP_ADDR_ERR "'198.19.0.10'", HA_KEY(0600) },
	{ "ha virtual-address length 0", HA_GOOD "virtual-address = outside 198.19.0.10/0\n",
	  "24: [ha] virtual-address: " HA_VIP_ADDR_ERR "'198.19.0.10/0'", HA_KEY(0600) },
	{ "ha virtual-address group name", HA_GOOD "virtual-address = outside 198.19.0.10/24 "
	  "group a:b\n", "24: [ha] virtual-address: group: 'a:b' is not a name (1..31 "
	  "characters of A-Z a-z 0-9 - _ .: keepalived's vrrp_instance)", HA_KEY(0600) },
	{ "ha virtual-address twice", HA_GOOD "virtual-address = outside 198.19.0.10/24\n"
	  "virtual-address = inside 198.19.0.10/32 group b\n",
	  "25: [ha] virtual-address: 198.19.0.10 is already a virtual address (line 24)",
	  HA_KEY(0600) },
	{ "ha three groups", HA_GOOD "virtual-address = outside 198.19.0.10/24\n"
	  "virtual-address = outside 198.19.0.11/24 group b\n"
	  "virtual-address = inside 198.18.1.10/24 group b\n"
	  "virtual-address = inside 198.18.1.11/24 group c\n",
	  "27: [ha] virtual-address: a third group, c (dpvpn and b have addresses): at most 2, "
	  "each node master of one when both are active", HA_KEY(0600) },
	/* an IPv6 one: on a port with an IPv6 address; a tunnel's local then */
	{ "ha ipv6 virtual-address", PORTS46 TUN_TS6("2001:db8::10", "2001:db8::2") SPIS KEYS
	  HA_HEAD "virtual-address = outside 2001:db8::10/64\n"
	  "virtual-address = inside 2001:db8:1::10/64 group b\n", NULL, HA_KEY(0600) },
	{ "ha ipv6 virtual-address, no IPv6 on the port", HA_GOOD "virtual-address = outside "
	  "2001:db8::10/64\n", "24: [ha] virtual-address: 2001:db8::10 is IPv6 and [port "
	  "outside] has no IPv6 address of its own", HA_KEY(0600) },
	{ "ha ipv6 virtual-address, not the tunnel's port", PORTS46 TUN_TS6("2001:db8:1::10",
	  "2001:db8::2") SPIS KEYS HA_HEAD "virtual-address = inside 2001:db8:1::10/64\n",
	  "11: [tunnel t] local: 2001:db8:1::10 is not the address of an outside port (nor an "
	  "[ha] virtual-address on one)", HA_KEY(0600) },
	{ "ha virtual-address no port", HA_GOOD "virtual-address = outsid 198.19.0.10/24\n",
	  "24: [ha] virtual-address: no [port] named 'outsid'", HA_KEY(0600) },
	{ "ha virtual-address port's own", HA_GOOD "virtual-address = outside 198.18.1.1/24\n",
	  "24: [ha] virtual-address: 198.18.1.1 is an address of [port inside] (a port's own "
	  "stays with its node)", HA_KEY(0600) },
	{ "ha virtual-address in extra-addresses", PORTS "extra-addresses = 198.19.128.0/17\n"
	  TUN_HEAD SPIS KEYS HA_HEAD "virtual-address = outside 198.19.128.7/17\n",
	  "25: [ha] virtual-address: 198.19.128.7 is an address of [port outside] (a port's own "
	  "stays with its node)", HA_KEY(0600) },
	/* a tunnel's local may be an outside port's virtual address, not an inside one's */
	{ "ha virtual address as local", PORTS TUN("t", "198.19.0.10") SPIS KEYS HA_HEAD
	  "virtual-address = outside 198.19.0.10/24\n", NULL, HA_KEY(0600) },
	{ "ha virtual address as local, v6", PORTS46 TUN_TS4("2001:db8::10", "2001:db8::2")
	  SPIS KEYS HA_HEAD "virtual-address = outside 2001:db8::10/64\n", NULL, HA_KEY(0600) },
	{ "ha inside virtual address as local", PORTS TUN("t", "198.18.1.10") SPIS KEYS HA_HEAD
	  "virtual-address = inside 198.18.1.10/24\n", "11: [tunnel t] local: 198.18.1.10 is "
	  "not the address of an outside port (nor an [ha] virtual-address on one)",
	  HA_KEY(0600) },
};

#define N_CASES	(sizeof(cases) / sizeof(cases[0]))

static char tmpdir[] = "/tmp/test_config.XXXXXX";

static void write_file(const char *path, const char *text, mode_t mode)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(chmod(path, mode), 0);
}

/* Expected message with @DIR@ replaced by the temp dir. */
static void expand(const char *in, char *out, size_t len)
{
	const char *at = strstr(in, "@DIR@");

	if (at)
		snprintf(out, len, "%.*s%s%s", (int)(at - in), in, tmpdir, at + 5);
	else
		snprintf(out, len, "%s", in);
}

static void assert_no_key_text(const struct cfg *cfg)
{
	for (size_t i = 0; i < cfg->n_errors; i++) {
		assert_null(strstr(cfg->errors[i], "0123456789abcdef"));
		assert_null(strstr(cfg->errors[i], "fedcba98"));
	}
}

static void run_case(const struct tcase *tc, const char *path)
{
	char want[2048], msg[1024];
	struct cfg cfg;
	int rc = cfg_load(&cfg, path);

	cfg_print_errors(&cfg, stderr);
	assert_no_key_text(&cfg);
	if (!tc->error) {
		assert_int_equal(rc, 0);
		assert_int_equal(cfg.n_errors, 0);
	} else {
		expand(tc->error, msg, sizeof(msg));
		snprintf(want, sizeof(want), "%s:%s", path, msg);
		assert_int_equal(rc, -1);
		assert_int_equal(cfg.n_errors, tc->n_errors ? tc->n_errors : 1);
		assert_string_equal(cfg.errors[0], want);
	}
	cfg_free(&cfg);
}

static void test_case(void **state)
{
	const struct tcase *tc = *state;
	char path[64], kpath[64];

	snprintf(path, sizeof(path), "%s/test.conf", tmpdir);
	write_file(path, tc->text, tc->conf_mode ? tc->conf_mode : 0600);
	if (tc->kf.name) {
		snprintf(kpath, sizeof(kpath), "%s/%s", tmpdir, tc->kf.name);
		write_file(kpath, tc->kf.text, tc->kf.mode);
	}
	run_case(tc, path);
	if (tc->kf.name)
		unlink(kpath);
	unlink(path);
}

/* A key file owned by someone else is refused (needs root to chown). */
static void test_keyfile_owner(void **state)
{
	char path[64], kpath[64], want[512];
	struct cfg cfg;

	(void)state;
	if (geteuid() != 0)
		skip();
	snprintf(path, sizeof(path), "%s/owner.conf", tmpdir);
	snprintf(kpath, sizeof(kpath), "%s/nobody.hex", tmpdir);
	write_file(path, PORTS TUN_HEAD SPIS "out-key = " KEY20 "\nin-key-file = nobody.hex\n",
		   0600);
	write_file(kpath, KEY20B, 0600);
	assert_int_equal(chown(kpath, 65534, 65534), 0);
	assert_int_equal(cfg_load(&cfg, path), -1);
	snprintf(want, sizeof(want), "%s:19: [tunnel t] in-key-file: %s: owned by uid 65534, "
		 "not by root or uid 0", path, kpath);
	assert_int_equal(cfg.n_errors, 1);
	assert_string_equal(cfg.errors[0], want);
	cfg_free(&cfg);
	unlink(kpath);
	unlink(path);
}

/* A config owned by someone else is refused, whatever its mode (needs root). */
static void test_config_owner(void **state)
{
	char path[64], want[512];
	struct cfg cfg;

	(void)state;
	if (geteuid() != 0)
		skip();
	snprintf(path, sizeof(path), "%s/theirs.conf", tmpdir);
	write_file(path, PORTS, 0600);
	assert_int_equal(chown(path, 65534, 65534), 0);
	assert_int_equal(cfg_load(&cfg, path), -1);
	snprintf(want, sizeof(want), "%s: owned by uid 65534, not by root or uid 0: refused",
		 path);
	assert_int_equal(cfg.n_errors, 1);
	assert_string_equal(cfg.errors[0], want);
	cfg_free(&cfg);
	unlink(path);
}

/*
 * Key files are judged by the file actually opened: a symlink to a file
 * others may read is refused, one to a private file is followed.
 */
static void test_keyfile_symlink(void **state)
{
	char path[64], kpath[64], link[64], want[512];
	struct cfg cfg;

	(void)state;
	snprintf(path, sizeof(path), "%s/link.conf", tmpdir);
	snprintf(kpath, sizeof(kpath), "%s/target.hex", tmpdir);
	snprintf(link, sizeof(link), "%s/link.hex", tmpdir);
	write_file(path, PORTS TUN_HEAD SPIS "out-key = " KEY20 "\nin-key-file = link.hex\n",
		   0600);
	write_file(kpath, KEY20B, 0644);
	assert_int_equal(symlink("target.hex", link), 0);
	assert_int_equal(cfg_load(&cfg, path), -1);
	snprintf(want, sizeof(want), "%s:19: [tunnel t] in-key-file: %s: mode 0644 lets group "
		 "or others access the key (chmod 600 it)", path, link);
	assert_int_equal(cfg.n_errors, 1);
	assert_string_equal(cfg.errors[0], want);
	cfg_free(&cfg);
	assert_int_equal(chmod(kpath, 0600), 0);
	assert_int_equal(cfg_load(&cfg, path), 0);
	cfg_free(&cfg);
	unlink(link);
	unlink(kpath);
	unlink(path);
}

/*
 * conf (written as NAME.conf) names key file LINK, a symbolic link to a
 * private file holding key: refused at where ("LINE: [SECTION] KEY") with
 * the link's name; the same file under that name: taken.
 */
static void symlink_refused(const char *name, const char *conf, const char *key,
			    const char *link_name, const char *where)
{
	char path[64], kpath[64], link[64], want[512];
	struct cfg cfg;

	snprintf(path, sizeof(path), "%s/%s.conf", tmpdir, name);
	snprintf(kpath, sizeof(kpath), "%s/target.key", tmpdir);
	snprintf(link, sizeof(link), "%s/%s", tmpdir, link_name);
	write_file(path, conf, 0600);
	write_file(kpath, key, 0600);
	assert_int_equal(symlink("target.key", link), 0);
	assert_int_equal(cfg_load(&cfg, path), -1);
	snprintf(want, sizeof(want), "%s:%s: %s: a symbolic link: refused (name the file "
		 "itself)", path, where, link);
	assert_int_equal(cfg.n_errors, 1);
	assert_string_equal(cfg.errors[0], want);
	cfg_free(&cfg);
	unlink(link);
	assert_int_equal(rename(kpath, link), 0);
	assert_int_equal(cfg_load(&cfg, path), 0);
	cfg_free(&cfg);
	unlink(link);
	unlink(path);
}

/*
 * Unlike key files, a PSK file may not be a symbolic link, even to a private
 * file: O_NOFOLLOW.
 */
static void test_psk_symlink(void **state)
{
	(void)state;
	symlink_refused("psklink", IKE_GOOD, PSK_TEXT, "a.psk", "17: [tunnel t] psk-file");
}

/* What the parser stores for keying = ike, its defaults, and the wipe. */
static void test_ike_values(void **state)
{
	static const uint8_t v6[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 2 };
	static const uint8_t v4[4] = { 198, 19, 0, 1 }, keyid[3] = { 1, 2, 0xab };
	static const uint8_t zero[CFG_PSK_MAX];
	char path[64], kpath[64];
	const struct cfg_ike *a, *b;
	struct cfg cfg;

	(void)state;
	snprintf(path, sizeof(path), "%s/ike.conf", tmpdir);
	snprintf(kpath, sizeof(kpath), "%s/a.psk", tmpdir);
	write_file(path, IKE_GOOD "local-id = fqdn:gw-a.example\nremote-id = ip:2001:db8::2\n"
		   "ike-proposals = " P256X ", " P128E "\nstart = no\ndpd = 0\n"
		   "fragmentation = no\nfragment-size = 576\ninitial-contact = no\n"
		   "esp-proposals = aes256gcm16-ecp384-esn, aes128-aes256-sha1-sha256-modp2048-noesn, "
		   "chacha20poly1305-esn-noesn\n"
		   "[tunnel u]\nlocal = 198.19.0.1\nremote = 198.19.0.3\n"
		   "local-ts = 198.18.1.0/24\nremote-ts = 198.18.3.0/24\ncipher = aes128-gcm\n"
		   IKE "local-id = email:a@b\nremote-id = keyid:0x0102ab\n"
		   "[tunnel v]\nlocal = 198.19.0.1\nremote = 198.19.0.4\n"
		   "local-ts = 198.18.1.0/24\nremote-ts = 198.18.4.0/24\ncipher = aes128-gcm\n"
		   "local-id = ip:198.19.0.1\n", 0600);
	write_file(kpath, PSK_TEXT, 0600);
	/* v: local-id without ike, and its SPIs and keys missing */
	assert_int_equal(cfg_load(&cfg, path), -1);
	assert_int_equal(cfg.n_errors, 5);
	a = &cfg.tunnels[0]->ike;
	b = &cfg.tunnels[1]->ike;
	assert_int_equal(a->on, 1);
	assert_int_equal(a->line, 16);
	assert_int_equal(a->psk_line, 17);
	assert_int_equal(a->psk_len, strlen(PSK_TEXT) - 1);	/* the newline dropped */
	assert_memory_equal(a->psk, PSK_TEXT, a->psk_len);
	assert_int_equal(a->local_id_type, 2);
	assert_int_equal(a->local_id_len, strlen("gw-a.example"));
	assert_memory_equal(a->local_id, "gw-a.example", a->local_id_len);
	assert_int_equal(a->remote_id_type, 5);
	assert_int_equal(a->remote_id_len, 16);
	assert_memory_equal(a->remote_id, v6, 16);
	assert_int_equal(a->n_props, 2);
	assert_int_equal(a->props[0].n_encr, 1);
	assert_int_equal(a->props[0].encr[0], 20);
	assert_int_equal(a->props[0].encr_bits[0], 256);
	assert_int_equal(a->props[0].n_integ, 0);
	assert_int_equal(a->props[0].prf[0], 5);
	assert_int_equal(a->props[0].dh[0], 31);
	assert_int_equal(a->props[1].encr_bits[0], 128);
	assert_int_equal(a->props[1].dh[0], 19);
	/* esp-proposals: the PFS group, several of a kind in order, ChaCha20 */
	assert_int_equal(a->n_esp, 3);
	assert_int_equal(a->esp[0].encr_bits[0], 256);
	assert_int_equal(a->esp[0].n_dh, 1);
	assert_int_equal(a->esp[0].dh[0], 20);
	assert_int_equal(a->esp[1].n_encr, 2);
	assert_int_equal(a->esp[1].encr[1], 12);
	assert_int_equal(a->esp[1].encr_bits[1], 256);
	assert_int_equal(a->esp[1].n_integ, 2);
	assert_int_equal(a->esp[1].integ[0], 2);
	assert_int_equal(a->esp[1].integ[1], 12);
	assert_int_equal(a->esp[1].n_prf, 0);
	assert_int_equal(a->esp[1].dh[0], 14);
	assert_int_equal(a->esp[2].encr[0], 28);
	/* ESN: esn, noesn, both, in the proposals (a mask) */
	assert_int_equal(a->esp[0].esn, 2);
	assert_int_equal(a->esp[1].esn, 1);
	assert_int_equal(a->esp[2].esn, 3);
	assert_int_equal(a->start, 0);
	assert_int_equal(a->dpd_seconds, 0);
	assert_int_equal(a->no_frag, 1);
	assert_int_equal(a->frag_size, 576);
	assert_int_equal(a->no_initial_contact, 1);
	assert_int_equal(cfg.tunnels[0]->out.spi, 0);
	/* u: the defaults */
	assert_int_equal(b->local_id_type, 3);
	assert_memory_equal(b->local_id, "a@b", 3);
	assert_int_equal(b->remote_id_type, 11);
	assert_int_equal(b->remote_id_len, 3);
	assert_memory_equal(b->remote_id, keyid, 3);
	/* strongSwan 5.9's default: classic, then AEAD, each with every group we have */
	assert_int_equal(b->n_props, 2);
	assert_int_equal(b->props[0].encr[0], 12);
	assert_int_equal(b->props[0].encr_bits[1], 256);
	assert_int_equal(b->props[0].n_integ, 3);
	assert_int_equal(b->props[0].n_prf, 3);
	assert_int_equal(b->props[0].n_dh, 4);
	assert_int_equal(b->props[0].dh[0], 31);	/* charon 5.9.8's order */
	assert_int_equal(b->props[0].dh[3], 14);
	assert_int_equal(b->props[1].encr[0], 20);
	assert_int_equal(b->props[1].n_integ, 0);
	assert_int_equal(b->props[1].prf[2], 7);
	assert_int_equal(b->n_esp, 0);
	assert_int_equal(b->start, 1);
	assert_int_equal(b->dpd_seconds, CFG_DPD_DEFAULT);
	assert_int_equal(b->no_frag, 0);			/* fragmentation = yes */
	assert_int_equal(b->no_initial_contact, 0);		/* initial-contact = yes */
	assert_int_equal(b->frag_size, CFG_IKE_FRAG_SIZE);	/* 1280 */
	/* v: static, nothing of IKE kept */
	assert_int_equal(cfg.tunnels[2]->ike.on, 0);
	assert_int_equal(cfg.tunnels[2]->ike.local_id_type, 0);
	cfg_wipe_keys(&cfg);
	assert_memory_equal(a->psk, zero, sizeof(zero));
	assert_memory_equal(b->psk, zero, sizeof(zero));
	cfg_free(&cfg);
	/* an explicit IPv4 identity is kept as on the wire */
	write_file(path, IKE_GOOD "local-id = ip:198.19.0.1\n", 0600);
	assert_int_equal(cfg_load(&cfg, path), 0);
	assert_int_equal(cfg.tunnels[0]->ike.local_id_type, 1);
	assert_int_equal(cfg.tunnels[0]->ike.local_id_len, 4);
	assert_memory_equal(cfg.tunnels[0]->ike.local_id, v4, 4);
	assert_int_equal(cfg.tunnels[0]->ike.remote_id_type, 0);
	cfg_free(&cfg);
	unlink(kpath);
	unlink(path);
}

/* Every error is reported, in line order. */
static void test_many_errors(void **state)
{
	char path[256], want[512];
	struct cfg cfg;

	(void)state;
	snprintf(path, sizeof(path), "%s/many.conf", tmpdir);
	write_file(path, "[port a]\nid = x\nrole = up\n[zone z]\nfoo\n", 0644);
	assert_int_equal(cfg_load(&cfg, path), -1);
	assert_int_equal(cfg.n_errors, 5);
	snprintf(want, sizeof(want), "%s:1: [port a] missing required key 'address'", path);
	assert_string_equal(cfg.errors[0], want);
	assert_non_null(strstr(cfg.errors[1], ":2: [port a] id: "));
	assert_non_null(strstr(cfg.errors[2], ":3: [port a] role: "));
	assert_non_null(strstr(cfg.errors[3], ":4: unknown section type 'zone'"));
	assert_non_null(strstr(cfg.errors[4], ":5: expected 'key = value'"));
	cfg_free(&cfg);
	unlink(path);
}

/* [routes]: ECMP by repeating a prefix (at most 8), port routes, [route NAME] tunnel =. */
static void test_routes(void **state)
{
	char path[256], text[4096];
	const struct cfg_route *r;
	struct cfg cfg;
	int n;

	(void)state;
	snprintf(path, sizeof(path), "%s/routes.conf", tmpdir);
	write_file(path, PORTS RTUN("r1", "0x1001", "0x2001") RTUN("r2", "0x1002", "0x2002")
		   "rpf = off\n[routes]\nroute = 10.9.0.0/16 via tunnel r1\n"
		   "route = 2001:db8:9::/48 via tunnel r2\n"
		   "route = 10.9.0.0/16 via tunnel r2\n"
		   "route = 192.0.2.0/24 via 198.19.0.254 port outside\n"
		   "[route six]\ndst = 2001:db8:8::/48\ntunnel = r2, r1\n", 0600);
	assert_int_equal(cfg_load(&cfg, path), 0);
	assert_true(cfg.tunnels[0]->route && cfg.tunnels[1]->route);
	assert_int_equal(cfg.tunnels[0]->rpf, DPVPN_RPF_LOOSE);	/* the default */
	assert_int_equal(cfg.tunnels[1]->rpf, DPVPN_RPF_OFF);
	assert_int_equal(cfg.tunnels[0]->local_ts.addr.family, 0);
	assert_int_equal(cfg.n_routes, 4);
	r = &cfg.routes[0];
	assert_int_equal(r->n_tunnels, 2);			/* ECMP, in order */
	assert_string_equal(r->tunnels[0], "r1");
	assert_string_equal(r->tunnels[1], "r2");
	assert_int_equal(cfg.routes[1].n_tunnels, 1);
	assert_int_equal(cfg.routes[1].dst.addr.family, DPVPN_AF_INET6);
	assert_int_equal(cfg.routes[2].n_tunnels, 0);		/* out a port */
	assert_int_equal(cfg.routes[2].port_id, 1);
	assert_int_equal(cfg.routes[3].n_tunnels, 2);
	assert_string_equal(cfg.routes[3].tunnels[0], "r2");
	cfg_free(&cfg);
	/* nine tunnels for one prefix: the ninth refused */
	n = snprintf(text, sizeof(text), "%s[routes]\n", RGOOD);
	for (int i = 0; i < 9; i++)
		n += snprintf(text + n, sizeof(text) - (size_t)n,
			      "route = 10.9.0.0/16 via tunnel r1x%d\n", i);
	write_file(path, text, 0600);
	assert_int_equal(cfg_load(&cfg, path), -1);
	assert_non_null(strstr(cfg.errors[cfg.n_errors - 1],
			       ":28: [routes] route: more than 8 tunnels for one prefix (ECMP)"));
	cfg_free(&cfg);
	unlink(path);
}

/* Selector lists: the order kept, the first entry where a single prefix was. */
static void test_ts_lists(void **state)
{
	const struct cfg_tunnel *t;
	char path[256];
	struct cfg cfg;

	(void)state;
	snprintf(path, sizeof(path), "%s/lists.conf", tmpdir);
	write_file(path, PORTS TUNA("198.19.0.1", "198.19.0.2", "198.18.1.0/24",
				    "10.2.0.0/16, 10.3.0.0/24,10.4.0.0/30") SPIS KEYS, 0600);
	assert_int_equal(cfg_load(&cfg, path), 0);
	t = cfg.tunnels[0];
	assert_int_equal(cfg_tunnel_n_ts(t, true), 1);
	assert_int_equal(cfg_tunnel_n_ts(t, false), 3);
	assert_int_equal(t->remote_ts.addr.v4, 0x0a020000);
	assert_int_equal(cfg_tunnel_ts(t, false, 1)->addr.v4, 0x0a030000);
	assert_int_equal(cfg_tunnel_ts(t, false, 1)->len, 24);
	assert_int_equal(cfg_tunnel_ts(t, false, 2)->addr.v4, 0x0a040000);
	assert_int_equal(cfg_tunnel_ts(t, false, 2)->len, 30);
	assert_int_equal(cfg_tunnel_ts(t, true, 0)->addr.v4, 0xc6120100);
	cfg_free(&cfg);
	unlink(path);
}

/* Leave byte b in the stack below the caller (what a parser's locals start as). */
static __attribute__((noinline)) void dirty_stack(uint8_t b)
{
	volatile uint8_t junk[65536];

	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = b;
}

/*
 * A tunnel parsed twice is the same bytes (a reload compares them whole,
 * inst_tunnel_same): no stack garbage in the selectors' padding, whatever
 * the stack held (parse_ts_list once copied its uninitialised list[] and a
 * reload saw every keying = ike tunnel changed).
 */
static void test_ts_same_bytes(void **state)
{
	struct cfg a, b;
	char path[256];

	(void)state;
	snprintf(path, sizeof(path), "%s/twice.conf", tmpdir);
	write_file(path, PORTS TUNA("198.19.0.1", "198.19.0.2", "198.18.1.0/24",
				    "10.2.0.0/16, 10.3.0.0/24") SPIS KEYS, 0600);
	dirty_stack(0x5a);
	assert_int_equal(cfg_load(&a, path), 0);
	dirty_stack(0xa5);
	assert_int_equal(cfg_load(&b, path), 0);
	assert_memory_equal(&a.tunnels[0]->local_ts, &b.tunnels[0]->local_ts,
			    sizeof(a.tunnels[0]->local_ts));
	assert_memory_equal(&a.tunnels[0]->remote_ts, &b.tunnels[0]->remote_ts,
			    sizeof(a.tunnels[0]->remote_ts));
	assert_memory_equal(a.tunnels[0]->more_rts, b.tunnels[0]->more_rts,
			    sizeof(a.tunnels[0]->more_rts));
	cfg_free(&a);
	cfg_free(&b);
	unlink(path);
}

/* ike-sa: the child takes the parent's IKE settings, keeps its own CHILD_SA ones. */
static void test_ike_sa_inherits(void **state)
{
	const struct cfg_tunnel *t, *k;
	char path[256], psk[256];
	struct cfg cfg;

	(void)state;
	snprintf(path, sizeof(path), "%s/kid.conf", tmpdir);
	snprintf(psk, sizeof(psk), "%s/a.psk", tmpdir);
	write_file(psk, PSK_TEXT, 0600);
	write_file(path, IKE_GOOD "dpd = 7\nencap = udp\n" KID("t")
		   "esp-proposals = aes256gcm16-ecp256\nstart = no\n", 0600);
	assert_int_equal(cfg_load(&cfg, path), 0);
	t = cfg.tunnels[0];
	k = cfg.tunnels[1];
	assert_string_equal(k->ike.parent, "t");
	assert_memory_equal(&k->local, &t->local, sizeof(t->local));
	assert_memory_equal(&k->remote, &t->remote, sizeof(t->remote));
	assert_int_equal(k->udp, 1);
	assert_int_equal(k->ike.dpd_seconds, 7);
	assert_int_equal(k->ike.psk_len, t->ike.psk_len);
	assert_int_equal(k->ike.n_props, t->ike.n_props);
	assert_int_equal(k->ike.n_esp, 1);
	assert_int_equal(k->ike.esp[0].dh[0], 19);
	assert_int_equal(k->ike.start, 0);
	assert_int_equal(t->ike.start, 1);
	assert_int_equal(k->local_ts.addr.v4, 0x0a010000);
	cfg_free(&cfg);
	unlink(path);
	unlink(psk);
}

/* What the parser stores for IPv6: families, bytes, lengths. */
static void test_ipv6_values(void **state)
{
	static const uint8_t out6[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 1 };
	static const uint8_t peer6[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 2 };
	static const uint8_t net6[16] = { 0x20, 0x01, 0x0d, 0xb8, 0, 0x99 };
	static const uint8_t ll[16] = { 0xfe, 0x80, [15] = 1 };
	const struct cfg_tunnel *t;
	char path[256];
	struct cfg cfg;

	(void)state;
	snprintf(path, sizeof(path), "%s/v6.conf", tmpdir);
	write_file(path, PORTS46 TUN_TS4("2001:db8::1", "2001:db8::2") SPIS KEYS
		   "[route r]\ndst = 2001:db8:99::/48\nport = outside\nvia = fe80::1\n"
		   "[port v6]\nid = 2\nrole = inside\naddress = 2001:db8:3::1/64\n"
		   "[neighbor n]\nport = v6\naddress = 2001:db8:3::2\nmac = 02:00:00:00:00:03\n",
		   0600);
	assert_int_equal(cfg_load(&cfg, path), 0);
	assert_int_equal(cfg.n_ports, 3);
	assert_int_equal(cfg.ports[1].addr4.addr.family, DPVPN_AF_INET);
	assert_int_equal(cfg.ports[1].addr4.addr.v4, 0xc6130001);	/* 198.19.0.1 */
	assert_int_equal(cfg.ports[1].addr4.len, 24);
	assert_int_equal(cfg.ports[1].addr6.addr.family, DPVPN_AF_INET6);
	assert_memory_equal(cfg.ports[1].addr6.addr.v6, out6, 16);
	assert_int_equal(cfg.ports[1].addr6.len, 64);
	assert_int_equal(cfg.ports[2].addr4.addr.family, 0);
	assert_int_equal(cfg.ports[2].addr6.addr.family, DPVPN_AF_INET6);
	t = cfg.tunnels[0];
	assert_int_equal(t->local.family, DPVPN_AF_INET6);
	assert_memory_equal(t->local.v6, out6, 16);
	assert_memory_equal(t->remote.v6, peer6, 16);
	assert_int_equal(t->local_ts.addr.family, DPVPN_AF_INET);
	assert_int_equal(t->local_ts.addr.v4, 0xc6120100);	/* 198.18.1.0 */
	assert_int_equal(t->remote_ts.len, 24);
	assert_int_equal(t->n_more_lts + t->n_more_rts, 0);
	assert_int_equal(cfg_tunnel_n_ts(t, true), 1);
	assert_int_equal(cfg.routes[0].dst.addr.family, DPVPN_AF_INET6);
	assert_memory_equal(cfg.routes[0].dst.addr.v6, net6, 16);
	assert_int_equal(cfg.routes[0].dst.len, 48);
	assert_int_equal(cfg.routes[0].via.family, DPVPN_AF_INET6);
	assert_memory_equal(cfg.routes[0].via.v6, ll, 16);
	assert_int_equal(cfg.neighs[0].addr.family, DPVPN_AF_INET6);
	assert_int_equal(cfg.neighs[0].port_id, 2);
	cfg_free(&cfg);
	unlink(path);
}

/* [neighbour] is [neighbor]: both spellings give static entries, ports resolved. */
static void test_neighbour_spellings(void **state)
{
	char path[256];
	struct cfg cfg;

	(void)state;
	snprintf(path, sizeof(path), "%s/neigh.conf", tmpdir);
	write_file(path, PORTS "[neighbor us]\nport = outside\naddress = 198.19.0.2\n"
		   "mac = 02:00:00:00:00:02\n[neighbour uk]\nport = inside\n"
		   "address = 198.18.1.2\nmac = 02:00:00:00:00:03\n", 0600);
	assert_int_equal(cfg_load(&cfg, path), 0);
	assert_int_equal(cfg.n_neighs, 2);
	assert_string_equal(cfg.neighs[0].name, "us");
	assert_int_equal(cfg.neighs[0].port_id, 1);
	assert_string_equal(cfg.neighs[1].name, "uk");
	assert_int_equal(cfg.neighs[1].port_id, 0);
	assert_int_equal(cfg.neighs[1].addr.v4, 0xc6120102);	/* 198.18.1.2 */
	assert_int_equal(cfg.neighs[1].mac[5], 3);
	cfg_free(&cfg);
	unlink(path);
}

static void test_lab(const char *name, uint32_t out_spi, uint8_t first_key_byte)
{
	char path[512];
	struct cfg cfg;
	const struct cfg_tunnel *t;
	static const uint8_t zero[CFG_KEYMAT_MAX];

	char src[512], *text;
	FILE *f;
	long n;

	/* a private copy: git keeps the lab configs 0644, and they hold keys */
	snprintf(src, sizeof(src), "%s/configs/%s", SOURCE_ROOT, name);
	f = fopen(src, "r");
	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	rewind(f);
	text = calloc(1, (size_t)n + 1);
	assert_non_null(text);
	assert_int_equal(fread(text, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	write_file(path, text, 0600);
	free(text);
	assert_int_equal(cfg_load(&cfg, path), 0);
	assert_int_equal(cfg.n_ports, 2);
	assert_int_equal(cfg.n_tunnels, 1);
	t = cfg.tunnels[0];
	assert_int_equal(t->out.spi, out_spi);
	assert_int_equal(t->alg, DPVPN_ALG_AES128_GCM);
	assert_int_equal(t->out.keymat_len, 20);
	assert_int_equal(t->out.keymat[0], first_key_byte);
	assert_int_equal(t->replay_window, 1024);
	assert_int_equal(cfg.ports[1].role, DPVPN_ROLE_OUTSIDE);
	cfg_wipe_keys(&cfg);
	assert_memory_equal(t->out.keymat, zero, sizeof(zero));
	assert_memory_equal(t->in.keymat, zero, sizeof(zero));
	cfg_free(&cfg);
	unlink(path);
}

static void test_lab_a(void **state)
{
	(void)state;
	test_lab("lab-a.conf", 0x1001, 0x01);
}

static void test_lab_b(void **state)
{
	(void)state;
	test_lab("lab-b.conf", 0x2001, 0xfe);
}

/* ---- auth = pubkey: fixtures of testdata/make_pki.sh ---- */

/* Copy testdata/pki/name into the temp dir as name, with mode. */
static void pki_fixture(const char *name, mode_t mode)
{
	char src[512], dst[128], text[8192];
	size_t n;
	FILE *f;

	snprintf(src, sizeof(src), "%s/control/testdata/pki/%s", SOURCE_ROOT, name);
	f = fopen(src, "r");
	assert_non_null(f);
	n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = '\0';
	snprintf(dst, sizeof(dst), "%s/%s", tmpdir, name);
	write_file(dst, text, mode);
}

/* Lines 16-20 of a pubkey tunnel; line 21 on: more. */
#define PUBKEY(cert, key, ca) "keying = ike\nauth = pubkey\ncert = " cert \
	"\nprivate-key = " key "\nca = " ca "\n"

/* Load PORTS head text: no error (want NULL), or want as the first. */
static void pki_case(const char *head, const char *text, const char *want, struct cfg *keep)
{
	char path[128], conf[2048], msg[1024], full[2048];
	struct cfg cfg;
	int rc;

	snprintf(path, sizeof(path), "%s/pki.conf", tmpdir);
	snprintf(conf, sizeof(conf), "%s%s%s", PORTS, head, text);
	write_file(path, conf, 0600);
	rc = cfg_load(&cfg, path);
	cfg_print_errors(&cfg, stderr);
	if (want == NULL) {
		assert_int_equal(rc, 0);
	} else {
		expand(want, msg, sizeof(msg));
		snprintf(full, sizeof(full), "%s:%s", path, msg);
		assert_int_equal(rc, -1);
		assert_string_equal(cfg.errors[0], full);
		for (size_t i = 0; i < cfg.n_errors; i++)
			assert_null(strstr(cfg.errors[i], "PRIVATE KEY"));
	}
	if (keep != NULL)
		*keep = cfg;
	else
		cfg_free(&cfg);
	unlink(path);
}

static void pubkey_case(const char *text, const char *want, struct cfg *keep)
{
	pki_case(TUN_HEAD, text, want, keep);
}

static void test_pubkey(void **state)
{
	static const uint8_t zero[32];
	const struct cfg_tunnel *t;
	char dir[128], lnk[128], src[128];
	struct cfg cfg;

	(void)state;
	pki_fixture("gw.pem", 0644);
	pki_fixture("ca.pem", 0644);
	pki_fixture("crl.pem", 0644);
	pki_fixture("gw.key", 0600);
	pki_fixture("other.key", 0600);
	pubkey_case(PUBKEY("gw.pem", "gw.key", "ca.pem") "crl = crl.pem\n"
		    "remote-id = dn:CN=*, O=Example\n", NULL, &cfg);
	t = cfg.tunnels[0];
	assert_int_equal(t->ike.auth, CFG_AUTH_PUBKEY);
	assert_int_equal(t->ike.local_id_type, 9);		/* the certificate's subject */
	assert_true(t->ike.local_id_len > 20);
	assert_int_equal(t->ike.remote_id_type, 9);
	assert_memory_not_equal(t->ike.pki.digest, zero, sizeof(zero));
	cfg_free(&cfg);
	pubkey_case(PUBKEY("gw.pem", "gw.key", "ca.pem") "remote-id = fqdn:*.example.org\n"
		    "local-id = fqdn:gw.example.org\n", NULL, NULL);
	/* ca = a directory of CA files. */
	snprintf(dir, sizeof(dir), "%s/cas", tmpdir);
	assert_int_equal(mkdir(dir, 0755), 0);
	snprintf(lnk, sizeof(lnk), "%s/cas/a.pem", tmpdir);
	snprintf(src, sizeof(src), "%s/ca.pem", tmpdir);
	assert_int_equal(link(src, lnk), 0);
	pubkey_case(PUBKEY("gw.pem", "gw.key", "cas"), NULL, NULL);
	unlink(lnk);
	rmdir(dir);
	pubkey_case(PUBKEY("gw.pem", "gw.key", "cas"),
		    "20: [tunnel t] @DIR@/cas: No such file or directory", NULL);
	/* The private key's file is a key file. */
	snprintf(lnk, sizeof(lnk), "%s/other.key", tmpdir);
	assert_int_equal(chmod(lnk, 0640), 0);
	pubkey_case(PUBKEY("gw.pem", "other.key", "ca.pem"),
		    "19: [tunnel t] @DIR@/other.key: mode 0640 lets group or others access the "
		    "key (chmod 600 it)", NULL);
	assert_int_equal(chmod(lnk, 0600), 0);
	pubkey_case(PUBKEY("gw.pem", "other.key", "ca.pem"),
		    "19: [tunnel t] @DIR@/other.key: private key: not the key of the certificate "
		    "(subject 'CN=gw.example.org, O=Example', serial 07)", NULL);
	snprintf(lnk, sizeof(lnk), "%s/link.key", tmpdir);
	assert_int_equal(symlink("gw.key", lnk), 0);
	pubkey_case(PUBKEY("gw.pem", "link.key", "ca.pem"),
		    "19: [tunnel t] @DIR@/link.key: a symbolic link: refused (name the file "
		    "itself)", NULL);
	unlink(lnk);
	/* Files that are not what they should be. */
	pubkey_case(PUBKEY("gw.key", "gw.key", "ca.pem"),
		    "18: [tunnel t] @DIR@/gw.key: certificate: no PEM or DER certificate, or "
		    "more than 8", NULL);
	pubkey_case(PUBKEY("gw.pem", "gw.key", "gw.key"),
		    "20: [tunnel t] @DIR@/gw.key: ca: no PEM or DER certificate, or more than 64",
		    NULL);
	pubkey_case(PUBKEY("gw.pem", "gw.key", "ca.pem") "crl = gw.pem\n",
		    "21: [tunnel t] @DIR@/gw.pem: crl: no PEM or DER CRL", NULL);
	pubkey_case("keying = ike\nauth = pubkey\ncert = gw.pem\nprivate-key = gw.key\n",
		    "10: [tunnel t] missing required key 'ca' (auth = pubkey)", NULL);
	pubkey_case(PUBKEY("nothere.pem", "gw.key", "ca.pem"),
		    "18: [tunnel t] @DIR@/nothere.pem: No such file or directory", NULL);
	static const char *const made[] = { "gw.pem", "ca.pem", "crl.pem", "gw.key",
					    "other.key" };
	for (size_t i = 0; i < sizeof(made) / sizeof(made[0]); i++) {
		snprintf(lnk, sizeof(lnk), "%s/%s", tmpdir, made[i]);
		unlink(lnk);
	}
}

/*
 * remote = %any (config_ra.c): a remote-access responder.  Lines 10-18 are
 * RA_HEAD; 19 on: more.
 */
#define RA_TUN "[tunnel ra]\nlocal = 198.19.0.1\nremote = %any\nlocal-ts = 198.18.1.0/24\n"
#define RA_HEAD RA_TUN PUBKEY("gw.pem", "gw.key", "ca.pem")

static const char *ra_fmt(const struct cfg_addr *a, char *buf)
{
	uint32_t v4 = htonl(a->v4);

	return inet_ntop(a->family == DPVPN_AF_INET ? AF_INET : AF_INET6,
			 a->family == DPVPN_AF_INET ? (const void *)&v4 : (const void *)a->v6,
			 buf, 64);
}

static void ra_case(const char *text, const char *want, struct cfg *keep)
{
	pki_case(RA_HEAD, text, want, keep);
}

static void test_remote_access(void **state)
{
	const struct cfg_tunnel *t;
	char path[128];
	struct cfg cfg;
	char buf[64];

	(void)state;
	pki_fixture("gw.pem", 0644);
	pki_fixture("ca.pem", 0644);
	pki_fixture("gw.key", 0600);
	ra_case("pool = 10.10.0.0/24, fd00:10::/120\ndns = 10.10.0.1, 2001:db8::53\n", NULL,
		&cfg);
	t = cfg.tunnels[0];
	assert_int_equal(t->ra.any, 1);
	assert_int_equal(t->remote.family, 0);
	assert_int_equal(t->remote_line, 12);
	assert_int_equal(t->ike.start, 0);		/* forced: it waits for clients */
	assert_int_equal(t->ra.n_pools, 2);
	assert_int_equal(t->ra.pool_line, 19);
	assert_string_equal(ra_fmt(&t->ra.pools[1].addr, buf), "fd00:10::");
	assert_int_equal(t->ra.pools[1].len, 120);
	assert_int_equal(t->ra.n_dns, 2);
	assert_string_equal(ra_fmt(&t->ra.dns[1], buf), "2001:db8::53");
	/* remote-ts implied: the pool of local-ts's family */
	assert_string_equal(ra_fmt(&t->remote_ts.addr, buf), "10.10.0.0");
	assert_int_equal(t->remote_ts.len, 24);
	cfg_free(&cfg);
	ra_case("pool = 10.10.0.0/24\nstart = no\nremote-id = fqdn:*.example.org\n", NULL,
		NULL);
	/* the combinations refused, each at its line */
	ra_case("", "10: [tunnel ra] missing required key 'pool' (remote = %any)", NULL);
	ra_case("pool = 10.10.0.0/24\nstart = yes\n",
		"20: [tunnel ra] start: not with remote = %any (it waits for clients)", NULL);
	ra_case("pool = 10.10.0.0/24\nremote-ts = 10.10.0.0/24\n",
		"20: [tunnel ra] remote-ts: not with remote = %any (each client's is its address "
		"from pool)", NULL);
	ra_case("pool = fd00:10::/120\n",
		"19: [tunnel ra] pool: no IPv4 prefix, as local-ts is (a client's CHILD_SA is of "
		"local-ts's family)", NULL);
	ra_case("pool = 10.10.0.0/24, 10.20.0.0/24\n",
		"19: [tunnel ra] pool: two IPv4 prefixes; one of each family at most", NULL);
	ra_case("pool = 10.10.0.1/24\n",
		"19: [tunnel ra] pool: 10.10.0.1/24 has host bits set (did you mean "
		"10.10.0.0/24?)", NULL);
	ra_case("pool = 10.10.0.0/24\ndns = 10.10.0.1, nameserver\n",
		"20: [tunnel ra] dns: expected IPv4 or IPv6 addresses, got 'nameserver'", NULL);
	ra_case("pool = 10.10.0.0/24\ndns = 1.1.1.1, 1.0.0.1, 8.8.8.8, 8.8.4.4, 9.9.9.9\n",
		"20: [tunnel ra] dns: more than 4 addresses", NULL);
	pki_case(RA_TUN "keying = ike\npsk-file = a.psk\npool = 10.10.0.0/24\n",
		 "", "12: [tunnel ra] remote: %any needs auth = pubkey (one PSK cannot tell "
		 "clients apart)", NULL);
	pki_case(RA_TUN "remote-ts = 10.10.0.0/24\ncipher = aes128-gcm\n" SPIS KEYS, "",
		 "12: [tunnel ra] remote: %any only with keying = ike (a remote-access responder)",
		 NULL);
	pubkey_case(PUBKEY("gw.pem", "gw.key", "ca.pem") "pool = 10.10.0.0/24\n"
		    "dns = 10.10.0.1\n", "21: [tunnel t] pool: only with remote = %any (a "
		    "remote-access responder)", NULL);
	pubkey_case(PUBKEY("gw.pem", "gw.key", "ca.pem") "dns = 10.10.0.1\n",
		    "21: [tunnel t] dns: only with remote = %any (a remote-access responder)", NULL);
	/* the client's side: virtual-ip = request */
	pubkey_case(PUBKEY("gw.pem", "gw.key", "ca.pem") "virtual-ip = request\n", NULL, &cfg);
	assert_int_equal(cfg.tunnels[0]->ra.want_vip, 1);
	assert_int_equal(cfg.tunnels[0]->ra.any, 0);
	cfg_free(&cfg);
	pubkey_case(PUBKEY("gw.pem", "gw.key", "ca.pem") "virtual-ip = 10.0.0.1\n",
		    "21: [tunnel t] virtual-ip: expected request (ask the gateway for an address), "
		    "got '10.0.0.1'", NULL);
	ra_case("pool = 10.10.0.0/24\nvirtual-ip = request\n",
		"20: [tunnel ra] virtual-ip: not with remote = %any (a client asks for one, the "
		"gateway leases from pool)", NULL);
	static const char *const made[] = { "gw.pem", "ca.pem", "gw.key" };
	for (size_t i = 0; i < sizeof(made) / sizeof(made[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", tmpdir, made[i]);
		unlink(path);
	}
}

/* [ha]: what the parser stores, its defaults, and the sync key's wipe. */
static void test_ha_values(void **state)
{
	static const uint8_t v6[16] = { 0x20, 0x01, 0x0d, 0xb8, 0, 0xff, [15] = 2 };
	static const uint8_t zero[CFG_HA_KEY_MAX];
	const struct sockaddr_in6 *sin6;
	const struct sockaddr_in *sin;
	const struct cfg_ha *h;
	char path[64], kpath[64], host[256] = "", want[512];
	struct cfg_addr a = { .family = DPVPN_AF_INET, .v4 = 0xc613000a };	/* 198.19.0.10 */
	FILE *f;
	uint16_t port_id = 0;
	struct cfg cfg;

	(void)state;
	snprintf(path, sizeof(path), "%s/ha.conf", tmpdir);
	snprintf(kpath, sizeof(kpath), "%s/sync.key", tmpdir);
	write_file(kpath, "0x" HA_KEY_HEX HA_KEY_HEX "\n", 0600);
	write_file(path, PORTS TUN("t", "198.19.0.10") SPIS KEYS
		   HA_SECT("10.255.0.1:4600", "[2001:db8:ff::2]") "node = gw-a\npriority = 150\n"
		   "virtual-address = outside 198.19.0.10/24\n"
		   "virtual-address = inside 198.18.1.10/24 group in\n"
		   "takeover-rekey = never\ndead-ms = 3000\nheartbeat-ms = 250\n", 0600);
	/* one family: the IPv6 peer is refused, everything else is kept */
	assert_int_equal(cfg_load(&cfg, path), -1);
	assert_int_equal(cfg.n_errors, 1);
	h = &cfg.ha;
	assert_int_equal(h->on, 1);
	assert_int_equal(h->line, 20);
	assert_string_equal(h->node, "gw-a");
	assert_string_equal(h->local, "10.255.0.1:4600");
	sin = (const struct sockaddr_in *)&h->local_sa;
	assert_int_equal(sin->sin_family, AF_INET);
	assert_int_equal(ntohs(sin->sin_port), 4600);
	assert_int_equal(ntohl(sin->sin_addr.s_addr), 0x0aff0001);
	assert_string_equal(h->peer, "[2001:db8:ff::2]");
	sin6 = (const struct sockaddr_in6 *)&h->peer_sa;
	assert_int_equal(sin6->sin6_family, AF_INET6);
	assert_int_equal(ntohs(sin6->sin6_port), CFG_HA_PORT);
	assert_memory_equal(&sin6->sin6_addr, v6, 16);
	assert_int_equal(h->key_len, 64);
	assert_int_equal(h->key[0], 0x01);
	assert_int_equal(h->key[63], 0xef);
	assert_int_equal(h->priority, 150);
	assert_int_equal(h->takeover_rekey, CFG_HA_REKEY_NEVER);
	assert_int_equal(h->dead_ms, 3000);
	assert_int_equal(h->heartbeat_ms, 250);
	assert_int_equal(h->n_vips, 2);
	assert_string_equal(h->vips[0].port, "outside");
	assert_int_equal(h->vips[0].addr.addr.v4, 0xc613000a);
	assert_int_equal(h->vips[0].addr.len, 24);
	assert_string_equal(h->vips[0].group, CFG_HA_GROUP_DEFAULT);
	assert_int_equal(h->vips[0].line, 26);
	assert_string_equal(h->vips[1].port, "inside");
	assert_string_equal(h->vips[1].group, "in");
	/* the outside port's virtual address is that port's; the inside one's is not */
	assert_true(cfg_is_outside_addr(&cfg, &a, &port_id));
	assert_int_equal(port_id, 1);
	a.v4 = 0xc612010a;	/* 198.18.1.10 */
	assert_false(cfg_is_outside_addr(&cfg, &a, NULL));
	cfg_wipe_keys(&cfg);
	assert_memory_equal(h->key, zero, sizeof(zero));
	cfg_free(&cfg);
	/* the defaults: the host name, priority 100, auto, 1000 and 100 ms */
	write_file(path, HA_GOOD, 0600);
	assert_int_equal(cfg_load(&cfg, path), 0);
	assert_int_equal(gethostname(host, sizeof(host) - 1), 0);
	host[CFG_NAME_MAX] = '\0';
	assert_string_equal(cfg.ha.node, host);
	assert_int_equal(cfg.ha.priority, CFG_HA_PRIORITY);
	assert_int_equal(cfg.ha.takeover_rekey, CFG_HA_REKEY_AUTO);
	assert_int_equal(cfg.ha.dead_ms, 1000);
	assert_int_equal(cfg.ha.heartbeat_ms, 100);
	assert_int_equal(cfg.ha.n_vips, 0);
	assert_int_equal(cfg.ha.key_len, 64);
	assert_int_equal(ntohs(((const struct sockaddr_in *)&cfg.ha.peer_sa)->sin_port), 4510);
	/* cfg_free wipes it too (its memory is zeroed after) */
	cfg_free(&cfg);
	/* a refused key leaves nothing behind */
	write_file(kpath, HA_KEY_HEX "0\n", 0600);
	assert_int_equal(cfg_load(&cfg, path), -1);
	assert_int_equal(cfg.ha.key_len, 0);
	assert_memory_equal(cfg.ha.key, zero, sizeof(zero));
	cfg_free(&cfg);
	/* nor does the text after a NUL pass unseen */
	f = fopen(kpath, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(HA_KEY_HEX "\0" "00\n", 1, sizeof(HA_KEY_HEX) + 3, f),
			 sizeof(HA_KEY_HEX) + 3);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(cfg_load(&cfg, path), -1);
	snprintf(want, sizeof(want), "%s:23: [ha] sync-key: %s: expected the key as hex on one "
		 "line", path, kpath);
	assert_int_equal(cfg.n_errors, 1);
	assert_string_equal(cfg.errors[0], want);
	assert_int_equal(cfg.ha.key_len, 0);
	cfg_free(&cfg);
	/* no [ha]: nothing */
	write_file(path, GOOD, 0600);
	assert_int_equal(cfg_load(&cfg, path), 0);
	assert_int_equal(cfg.ha.on, 0);
	assert_int_equal(cfg.ha.node[0], '\0');
	cfg_free(&cfg);
	unlink(kpath);
	unlink(path);
}

/* Like a PSK file, the sync key may not be a symbolic link (O_NOFOLLOW). */
static void test_ha_symlink(void **state)
{
	(void)state;
	symlink_refused("halink", HA_GOOD, HA_KEY_HEX "\n", "sync.key", "23: [ha] sync-key");
}

/* Up to CFG_HA_VIP_MAX virtual addresses; the next one is refused at its line. */
static void test_ha_vip_max(void **state)
{
	char path[64], kpath[64], text[4096], want[512];
	struct cfg cfg;
	int n;

	(void)state;
	snprintf(path, sizeof(path), "%s/havips.conf", tmpdir);
	snprintf(kpath, sizeof(kpath), "%s/sync.key", tmpdir);
	write_file(kpath, HA_KEY_HEX "\n", 0600);
	n = snprintf(text, sizeof(text), "%s", HA_GOOD);
	for (int i = 0; i < CFG_HA_VIP_MAX; i++)
		n += snprintf(text + n, sizeof(text) - (size_t)n,
			      "virtual-address = outside 198.19.0.%d/24\n", 100 + i);
	write_file(path, text, 0600);
	assert_int_equal(cfg_load(&cfg, path), 0);
	assert_int_equal(cfg.ha.n_vips, CFG_HA_VIP_MAX);
	cfg_free(&cfg);
	snprintf(text + n, sizeof(text) - (size_t)n, "virtual-address = outside 198.19.0.99/24\n");
	write_file(path, text, 0600);
	assert_int_equal(cfg_load(&cfg, path), -1);
	snprintf(want, sizeof(want), "%s:%d: [ha] virtual-address: more than %d virtual "
		 "addresses", path, 24 + CFG_HA_VIP_MAX, CFG_HA_VIP_MAX);
	assert_int_equal(cfg.n_errors, 1);
	assert_string_equal(cfg.errors[0], want);
	cfg_free(&cfg);
	unlink(kpath);
	unlink(path);
}

int main(void)
{
	struct CMUnitTest tests[N_CASES + 19];
	int rc;

	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	for (size_t i = 0; i < N_CASES; i++)
		tests[i] = (struct CMUnitTest){ .name = cases[i].name, .test_func = test_case,
						.initial_state = (void *)&cases[i] };
	tests[N_CASES] = (struct CMUnitTest)cmocka_unit_test(test_keyfile_owner);
	tests[N_CASES + 1] = (struct CMUnitTest)cmocka_unit_test(test_many_errors);
	tests[N_CASES + 2] = (struct CMUnitTest)cmocka_unit_test(test_lab_a);
	tests[N_CASES + 3] = (struct CMUnitTest)cmocka_unit_test(test_lab_b);
	tests[N_CASES + 4] = (struct CMUnitTest)cmocka_unit_test(test_ipv6_values);
	tests[N_CASES + 5] = (struct CMUnitTest)cmocka_unit_test(test_config_owner);
	tests[N_CASES + 6] = (struct CMUnitTest)cmocka_unit_test(test_keyfile_symlink);
	tests[N_CASES + 7] = (struct CMUnitTest)cmocka_unit_test(test_psk_symlink);
	tests[N_CASES + 8] = (struct CMUnitTest)cmocka_unit_test(test_ike_values);
	tests[N_CASES + 9] = (struct CMUnitTest)cmocka_unit_test(test_neighbour_spellings);
	tests[N_CASES + 10] = (struct CMUnitTest)cmocka_unit_test(test_pubkey);
	tests[N_CASES + 11] = (struct CMUnitTest)cmocka_unit_test(test_remote_access);
	tests[N_CASES + 12] = (struct CMUnitTest)cmocka_unit_test(test_ts_lists);
	tests[N_CASES + 13] = (struct CMUnitTest)cmocka_unit_test(test_ike_sa_inherits);
	tests[N_CASES + 14] = (struct CMUnitTest)cmocka_unit_test(test_ts_same_bytes);
	tests[N_CASES + 15] = (struct CMUnitTest)cmocka_unit_test(test_routes);
	tests[N_CASES + 16] = (struct CMUnitTest)cmocka_unit_test(test_ha_values);
	tests[N_CASES + 17] = (struct CMUnitTest)cmocka_unit_test(test_ha_symlink);
	tests[N_CASES + 18] = (struct CMUnitTest)cmocka_unit_test(test_ha_vip_max);
	rc = _cmocka_run_group_tests("config", tests, N_CASES + 19, NULL, NULL);
	rmdir(tmpdir);
	return rc;
}
