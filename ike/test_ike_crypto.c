/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_ike_crypto.c - known-answer tests of ike_crypto.c.  The DH and HMAC
 * vectors are the RFCs' own (RFC 5903 8.1, RFC 7748 6.1, RFC 4231); the
 * IKEv2 derivations, SK payloads and AUTH values come from
 * testdata/make_ike_crypto_vectors.py, an independent implementation on the
 * Python `cryptography` package.  The cases follow one exchange: g^ir of RFC
 * 5903 keys the IKE SA, whose keys seal the SK payloads and sign the AUTH
 * payloads, and X25519's secret of RFC 7748 rekeys it.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <openssl/evp.h>

#include "ike_crypto.h"
#include "testdata/ike_crypto_vectors.h"

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#define IOV(a)		{ (a), sizeof(a) }
#define PRF		IKE_PRF_HMAC_SHA2_256

/* RFC 5903 8.1: 256-bit random ECP group. */
#define R5903_I		"C88F01F5 10D9AC3F 70A292DA A2316DE5 44E9AAB8 AFE84049 C62A9C57 862D1433"
#define R5903_GIX	"DAD0B653 94221CF9 B051E1FE CA5787D0 98DFE637 FC90B9EF 945D0C37 72581180"
#define R5903_GIY	"5271A046 1CDB8252 D61F1C45 6FA3E59A B1F45B33 ACCF5F58 389E0577 B8990BB3"
#define R5903_R		"C6EF9C5D 78AE012A 011164AC B397CE20 88685D8F 06BF9BE0 B283AB46 476BEE53"
#define R5903_GRX	"D12DFB52 89C8D4F8 1208B702 70398C34 2296970A 0BCCB74C 736FC755 4494BF63"
#define R5903_GRY	"56FBF3CA 366CC23E 8157854C 13C58D6A AC23F046 ADA30F83 53E74F33 039872AB"
#define R5903_GIRX	"D6840F6B 42F6EDAF D13116E0 E1256520 2FEF8E9E CE7DCE03 812464D0 4B9442DE"

/* RFC 5903 8.2: 384-bit random ECP group. */
#define R5903_384_I	"099F3C70 34D4A2C6 99884D73 A375A67F 7624EF7C 6B3C0F16 0647B674 14DCE655" \
			"E35B5380 41E649EE 3FAEF896 783AB194"
#define R5903_384_GIX	"667842D7 D180AC2C DE6F74F3 7551F557 55C7645C 20EF73E3 1634FE72 B4C55EE6" \
			"DE3AC808 ACB4BDB4 C88732AE E95F41AA"
#define R5903_384_GIY	"9482ED1F C0EEB9CA FC498462 5CCFC23F 65032149 E0E144AD A0241815 35A0F38E" \
			"EB9FCFF3 C2C947DA E69B4C63 4573A81C"
#define R5903_384_R	"41CB0779 B4BDB85D 47846725 FBEC3C94 30FAB46C C8DC5060 855CC9BD A0AA2942" \
			"E0308312 916B8ED2 960E4BD5 5A7448FC"
#define R5903_384_GRX	"E558DBEF 53EECDE3 D3FCCFC1 AEA08A89 A987475D 12FD950D 83CFA417 32BC509D" \
			"0D1AC43A 0336DEF9 6FDA41D0 774A3571"
#define R5903_384_GRY	"DCFBEC7A ACF31964 72169E83 8430367F 66EEBE3C 6E70C416 DD5F0C68 759DD1FF" \
			"F83FA401 42209DFF 5EAAD96D B9E6386C"
#define R5903_384_GIRX	"11187331 C279962D 93D60424 3FD592CB 9D0A926F 422E4718 7521287E 7156C5C4" \
			"D6031355 69B9E9D0 9CF5D4A2 70F59746"

/* RFC 7748 6.1. */
#define R7748_A_PRIV	"77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a"
#define R7748_A_PUB	"8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a"
#define R7748_B_PRIV	"5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb"
#define R7748_B_PUB	"de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f"
#define R7748_SHARED	"4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742"

/* Hex (spaces ignored) to bytes; fails the test unless it is exactly len bytes. */
static void
unhex(const char *s, uint8_t *out, size_t len)
{
	size_t n = 0;
	int hi = -1;

	for (; *s != '\0'; s++) {
		int v;

		if (*s == ' ')
			continue;
		assert_true(isxdigit((unsigned char)*s));
		v = isdigit((unsigned char)*s) ? *s - '0' : tolower((unsigned char)*s) - 'a' + 10;
		if (hi < 0) {
			hi = v;
			continue;
		}
		assert_true(n < len);
		out[n++] = (uint8_t)(hi << 4 | v);
		hi = -1;
	}
	assert_int_equal(hi, -1);
	assert_int_equal(n, len);
}

static bool
all_zero(const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != 0)
			return false;
	return true;
}

/* A DH from a known private key, checked against its known public value. */
static struct ike_dh *
dh_known(uint16_t group, const uint8_t *priv, size_t priv_len, const uint8_t *pub_want)
{
	uint8_t pub[IKE_DH_MAX_PUB];
	size_t len = sizeof(pub);
	struct ike_dh *d = NULL;

	assert_int_equal(ike_dh_from_private(group, priv, priv_len, &d, pub, &len), 0);
	assert_int_equal(len, ike_dh_pub_len(group));
	assert_memory_equal(pub, pub_want, len);
	return d;
}

static void
dh_expect(struct ike_dh *d, const uint8_t *peer, size_t peer_len, const uint8_t *want,
	  size_t want_len)
{
	uint8_t s[IKE_DH_MAX_SECRET];
	size_t len = sizeof(s);

	assert_int_equal(ike_dh_derive(d, peer, peer_len, s, &len), 0);
	assert_int_equal(len, want_len);
	assert_memory_equal(s, want, want_len);
}

/* Refused, with the secret buffer left zero. */
static void
dh_refused(struct ike_dh *d, const uint8_t *peer, size_t len)
{
	uint8_t s[IKE_DH_MAX_SECRET];
	size_t slen = sizeof(s);

	memset(s, 0xa5, sizeof(s));
	assert_int_equal(ike_dh_derive(d, peer, len, s, &slen), -EINVAL);
	assert_int_equal(slen, sizeof(s));
	/* Never a partial result: untouched, or wiped after a failed derivation. */
	for (size_t i = 1; i < sizeof(s); i++)
		assert_int_equal(s[i], s[0]);
	assert_true(s[0] == 0 || s[0] == 0xa5);
}

/* (1) RFC 5903 8.1 through both sides; its g^ir is also the vectors' g^ir. */
static void
test_dh_ecp256_rfc5903(void **state)
{
	uint8_t i[32], r[32], gi[64], gr[64], gir[32];
	struct ike_dh *di, *dr;

	(void)state;
	unhex(R5903_I, i, sizeof(i));
	unhex(R5903_R, r, sizeof(r));
	unhex(R5903_GIX, gi, 32);
	unhex(R5903_GIY, gi + 32, 32);
	unhex(R5903_GRX, gr, 32);
	unhex(R5903_GRY, gr + 32, 32);
	unhex(R5903_GIRX, gir, sizeof(gir));
	assert_int_equal(ike_dh_pub_len(IKE_DH_ECP256), 64);
	assert_int_equal(ike_dh_secret_len(IKE_DH_ECP256), 32);
	di = dh_known(IKE_DH_ECP256, i, sizeof(i), gi);
	dr = dh_known(IKE_DH_ECP256, r, sizeof(r), gr);
	dh_expect(di, gr, sizeof(gr), gir, sizeof(gir));
	dh_expect(dr, gi, sizeof(gi), gir, sizeof(gir));
	assert_memory_equal(gir, v_gir, sizeof(v_gir));
	ike_dh_free(di);
	ike_dh_free(dr);
}

/* (1) RFC 7748 6.1; its shared secret is the vectors' rekeying g^ir. */
static void
test_dh_x25519_rfc7748(void **state)
{
	uint8_t a[32], b[32], apub[32], bpub[32], k[32];
	struct ike_dh *da, *db;

	(void)state;
	unhex(R7748_A_PRIV, a, sizeof(a));
	unhex(R7748_A_PUB, apub, sizeof(apub));
	unhex(R7748_B_PRIV, b, sizeof(b));
	unhex(R7748_B_PUB, bpub, sizeof(bpub));
	unhex(R7748_SHARED, k, sizeof(k));
	assert_int_equal(ike_dh_pub_len(IKE_DH_CURVE25519), 32);
	assert_int_equal(ike_dh_secret_len(IKE_DH_CURVE25519), 32);
	da = dh_known(IKE_DH_CURVE25519, a, sizeof(a), apub);
	db = dh_known(IKE_DH_CURVE25519, b, sizeof(b), bpub);
	dh_expect(da, bpub, sizeof(bpub), k, sizeof(k));
	dh_expect(db, apub, sizeof(apub), k, sizeof(k));
	assert_memory_equal(k, v_gir2, sizeof(v_gir2));
	ike_dh_free(da);
	ike_dh_free(db);
}

/* (1) RFC 5903 8.2 through both sides: ECP-384, x || y of 96 bytes. */
static void
test_dh_ecp384_rfc5903(void **state)
{
	uint8_t i[48], r[48], gi[96], gr[96], gir[48];
	struct ike_dh *di, *dr;

	(void)state;
	unhex(R5903_384_I, i, sizeof(i));
	unhex(R5903_384_R, r, sizeof(r));
	unhex(R5903_384_GIX, gi, 48);
	unhex(R5903_384_GIY, gi + 48, 48);
	unhex(R5903_384_GRX, gr, 48);
	unhex(R5903_384_GRY, gr + 48, 48);
	unhex(R5903_384_GIRX, gir, sizeof(gir));
	assert_int_equal(ike_dh_pub_len(IKE_DH_ECP384), 96);
	assert_int_equal(ike_dh_secret_len(IKE_DH_ECP384), 48);
	di = dh_known(IKE_DH_ECP384, i, sizeof(i), gi);
	dr = dh_known(IKE_DH_ECP384, r, sizeof(r), gr);
	dh_expect(di, gr, sizeof(gr), gir, sizeof(gir));
	dh_expect(dr, gi, sizeof(gi), gir, sizeof(gir));
	/* A point of P-256's size, and one off the curve, are refused. */
	dh_refused(di, gr, 64);
	gr[95] ^= 1;
	dh_refused(di, gr, sizeof(gr));
	ike_dh_free(di);
	ike_dh_free(dr);
}

/* The RFC 3526 2048-bit prime, big-endian. */
static void
modp2048_p(uint8_t p[256])
{
	unhex("FFFFFFFF FFFFFFFF C90FDAA2 2168C234 C4C6628B 80DC1CD1 29024E08 8A67CC74"
	      "020BBEA6 3B139B22 514A0879 8E3404DD EF9519B3 CD3A431B 302B0A6D F25F1437"
	      "4FE1356D 6D51C245 E485B576 625E7EC6 F44C42E9 A637ED6B 0BFF5CB6 F406B7ED"
	      "EE386BFB 5A899FA5 AE9F2411 7C4B1FE6 49286651 ECE45B3D C2007CB8 A163BF05"
	      "98DA4836 1C55D39A 69163FA8 FD24CF5F 83655D23 DCA3AD96 1C62F356 208552BB"
	      "9ED52907 7096966D 670C354E 4ABC9804 F1746C08 CA18217C 32905E46 2E36CE3B"
	      "E39E772C 180E8603 9B2783A2 EC07A28F B5C55DF0 6F4C52C9 DE2BCBF6 95581718"
	      "3995497C EA956AE5 15D22618 98FA0510 15728E5A 8AACAA68 FFFFFFFF FFFFFFFF", p, 256);
}

/*
 * (1) MODP-2048 (RFC 3526 3, g = 2): exponent 1 gives y = g = 2, padded
 * to 256 bytes, and g^ir = the peer's y itself; a fresh pair agrees.
 * 0, 1, p - 1, p, 2^2048 - 1, a non-residue (11: outside the prime-order
 * subgroup) and a value of the wrong length are refused.
 */
static void
test_dh_modp2048(void **state)
{
	static const uint8_t one[1] = { 1 };
	uint8_t pub[IKE_DH_MAX_PUB], two[256] = { [255] = 2 }, peer[256], p[256];
	uint8_t fa[IKE_DH_MAX_PUB], fb[IKE_DH_MAX_PUB];
	size_t plen = sizeof(pub), la = sizeof(fa), lb = sizeof(fb);
	struct ike_dh *d, *a, *b;

	(void)state;
	assert_int_equal(ike_dh_pub_len(IKE_DH_MODP2048), 256);
	assert_int_equal(ike_dh_secret_len(IKE_DH_MODP2048), 256);
	assert_int_equal(ike_dh_from_private(IKE_DH_MODP2048, one, 1, &d, pub, &plen), 0);
	assert_int_equal(plen, 256);
	assert_memory_equal(pub, two, 256);
	assert_int_equal(ike_dh_new(IKE_DH_MODP2048, &a, fa, &la), 0);
	assert_int_equal(ike_dh_new(IKE_DH_MODP2048, &b, fb, &lb), 0);
	/* (2^x)^1 = 2^x: the secret keeps the leading zeros y may have. */
	dh_expect(d, fa, la, fa, la);
	ike_dh_free(b);
	modp2048_p(p);
	memset(peer, 0, sizeof(peer));
	dh_refused(a, peer, 256);			/* 0 */
	peer[255] = 1;
	dh_refused(a, peer, 256);			/* 1 */
	peer[255] = 11;
	dh_refused(a, peer, 256);			/* not in the subgroup */
	dh_refused(a, p, 256);				/* p */
	memcpy(peer, p, 256);
	peer[255] -= 1;
	dh_refused(a, peer, 256);			/* p - 1 */
	memset(peer, 0xff, sizeof(peer));
	dh_refused(a, peer, 256);			/* above p */
	dh_refused(a, fb, 255);
	ike_dh_free(a);
	ike_dh_free(d);
}

/* Fresh keys from ike_dh_new() agree with each other. */
static void
test_dh_new_agree(void **state)
{
	static const uint16_t groups[] = {
		IKE_DH_MODP2048, IKE_DH_ECP256, IKE_DH_ECP384, IKE_DH_CURVE25519,
	};

	(void)state;
	for (size_t g = 0; g < ARRAY_SIZE(groups); g++) {
		uint8_t pa[IKE_DH_MAX_PUB], pb[IKE_DH_MAX_PUB];
		uint8_t sa[IKE_DH_MAX_SECRET], sb[IKE_DH_MAX_SECRET];
		size_t la = sizeof(pa), lb = sizeof(pb), ka = sizeof(sa), kb = sizeof(sb);
		struct ike_dh *a, *b;

		assert_int_equal(ike_dh_new(groups[g], &a, pa, &la), 0);
		assert_int_equal(ike_dh_new(groups[g], &b, pb, &lb), 0);
		assert_int_equal(la, ike_dh_pub_len(groups[g]));
		assert_memory_not_equal(pa, pb, la);
		assert_int_equal(ike_dh_derive(a, pb, lb, sa, &ka), 0);
		assert_int_equal(ike_dh_derive(b, pa, la, sb, &kb), 0);
		assert_int_equal(ka, ike_dh_secret_len(groups[g]));
		assert_int_equal(kb, ka);
		assert_memory_equal(sa, sb, ka);
		ike_dh_free(a);
		ike_dh_free(b);
	}
}

/* (2) ECP-256: wrong lengths, points off the curve, out of range, zero. */
static void
test_dh_ecp256_bad_peer(void **state)
{
	/* x = y = p: both coordinates out of range. */
	static const char p256_p[] =
		"FFFFFFFF 00000001 00000000 00000000 00000000 FFFFFFFF FFFFFFFF FFFFFFFF";
	uint8_t i[32], gr[65], bad[64];
	struct ike_dh *d;
	uint8_t pub[64];
	size_t plen = sizeof(pub);

	(void)state;
	unhex(R5903_I, i, sizeof(i));
	unhex(R5903_GRX, gr, 32);
	unhex(R5903_GRY, gr + 32, 32);
	gr[64] = 0;
	assert_int_equal(ike_dh_from_private(IKE_DH_ECP256, i, sizeof(i), &d, pub, &plen), 0);
	dh_refused(d, gr, 63);
	dh_refused(d, gr, 65);
	dh_refused(d, gr, 0);
	memcpy(bad, gr, 64);
	bad[63] ^= 0x01;			/* y off by one: not on the curve */
	dh_refused(d, bad, 64);
	bad[63] ^= 0x01;
	bad[0] ^= 0x80;				/* x changed */
	dh_refused(d, bad, 64);
	memset(bad, 0, sizeof(bad));		/* (0, 0): what an identity would look like */
	dh_refused(d, bad, 64);
	unhex(p256_p, bad, 32);
	unhex(p256_p, bad + 32, 32);
	dh_refused(d, bad, 64);
	/* The good value still works after all that. */
	unhex(R5903_GIRX, bad, 32);
	dh_expect(d, gr, 64, bad, 32);
	ike_dh_free(d);
}

/* (2) X25519: wrong lengths and low-order points, whose result is all zero. */
static void
test_dh_x25519_bad_peer(void **state)
{
	static const char *const low_order[] = {
		"0000000000000000000000000000000000000000000000000000000000000000",
		"0100000000000000000000000000000000000000000000000000000000000000",
		"e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800",
		"ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
	};
	uint8_t a[32], bpub[33], peer[32];
	struct ike_dh *d;
	uint8_t pub[32];
	size_t plen = sizeof(pub);

	(void)state;
	unhex(R7748_A_PRIV, a, sizeof(a));
	unhex(R7748_B_PUB, bpub, 32);
	bpub[32] = 0;
	assert_int_equal(ike_dh_from_private(IKE_DH_CURVE25519, a, 32, &d, pub, &plen), 0);
	dh_refused(d, bpub, 31);
	dh_refused(d, bpub, 33);
	for (size_t i = 0; i < ARRAY_SIZE(low_order); i++) {
		unhex(low_order[i], peer, sizeof(peer));
		dh_refused(d, peer, sizeof(peer));
	}
	ike_dh_free(d);
}

static void
test_dh_args(void **state)
{
	uint8_t priv[32] = { 1 }, pub[IKE_DH_MAX_PUB], s[IKE_DH_MAX_SECRET];
	size_t plen = sizeof(pub), slen;
	struct ike_dh *d = NULL;

	(void)state;
	assert_int_equal(ike_dh_pub_len(2), 0);		/* MODP-1024: not offered */
	assert_int_equal(ike_dh_secret_len(2), 0);
	assert_int_equal(ike_dh_new(2, &d, pub, &plen), -EOPNOTSUPP);
	assert_int_equal(ike_dh_from_private(21, priv, 32, &d, pub, &plen), -EOPNOTSUPP);
	plen = 63;
	assert_int_equal(ike_dh_new(IKE_DH_ECP256, &d, pub, &plen), -ENOSPC);
	plen = sizeof(pub);
	assert_int_equal(ike_dh_from_private(IKE_DH_CURVE25519, priv, 31, &d, pub, &plen),
			 -EINVAL);
	memset(priv, 0, sizeof(priv));		/* scalar 0: no key */
	assert_int_equal(ike_dh_from_private(IKE_DH_ECP256, priv, 32, &d, pub, &plen),
			 -EINVAL);
	assert_null(d);
	assert_int_equal(ike_dh_new(IKE_DH_CURVE25519, &d, pub, &plen), 0);
	slen = 31;
	assert_int_equal(ike_dh_derive(d, pub, plen, s, &slen), -ENOSPC);
	ike_dh_free(d);
	ike_dh_free(NULL);
}

/* (3) RFC 4231 test cases 1-3 for HMAC-SHA-256. */
static void
test_prf_rfc4231(void **state)
{
	static const char *const mac[] = {
		"b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7",
		"5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
		"773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe",
	};
	uint8_t k1[20], k3[20], d3[50], want[32], out[40];
	const struct ike_iov c1 = { "Hi There", 8 };
	const struct ike_iov c2 = { "what do ya want for nothing?", 28 };
	/* Case 3 in pieces, one of them empty: the PRF sees the concatenation. */
	const struct ike_iov c3[] = { { d3, 17 }, { NULL, 0 }, { d3 + 17, 33 } };
	size_t len;

	(void)state;
	memset(k1, 0x0b, sizeof(k1));
	memset(k3, 0xaa, sizeof(k3));
	memset(d3, 0xdd, sizeof(d3));
	assert_int_equal(ike_prf_len(PRF), 32);
	len = sizeof(out);
	assert_int_equal(ike_prf(PRF, k1, sizeof(k1), &c1, 1, out, &len), 0);
	unhex(mac[0], want, 32);
	assert_int_equal(len, 32);
	assert_memory_equal(out, want, 32);
	len = 32;
	assert_int_equal(ike_prf(PRF, (const uint8_t *)"Jefe", 4, &c2, 1, out, &len), 0);
	unhex(mac[1], want, 32);
	assert_memory_equal(out, want, 32);
	len = 32;
	assert_int_equal(ike_prf(PRF, k3, sizeof(k3), c3, ARRAY_SIZE(c3), out, &len), 0);
	unhex(mac[2], want, 32);
	assert_memory_equal(out, want, 32);
}

/*
 * (3) RFC 4231 test case 1 for HMAC-SHA-384 and -512, which are RFC 4868's
 * PRF_HMAC_SHA2_384/512 (its 2.7.1 test case PRF-1 is the same).
 */
static void
test_prf_sha384_512(void **state)
{
	static const struct { uint16_t id; size_t len; const char *mac; } c[] = {
		{ IKE_PRF_HMAC_SHA2_384, 48,
		  "afd03944d84895626b0825f4ab46907f15f9dadbe4101ec6"
		  "82aa034c7cebc59cfaea9ea9076ede7f4af152e8b2fa9cb6" },
		{ IKE_PRF_HMAC_SHA2_512, 64,
		  "87aa7cdea5ef619d4ff0b4241a1d6cb02379f4e2ce4ec2787ad0b30545e17cde"
		  "daa833b7d6b8a702038b274eaea3f4e4be9d914eeb61f1702e696c203a126854" },
	};
	const struct ike_iov hi = { "Hi There", 8 };
	uint8_t key[20], want[64], out[64], km[200];

	(void)state;
	memset(key, 0x0b, sizeof(key));
	for (size_t i = 0; i < ARRAY_SIZE(c); i++) {
		size_t len = c[i].len - 1;

		assert_int_equal(ike_prf_len(c[i].id), c[i].len);
		assert_int_equal(ike_prf(c[i].id, key, sizeof(key), &hi, 1, out, &len), -ENOSPC);
		len = sizeof(out);
		assert_int_equal(ike_prf(c[i].id, key, sizeof(key), &hi, 1, out, &len), 0);
		assert_int_equal(len, c[i].len);
		unhex(c[i].mac, want, c[i].len);
		assert_memory_equal(out, want, c[i].len);
		/* prf+'s T1 is prf(K, S | 0x01). */
		assert_int_equal(ike_prf_plus(c[i].id, key, sizeof(key), &hi, 1, km,
					      sizeof(km)), 0);
		{
			const struct ike_iov t1[] = { { "Hi There", 8 }, { "\x01", 1 } };

			len = sizeof(out);
			assert_int_equal(ike_prf(c[i].id, key, sizeof(key), t1, 2, out, &len), 0);
			assert_memory_equal(km, out, c[i].len);
		}
	}
	assert_int_equal(ike_prf_len(IKE_PRF_HMAC_SHA2_512 + 1), 0);
}

static void
test_prf_args(void **state)
{
	const struct ike_iov v[IKE_IOV_MAX + 1] = { { "x", 1 } };
	const struct ike_iov nul = { NULL, 1 };
	uint8_t key[4] = { 1 }, out[32];
	size_t len = sizeof(out);

	(void)state;
	assert_int_equal(ike_prf_len(2), 0);
	assert_int_equal(ike_prf(2, key, 4, v, 1, out, &len), -EOPNOTSUPP);
	assert_int_equal(ike_prf(PRF, key, 0, v, 1, out, &len), -EINVAL);
	assert_int_equal(ike_prf(PRF, key, 4, v, IKE_IOV_MAX + 1, out, &len), -EINVAL);
	assert_int_equal(ike_prf(PRF, key, 4, &nul, 1, out, &len), -EINVAL);
	assert_int_equal(ike_prf(PRF, key, 4, v, IKE_IOV_MAX, out, &len), 0);
	len = 31;
	assert_int_equal(ike_prf(PRF, key, 4, v, 1, out, &len), -ENOSPC);
	assert_int_equal(ike_prf_plus(PRF, key, 4, v, IKE_IOV_MAX - 1, out, 32), -EINVAL);
	assert_int_equal(ike_prf_plus(3, key, 4, v, 1, out, 32), -EOPNOTSUPP);
}

/* (4) prf+: a partial last block, a prefix, and the full 255 blocks. */
static void
test_prf_plus(void **state)
{
	const struct ike_iov seed[] = {
		{ v_pp_seed, 5 }, { v_pp_seed + 5, sizeof(v_pp_seed) - 5 },
	};
	static uint8_t big[IKE_PRF_PLUS_MAX_BLOCKS * 32 + 1];
	uint8_t out[100], md[32];
	unsigned int mdlen = 0;

	(void)state;
	assert_int_equal(ike_prf_plus(PRF, v_pp_key, sizeof(v_pp_key), seed, 2, out, 100), 0);
	assert_memory_equal(out, v_pp_out, sizeof(v_pp_out));
	memset(out, 0, sizeof(out));
	assert_int_equal(ike_prf_plus(PRF, v_pp_key, sizeof(v_pp_key), seed, 2, out, 37), 0);
	assert_memory_equal(out, v_pp_out, 37);
	assert_true(all_zero(out + 37, sizeof(out) - 37));
	assert_int_equal(ike_prf_plus(PRF, v_pp_key, sizeof(v_pp_key), seed, 2, big,
				      sizeof(big) - 1), 0);
	assert_int_equal(EVP_Digest(big, sizeof(big) - 1, md, &mdlen, EVP_sha256(), NULL), 1);
	assert_memory_equal(md, v_pp_max_sha256, sizeof(md));
	assert_int_equal(ike_prf_plus(PRF, v_pp_key, sizeof(v_pp_key), seed, 2, big,
				      sizeof(big)), -EINVAL);
	assert_int_equal(ike_prf_plus(PRF, v_pp_key, sizeof(v_pp_key), seed, 2, out, 0), 0);
}

struct keyset {
	size_t enc_key_len;	/* AES key bytes */
	bool aead;		/* AES-GCM; else AES-CBC with HMAC-SHA2-256-128 */
	size_t integ_len, enc_len;
	const uint8_t *d, *ai, *ar, *ei, *er, *pi, *pr;
};

static const struct keyset keysets[] = {	/* AES-256-GCM, AES-128-GCM, AES-128-CBC */
	{ 32, true, 0, 36, v_g256_sk_d, NULL, NULL, v_g256_sk_ei,
	  v_g256_sk_er, v_g256_sk_pi, v_g256_sk_pr },
	{ 16, true, 0, 20, v_g128_sk_d, NULL, NULL, v_g128_sk_ei,
	  v_g128_sk_er, v_g128_sk_pi, v_g128_sk_pr },
	{ 16, false, 32, 16, v_cbc128_sk_d, v_cbc128_sk_ai, v_cbc128_sk_ar,
	  v_cbc128_sk_ei, v_cbc128_sk_er, v_cbc128_sk_pi, v_cbc128_sk_pr },
};

static void
keys_expect(const struct ike_keys *k, const struct keyset *w)
{
	assert_int_equal(k->prf_len, 32);
	assert_int_equal(k->integ_len, w->integ_len);
	assert_int_equal(k->enc_len, w->enc_len);
	assert_memory_equal(k->sk_d, w->d, 32);
	if (w->integ_len > 0) {
		assert_memory_equal(k->sk_ai, w->ai, w->integ_len);
		assert_memory_equal(k->sk_ar, w->ar, w->integ_len);
	}
	assert_memory_equal(k->sk_ei, w->ei, w->enc_len);
	assert_memory_equal(k->sk_er, w->er, w->enc_len);
	assert_memory_equal(k->sk_pi, w->pi, 32);
	assert_memory_equal(k->sk_pr, w->pr, 32);
}

/* (4) SKEYSEED by hand through ike_prf, then the seven keys for three suites. */
static void
test_sa_keys(void **state)
{
	uint8_t nonces[sizeof(v_ni) + sizeof(v_nr)], skeyseed[32];
	const struct ike_iov gir = IOV(v_gir);
	struct ike_keys k;
	size_t len = sizeof(skeyseed);

	(void)state;
	memcpy(nonces, v_ni, sizeof(v_ni));
	memcpy(nonces + sizeof(v_ni), v_nr, sizeof(v_nr));
	assert_int_equal(ike_prf(PRF, nonces, sizeof(nonces), &gir, 1, skeyseed, &len), 0);
	assert_memory_equal(skeyseed, v_skeyseed, sizeof(skeyseed));
	for (size_t i = 0; i < ARRAY_SIZE(keysets); i++) {
		const struct keyset *w = &keysets[i];
		uint16_t integ = w->aead ? IKE_INTEG_NONE : IKE_INTEG_HMAC_SHA2_256_128;

		memset(&k, 0xa5, sizeof(k));
		assert_int_equal(ike_derive_sa_keys(PRF, w->enc_key_len, integ, v_ni,
						    sizeof(v_ni), v_nr, sizeof(v_nr), v_gir,
						    sizeof(v_gir), v_spi_i, v_spi_r, &k), 0);
		keys_expect(&k, w);
		ike_keys_wipe(&k);
		assert_true(all_zero((const uint8_t *)&k, sizeof(k)));
	}
}

/* (4) Rekeying the AES-256-GCM SA with new nonces, SPIs and X25519's g^ir. */
static void
test_rekey_keys(void **state)
{
	const struct keyset want = { 32, true, 0, 36, v_rekey_sk_d, NULL, NULL,
				     v_rekey_sk_ei, v_rekey_sk_er, v_rekey_sk_pi,
				     v_rekey_sk_pr };
	const struct ike_iov v[] = { IOV(v_gir2), IOV(v_ni2), IOV(v_nr2) };
	uint8_t skeyseed[32];
	size_t len = sizeof(skeyseed);
	struct ike_keys k;

	(void)state;
	assert_int_equal(ike_prf(PRF, v_g256_sk_d, 32, v, 3, skeyseed, &len), 0);
	assert_memory_equal(skeyseed, v_rekey_skeyseed, sizeof(skeyseed));
	assert_int_equal(ike_derive_rekey_keys(PRF, PRF, 32, IKE_INTEG_NONE, v_g256_sk_d,
					       sizeof(v_g256_sk_d), v_ni2, sizeof(v_ni2), v_nr2, sizeof(v_nr2),
					       v_gir2, sizeof(v_gir2), v_spi_i2, v_spi_r2, &k), 0);
	keys_expect(&k, &want);
	ike_keys_wipe(&k);
	assert_int_equal(ike_derive_rekey_keys(PRF, PRF, 32, IKE_INTEG_NONE, NULL, 32, v_ni2,
					       sizeof(v_ni2), v_nr2, sizeof(v_nr2), v_gir2, sizeof(v_gir2),
					       v_spi_i2, v_spi_r2, &k), -EINVAL);
}

static void
test_sa_keys_args(void **state)
{
	uint8_t n15[15] = { 0 }, n257[257] = { 0 };
	struct ike_keys k;

	(void)state;
	assert_int_equal(ike_derive_sa_keys(2, 32, IKE_INTEG_NONE, v_ni, sizeof(v_ni), v_nr, sizeof(v_nr),
					    v_gir, 32, v_spi_i, v_spi_r, &k), -EOPNOTSUPP);
	assert_int_equal(ike_derive_sa_keys(PRF, 24, IKE_INTEG_NONE, v_ni, sizeof(v_ni), v_nr,
					    sizeof(v_nr), v_gir, 32, v_spi_i, v_spi_r, &k),
			 -EOPNOTSUPP);
	assert_int_equal(ike_derive_sa_keys(PRF, 32, IKE_INTEG_NONE, n15, sizeof(n15), v_nr, sizeof(v_nr),
					    v_gir, 32, v_spi_i, v_spi_r, &k), -EINVAL);
	assert_int_equal(ike_derive_sa_keys(PRF, 32, IKE_INTEG_NONE, v_ni, sizeof(v_ni), n257,
					    sizeof(n257), v_gir, 32, v_spi_i, v_spi_r, &k),
			 -EINVAL);
	assert_int_equal(ike_derive_sa_keys(PRF, 32, IKE_INTEG_NONE, v_ni, sizeof(v_ni), v_nr,
					    sizeof(v_nr), NULL, 32, v_spi_i, v_spi_r, &k),
			 -EINVAL);
	assert_int_equal(ike_derive_sa_keys(PRF, 32, IKE_INTEG_NONE, v_ni, sizeof(v_ni), v_nr,
					    sizeof(v_nr), v_gir, 32, v_spi_i, NULL, &k), -EINVAL);
}

/* (4) Child SA KEYMAT without and with PFS. */
static void
test_child_keymat(void **state)
{
	uint8_t out[IKE_PRF_PLUS_MAX_BLOCKS * 32 + 1];

	(void)state;
	assert_int_equal(ike_child_keymat(PRF, v_g256_sk_d, 32, NULL, 0, v_ni, sizeof(v_ni),
					  v_nr, sizeof(v_nr), out, sizeof(v_keymat)), 0);
	assert_memory_equal(out, v_keymat, sizeof(v_keymat));
	assert_int_equal(ike_child_keymat(PRF, v_g256_sk_d, 32, v_gir2, sizeof(v_gir2),
					  v_ni2, sizeof(v_ni2), v_nr2, sizeof(v_nr2), out,
					  sizeof(v_keymat_pfs)), 0);
	assert_memory_equal(out, v_keymat_pfs, sizeof(v_keymat_pfs));
	assert_int_equal(ike_child_keymat(PRF, v_g256_sk_d, 32, NULL, 0, v_ni, sizeof(v_ni),
					  v_nr, sizeof(v_nr), out, sizeof(out)), -EINVAL);
	assert_int_equal(ike_child_keymat(PRF, v_g256_sk_d, 32, v_gir2, 0, v_ni, sizeof(v_ni),
					  v_nr, sizeof(v_nr), out, 72), -EINVAL);
	assert_int_equal(ike_child_keymat(PRF, v_g256_sk_d, 32, NULL, 0, v_ni, 15,
					  v_nr, sizeof(v_nr), out, 72), -EINVAL);
}

struct gcmvec {
	const uint8_t *key;
	size_t key_len;
	const uint8_t *iv, *aad, *plain, *sealed;
	size_t aad_len, plen;
	size_t payload_len;
};

static const struct gcmvec gcmvecs[] = {
	{ v_g256_sk_ei, sizeof(v_g256_sk_ei), v_gcm1_iv, v_gcm1_aad, v_gcm1_plain,
	  v_gcm1_sealed, sizeof(v_gcm1_aad), sizeof(v_gcm1_plain), V_GCM1_PAYLOAD_LEN },
	{ v_g128_sk_er, sizeof(v_g128_sk_er), v_gcm2_iv, v_gcm2_aad, v_gcm2_plain,
	  v_gcm2_sealed, sizeof(v_gcm2_aad), sizeof(v_gcm2_plain), V_GCM2_PAYLOAD_LEN },
};

/* (4) SK payloads sealed and opened, separately and in place, then unpadded. */
static void
test_aead_vectors(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(gcmvecs); i++) {
		const struct gcmvec *g = &gcmvecs[i];
		uint8_t buf[128], plain[128];
		size_t n;

		assert_true(g->plen + IKE_GCM_ICV_LEN <= sizeof(buf));
		assert_int_equal(ike_aead_seal(g->key, g->key_len, g->iv, g->aad, g->aad_len,
					       g->plain, g->plen, buf), 0);
		assert_memory_equal(buf, g->sealed, g->plen + IKE_GCM_ICV_LEN);
		assert_int_equal(ike_aead_open(g->key, g->key_len, g->iv, g->aad, g->aad_len,
					       g->sealed, g->plen + IKE_GCM_ICV_LEN, plain), 0);
		assert_memory_equal(plain, g->plain, g->plen);
		/* In place, both ways. */
		memcpy(buf, g->plain, g->plen);
		assert_int_equal(ike_aead_seal(g->key, g->key_len, g->iv, g->aad, g->aad_len,
					       buf, g->plen, buf), 0);
		assert_memory_equal(buf, g->sealed, g->plen + IKE_GCM_ICV_LEN);
		assert_int_equal(ike_aead_open(g->key, g->key_len, g->iv, g->aad, g->aad_len,
					       buf, g->plen + IKE_GCM_ICV_LEN, buf), 0);
		assert_memory_equal(buf, g->plain, g->plen);
		assert_int_equal(ike_sk_unpad(buf, g->plen, &n), 0);
		assert_int_equal(n, g->payload_len);
	}
}

/* Opening with one bit of one input flipped fails and hands back zeros. */
static void
open_tampered(const struct gcmvec *g, int which, size_t at)
{
	uint8_t key[IKE_ENC_MAX_LEN], iv[IKE_GCM_IV_LEN], aad[64], in[128], out[128];
	uint8_t *target[] = { key, iv, aad, in };

	memcpy(key, g->key, g->key_len);
	memcpy(iv, g->iv, sizeof(iv));
	memcpy(aad, g->aad, g->aad_len);
	memcpy(in, g->sealed, g->plen + IKE_GCM_ICV_LEN);
	target[which][at] ^= 0x10;
	memset(out, 0xa5, sizeof(out));
	assert_int_equal(ike_aead_open(key, g->key_len, iv, aad, g->aad_len, in,
				       g->plen + IKE_GCM_ICV_LEN, out), -EBADMSG);
	assert_true(all_zero(out, g->plen));
}

/* (5) A flipped bit anywhere in the key, salt, IV, AAD, ciphertext or ICV. */
static void
test_aead_tamper(void **state)
{
	enum { KEY, IV, AAD, IN };
	const struct gcmvec *g = &gcmvecs[0];
	const size_t ct = g->plen, sealed = g->plen + IKE_GCM_ICV_LEN;
	const size_t cases[][2] = {
		{ KEY, 0 }, { KEY, g->key_len - 1 },		/* key; salt */
		{ IV, 0 }, { IV, IKE_GCM_IV_LEN - 1 },
		{ AAD, 0 }, { AAD, 17 }, { AAD, g->aad_len - 1 },
		{ IN, 0 }, { IN, ct / 2 }, { IN, ct - 1 },	/* ciphertext */
		{ IN, ct }, { IN, sealed - 1 },			/* ICV */
	};
	uint8_t out[128];

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++)
		open_tampered(g, (int)cases[i][0], cases[i][1]);
	/* Truncated: AAD one byte short, ciphertext one byte short, no room for an ICV. */
	assert_int_equal(ike_aead_open(g->key, g->key_len, g->iv, g->aad, g->aad_len - 1,
				       g->sealed, sealed, out), -EBADMSG);
	assert_int_equal(ike_aead_open(g->key, g->key_len, g->iv, g->aad, g->aad_len,
				       g->sealed + 1, sealed - 1, out), -EBADMSG);
	assert_int_equal(ike_aead_open(g->key, g->key_len, g->iv, g->aad, g->aad_len,
				       g->sealed, IKE_GCM_ICV_LEN - 1, out), -EBADMSG);
	/* Key lengths other than 16 or 32 + salt. */
	assert_int_equal(ike_aead_seal(g->key, 32, g->iv, g->aad, g->aad_len, g->plain,
				       g->plen, out), -EINVAL);
	assert_int_equal(ike_aead_open(g->key, 16, g->iv, g->aad, g->aad_len, g->sealed,
				       sealed, out), -EINVAL);
}

/* (6) Pad length against the length of the decrypted data. */
/*
 * The SK payload with AES-CBC and HMAC-SHA2 (RFC 7296 3.14, RFC 4868):
 * known answers from testdata/make_ike_cbc_vectors.py (Python
 * `cryptography` and hmac): ciphertext || ICV for fixed keys, IV, AAD
 * and 48 bytes of plaintext.
 */
#define CBC_128_SHA256	"251ee6d9c6cfcc74dd7745e2340e7e0eabe50eff30f2367d55f7dd00d136c01f" \
			"761f70a0a006ae1a3235606be3747ff3b0a1bce00e7a0479c792076d5ded1aee"
#define CBC_256_SHA384	"d3cf4b9f7d8abf8f33a07378d44d34739103af96709b039ef907555bb63e71e5" \
			"eff1033897753057442c1b7c9e9b92c3c5db2af7a551e4b1898da519a2f00dee" \
			"b96ecbe4ad8df4c9"
#define CBC_256_SHA512	"d3cf4b9f7d8abf8f33a07378d44d34739103af96709b039ef907555bb63e71e5" \
			"eff1033897753057442c1b7c9e9b92c3ab44272541c98d3023df80e9bd9e4d28" \
			"3639511fde67f75fee99efdbdb0e3e0a"

static const struct {
	uint16_t integ;
	size_t ek_len, ak_len, icv_len;
	const char *want;
} cbc_cases[] = {
	{ IKE_INTEG_HMAC_SHA2_256_128, 16, 32, 16, CBC_128_SHA256 },
	{ IKE_INTEG_HMAC_SHA2_384_192, 32, 48, 24, CBC_256_SHA384 },
	{ IKE_INTEG_HMAC_SHA2_512_256, 32, 64, 32, CBC_256_SHA512 },
};

struct cbc_in {
	uint8_t ek[32], ak[64], iv[IKE_CBC_IV_LEN], aad[32], plain[48];
};

static void
cbc_inputs(struct cbc_in *in)
{
	for (unsigned i = 0; i < 64; i++) {
		if (i < 32)
			in->ek[i] = (uint8_t)(1 + i);
		in->ak[i] = (uint8_t)(0x80 + i);
		if (i < IKE_CBC_IV_LEN)
			in->iv[i] = (uint8_t)(0x40 + i);
		if (i < 32)
			in->aad[i] = (uint8_t)(0x20 + i);
		if (i < 48)
			in->plain[i] = i < 47 ? (uint8_t)(0x60 + i) : 0;
	}
}

/* (4) Seal gives the known answer; open gets the plaintext back, in place too. */
static void
test_cbc_vectors(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cbc_cases); i++) {
		const size_t n = 48 + cbc_cases[i].icv_len;
		const uint16_t integ = cbc_cases[i].integ;
		uint8_t want[80], out[80], back[48];
		struct cbc_in in;

		cbc_inputs(&in);
		assert_int_equal(ike_integ_key_len(integ), cbc_cases[i].ak_len);
		assert_int_equal(ike_integ_icv_len(integ), cbc_cases[i].icv_len);
		unhex(cbc_cases[i].want, want, n);
		assert_int_equal(ike_cbc_seal(in.ek, cbc_cases[i].ek_len, integ, in.ak,
					      cbc_cases[i].ak_len, in.iv, in.aad, 32, in.plain,
					      48, out), 0);
		assert_memory_equal(out, want, n);
		assert_int_equal(ike_cbc_open(in.ek, cbc_cases[i].ek_len, integ, in.ak,
					      cbc_cases[i].ak_len, in.iv, in.aad, 32, out, n,
					      back), 0);
		assert_memory_equal(back, in.plain, 48);
		assert_int_equal(ike_cbc_open(in.ek, cbc_cases[i].ek_len, integ, in.ak,
					      cbc_cases[i].ak_len, in.iv, in.aad, 32, out, n,
					      out), 0);
		assert_memory_equal(out, in.plain, 48);
	}
}

/*
 * (4) Any flipped bit in the AAD, IV, ciphertext or ICV, a truncated or
 * misaligned input, the wrong integrity key: -EBADMSG, out untouched.
 * Bad arguments: -EINVAL or -EOPNOTSUPP.
 */
static void
test_cbc_tamper(void **state)
{
	const uint16_t integ = IKE_INTEG_HMAC_SHA2_384_192;
	uint8_t sealed[72], msg[72], out[72];
	struct cbc_in in;

	(void)state;
	cbc_inputs(&in);
	assert_int_equal(ike_cbc_seal(in.ek, 32, integ, in.ak, 48, in.iv, in.aad, 32, in.plain, 48,
				      sealed), 0);
	for (size_t bit = 0; bit < 8 * sizeof(sealed); bit += 7) {
		memcpy(msg, sealed, sizeof(msg));
		msg[bit / 8] ^= (uint8_t)(1u << bit % 8);
		memset(out, 0x5a, sizeof(out));
		assert_int_equal(ike_cbc_open(in.ek, 32, integ, in.ak, 48, in.iv, in.aad, 32, msg,
					      sizeof(msg), out), -EBADMSG);
		assert_true(out[0] == 0x5a && out[47] == 0x5a);
	}
	in.aad[3] ^= 0x80;
	assert_int_equal(ike_cbc_open(in.ek, 32, integ, in.ak, 48, in.iv, in.aad, 32, sealed, 72,
				      out), -EBADMSG);
	in.aad[3] ^= 0x80;
	in.iv[0] ^= 1;
	assert_int_equal(ike_cbc_open(in.ek, 32, integ, in.ak, 48, in.iv, in.aad, 32, sealed, 72,
				      out), -EBADMSG);
	in.iv[0] ^= 1;
	in.ak[47] ^= 1;
	assert_int_equal(ike_cbc_open(in.ek, 32, integ, in.ak, 48, in.iv, in.aad, 32, sealed, 72,
				      out), -EBADMSG);
	in.ak[47] ^= 1;
	assert_int_equal(ike_cbc_open(in.ek, 32, integ, in.ak, 48, in.iv, in.aad, 32, sealed, 24,
				      out), -EBADMSG);
	assert_int_equal(ike_cbc_open(in.ek, 32, integ, in.ak, 48, in.iv, in.aad, 32, sealed, 71,
				      out), -EBADMSG);
	assert_int_equal(ike_cbc_open(in.ek, 32, integ, in.ak, 48, in.iv, in.aad, 32, sealed, 0,
				      out), -EBADMSG);
	/* The key lengths must be the algorithm's; plaintext must be whole blocks. */
	assert_int_equal(ike_cbc_open(in.ek, 32, integ, in.ak, 32, in.iv, in.aad, 32, sealed, 72,
				      out), -EINVAL);
	assert_int_equal(ike_cbc_seal(in.ek, 24, integ, in.ak, 48, in.iv, in.aad, 32, in.plain, 48,
				      out), -EINVAL);
	assert_int_equal(ike_cbc_seal(in.ek, 32, integ, in.ak, 48, in.iv, in.aad, 32, in.plain, 47,
				      out), -EINVAL);
	assert_int_equal(ike_cbc_seal(in.ek, 32, 2, in.ak, 12, in.iv, in.aad, 32, in.plain, 48,
				      out), -EOPNOTSUPP);
	assert_int_equal(ike_integ_key_len(2), 0);
	assert_int_equal(ike_integ_icv_len(IKE_INTEG_NONE), 0);
}

/*
 * A rekey that changes the PRF: SKEYSEED with the old SA's (HMAC-SHA-256
 * over the old SK_d), prf+ with the new one (HMAC-SHA-512, keyed with the
 * 32-byte SKEYSEED), as strongSwan derives them.
 */
static void
test_rekey_keys_prf_change(void **state)
{
	static const uint8_t sk_d[32] = { 7 }, ni[32] = { 1 }, nr[32] = { 2 }, gir[56] = { 3 };
	static const uint8_t spi_i[8] = { 4 }, spi_r[8] = { 5 };
	const struct ike_iov v[] = { IOV(gir), IOV(ni), IOV(nr) };
	const struct ike_iov seed[] = { IOV(ni), IOV(nr), IOV(spi_i), IOV(spi_r) };
	uint8_t skeyseed[32], km[64 + 2 * 36 + 2 * 64];	/* GCM: SK_e = key + salt */
	size_t len = sizeof(skeyseed);
	struct ike_keys k;

	(void)state;
	assert_int_equal(ike_prf(IKE_PRF_HMAC_SHA2_256, sk_d, sizeof(sk_d), v, 3, skeyseed,
				 &len), 0);
	assert_int_equal(ike_prf_plus(IKE_PRF_HMAC_SHA2_512, skeyseed, sizeof(skeyseed), seed, 4,
				      km, sizeof(km)), 0);
	assert_int_equal(ike_derive_rekey_keys(IKE_PRF_HMAC_SHA2_512, IKE_PRF_HMAC_SHA2_256, 32,
					       IKE_INTEG_NONE, sk_d, sizeof(sk_d), ni, 32, nr,
					       32, gir, sizeof(gir), spi_i, spi_r, &k), 0);
	assert_int_equal(k.prf_len, 64);
	assert_memory_equal(k.sk_d, km, 64);
	assert_memory_equal(k.sk_ei, km + 64, 36);
	assert_memory_equal(k.sk_pr, km + 64 + 72 + 64, 64);
	assert_int_equal(ike_derive_rekey_keys(IKE_PRF_HMAC_SHA2_512, 2, 32, IKE_INTEG_NONE, sk_d,
					       sizeof(sk_d), ni, 32, nr, 32, gir, sizeof(gir),
					       spi_i, spi_r, &k), -EOPNOTSUPP);
	ike_keys_wipe(&k);
}

/* CBC IKE SA keys: SK_a as long as the integrity algorithm's key, not the PRF's. */
static void
test_sa_keys_cbc_integ(void **state)
{
	static const uint8_t ni[32] = { 1 }, nr[32] = { 2 }, gir[32] = { 3 };
	static const uint8_t spi_i[8] = { 4 }, spi_r[8] = { 5 };
	struct ike_keys k;

	(void)state;
	assert_int_equal(ike_derive_sa_keys(IKE_PRF_HMAC_SHA2_256, 32,
					    IKE_INTEG_HMAC_SHA2_512_256, ni, 32, nr, 32, gir, 32,
					    spi_i, spi_r, &k), 0);
	assert_int_equal(k.prf_len, 32);
	assert_int_equal(k.integ_len, 64);
	assert_int_equal(k.enc_len, 32);
	assert_int_equal(ike_derive_sa_keys(IKE_PRF_HMAC_SHA2_512, 16, IKE_INTEG_NONE, ni, 32, nr,
					    32, gir, 32, spi_i, spi_r, &k), 0);
	assert_int_equal(k.prf_len, 64);
	assert_int_equal(k.integ_len, 0);
	assert_int_equal(k.enc_len, 20);
	assert_int_equal(ike_derive_sa_keys(IKE_PRF_HMAC_SHA2_256, 16, 2, ni, 32, nr, 32, gir, 32,
					    spi_i, spi_r, &k), -EOPNOTSUPP);
	ike_keys_wipe(&k);
}

static void
test_sk_unpad(void **state)
{
	static uint8_t big[256];
	const struct {
		const uint8_t *p;
		size_t len;
		int rc;
		size_t payload;
	} cases[] = {
		{ (const uint8_t *)"", 0, -EBADMSG, 0 },		/* no pad length */
		{ (const uint8_t *)"\x00", 1, 0, 0 },			/* empty, no pad */
		{ (const uint8_t *)"\x01", 1, -EBADMSG, 0 },
		{ (const uint8_t *)"A\x00", 2, 0, 1 },			/* GCM's usual */
		{ (const uint8_t *)"ABC\x02", 4, 0, 1 },
		{ (const uint8_t *)"\xff\xff\x02", 3, 0, 0 },		/* all padding */
		{ (const uint8_t *)"AB\x03", 3, -EBADMSG, 0 },		/* one too many */
		{ (const uint8_t *)"\xff", 1, -EBADMSG, 0 },
		{ big, 256, 0, 0 },					/* 255 + 1 */
		{ big + 1, 255, -EBADMSG, 0 },
	};
	size_t n;

	(void)state;
	memset(big, 0xff, sizeof(big));
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		n = 12345;
		assert_int_equal(ike_sk_unpad(cases[i].p, cases[i].len, &n), cases[i].rc);
		assert_int_equal(n, cases[i].rc == 0 ? cases[i].payload : 12345);
	}
	assert_int_equal(ike_sk_unpad(big, 0, NULL), -EINVAL);
	assert_int_equal(ike_sk_unpad(NULL, 1, &n), -EINVAL);
}

/* (4) AUTH for both sides: ID MACs from SK_pi / SK_pr, then the PSK AUTH. */
static void
test_psk_auth(void **state)
{
	const struct {
		const uint8_t *sk_p, *id, *msg, *nonce, *id_mac, *auth;
		size_t id_len, msg_len, nonce_len;
	} sides[] = {
		{ v_g256_sk_pi, v_idi_body, v_msgi, v_nr, v_idi_mac, v_auth_i,
		  sizeof(v_idi_body), sizeof(v_msgi), sizeof(v_nr) },
		{ v_g256_sk_pr, v_idr_body, v_msgr, v_ni, v_idr_mac, v_auth_r,
		  sizeof(v_idr_body), sizeof(v_msgr), sizeof(v_ni) },
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(sides); i++) {
		uint8_t mac[32], auth[40];
		size_t mlen = sizeof(mac), alen = sizeof(auth);
		const struct ike_iov so[] = { { sides[i].msg, sides[i].msg_len },
					      { sides[i].nonce, sides[i].nonce_len },
					      { mac, sizeof(mac) } };

		assert_int_equal(ike_id_mac(PRF, sides[i].sk_p, 32, sides[i].id, sides[i].id_len,
					    mac, &mlen), 0);
		assert_int_equal(mlen, 32);
		assert_memory_equal(mac, sides[i].id_mac, 32);
		assert_int_equal(ike_psk_auth(PRF, v_psk, sizeof(v_psk), so, 3, auth, &alen), 0);
		assert_int_equal(alen, 32);
		assert_true(ike_auth_equal(auth, sides[i].auth, 32));
		auth[31] ^= 1;
		assert_false(ike_auth_equal(auth, sides[i].auth, 32));
		/* Another PSK, another AUTH. */
		alen = sizeof(auth);
		assert_int_equal(ike_psk_auth(PRF, v_psk, sizeof(v_psk) - 1, so, 3, auth, &alen),
				 0);
		assert_false(ike_auth_equal(auth, sides[i].auth, 32));
	}
	assert_true(ike_auth_equal("", "", 0));
}

static void
test_psk_auth_args(void **state)
{
	const struct ike_iov so = { "x", 1 };
	uint8_t auth[32];
	size_t alen = sizeof(auth);

	(void)state;
	assert_int_equal(ike_psk_auth(PRF, v_psk, 0, &so, 1, auth, &alen), -EINVAL);
	assert_int_equal(ike_psk_auth(4, v_psk, sizeof(v_psk), &so, 1, auth, &alen),
			 -EOPNOTSUPP);
	alen = 16;
	assert_int_equal(ike_psk_auth(PRF, v_psk, sizeof(v_psk), &so, 1, auth, &alen),
			 -ENOSPC);
	alen = sizeof(auth);
	assert_int_equal(ike_id_mac(PRF, NULL, 32, v_idi_body, sizeof(v_idi_body), auth,
				    &alen), -EINVAL);
}

static void
test_random(void **state)
{
	uint8_t a[32] = { 0 }, b[32] = { 0 };

	(void)state;
	assert_int_equal(ike_random(a, sizeof(a)), 0);
	assert_int_equal(ike_random(b, sizeof(b)), 0);
	assert_memory_not_equal(a, b, sizeof(a));
	assert_int_equal(ike_random(a, 0), 0);
	assert_int_equal(ike_random(NULL, 1), -EINVAL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dh_ecp256_rfc5903),
		cmocka_unit_test(test_dh_x25519_rfc7748),
		cmocka_unit_test(test_dh_ecp384_rfc5903),
		cmocka_unit_test(test_dh_modp2048),
		cmocka_unit_test(test_dh_new_agree),
		cmocka_unit_test(test_dh_ecp256_bad_peer),
		cmocka_unit_test(test_dh_x25519_bad_peer),
		cmocka_unit_test(test_dh_args),
		cmocka_unit_test(test_prf_rfc4231),
		cmocka_unit_test(test_prf_sha384_512),
		cmocka_unit_test(test_prf_args),
		cmocka_unit_test(test_prf_plus),
		cmocka_unit_test(test_sa_keys),
		cmocka_unit_test(test_rekey_keys),
		cmocka_unit_test(test_sa_keys_args),
		cmocka_unit_test(test_child_keymat),
		cmocka_unit_test(test_aead_vectors),
		cmocka_unit_test(test_aead_tamper),
		cmocka_unit_test(test_cbc_vectors),
		cmocka_unit_test(test_cbc_tamper),
		cmocka_unit_test(test_sa_keys_cbc_integ),
		cmocka_unit_test(test_rekey_keys_prf_change),
		cmocka_unit_test(test_sk_unpad),
		cmocka_unit_test(test_psk_auth),
		cmocka_unit_test(test_psk_auth_args),
		cmocka_unit_test(test_random),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
