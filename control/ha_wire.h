/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ha_wire.h - the frames of the HA state-sync channel ([ha] issue).  Two
 * dpvpnd, one active (master) and one standby (backup), keep one set of
 * tunnels: the active sends the standby every IKE SA record and every
 * CHILD_SA it creates, rekeys or deletes, its sequence-number reservations
 * and the inbound SAs' replay high marks, so that the standby can take over
 * without reusing a sequence number (and so an AEAD nonce) or accepting a
 * replayed packet.  The transport (TLS 1.3 with a PSK) is not here: it
 * delivers whole frames, and this codec encodes and decodes one frame.  No
 * sockets, no state, no policy: what a well-formed frame means is the
 * channel's business.
 *
 * Frame: a header and a body, every integer big-endian, field by field (no
 * C struct is copied, except SA_ADD's body, below):
 *
 *     0        2        4                8                12
 *     | type   | flags  | seq            | len            | body (len bytes)
 *
 *   type   enum ha_type; anything else is refused
 *   flags  0 (none defined yet: a frame with any bit set is refused)
 *   seq    the sender's message number (ACK names it)
 *   len    body bytes: exactly the frame's length - HA_HDR_LEN, at most
 *          HA_BODY_MAX
 *
 * Bodies (offsets from the body's start; names are DPVPN_NAME_LEN bytes,
 * NUL-terminated, not empty, printable ASCII, zero after the NUL; SPIs are
 * the ESP header's four bytes, so struct ha_msg and struct ha_mark keep them
 * in network order as the dataplane does):
 *
 *   HELLO        0 u32 version    HA_HELLO_VERSION of the sender
 *                4 u32 sa_size    sizeof(struct dpvpn_sa_cfg) of the sender
 *                8 u8  role       enum ha_role
 *                9 u8  priority   the node's configured priority
 *               10 u8  role_b     enum ha_role in the second group (the
 *                                   config's second `group` of
 *                                   virtual-address; backup when none)
 *               11 u8  reserved   0
 *               12 u64 epoch      the sender's role epoch
 *               20 char node[32]  the sender's node name               52 bytes
 *   SNAP_BEGIN   0 u64 epoch      a full snapshot follows               8
 *   SNAP_END     0 u32 count      records the snapshot held             4
 *   IKE_SET      0 u8  key[16]    an IKE SA's record, as dpvpnd keeps it
 *               16 u32 len          in the dataplane (KEEP_SET):
 *               20 u8  rec[len]     1..DPVPN_KEEP_MAX bytes            20 + len
 *   IKE_DEL      0 u8  key[16]                                         16
 *   SA_ADD       0 u32 len        sizeof(struct dpvpn_sa_cfg)
 *                4 the struct's bytes as the sender's dpvpnd builds
 *                  them for its dataplane (host byte order); its spi
 *                  not 0, its dir and name as SA_DEL's (the dataplane
 *                  checks the rest when it installs it)               4 + len
 *   SA_DEL       0 char name[32]  the tunnel
 *               32 u32 spi        not 0
 *               36 u8  dir        DPVPN_DIR_IN (1) or DPVPN_DIR_OUT (2) 37
 *   SEQ          0 char name[32]  an outbound SA's reservation
 *               32 u32 spi          (seqstate.h), spi not 0: the last
 *               36 u64 limit        number it may use, not 0           44
 *   ACK          0 u32 seq        a frame of the peer's, by its hdr.seq 4
 *   MARKS        0 u16 count      1..HA_MARKS_MAX inbound SAs, then
 *           2 + 12i u32 spi         entry i: not 0,
 *           6 + 12i u64 high        the highest number it accepted  2 + 12 count
 *   ROLE         0 u8  role       enum ha_role (the first group)
 *                1 u64 epoch
 *                9 u8  role_b     enum ha_role (the second group)      10
 *   POLICY       0 u8  op         HA_POLICY_ADD (1) or HA_POLICY_DEL (2)
 *                1 u8  family     src: DPVPN_AF_INET (4) or _INET6 (6)
 *                2 u8  len          prefix length, host bits zero
 *                3 u8  addr[16]     (IPv4: the first 4, the rest zero)
 *               19 ...            dst: the same 18 bytes, src's family
 *               37 u32 spi        the outbound SA it selects (add: not 0)
 *               41 u32 priority                                        45
 *
 * A body shorter or longer than its type's layout says is refused: no
 * trailing bytes.  ha_decode names the field it refuses and why
 * ("ike_set.len: 20000 above 16384", "hdr.type: 99 unknown"); ha_encode
 * makes the same checks on a message before it writes a byte, so whatever
 * it encodes decodes, and decoding then encoding gives back the same bytes
 * (fuzz/fuzz_ha_wire.c checks it).
 *
 * SA_ADD carries the struct as it is, in host byte order, so both ends
 * must run the same program on the same architecture: HELLO says so.
 * HA_HELLO_VERSION joins this format's version (HA_WIRE_VERSION) and the
 * dataplane protocol's (DPVPN_PROTO_VERSION, which moves whenever struct
 * dpvpn_sa_cfg does), and sa_size is the struct's size: the channel refuses
 * a peer whose version or sa_size is not its own.  The codec does not: it
 * reads a HELLO of any version, so that the refusal can say which.
 *
 * Alignment: decoding does not copy.  ike_set.rec, sa_add.sa and
 * marks.raw point into the frame and live as long as it does; the struct
 * of SA_ADD sits at frame offset 16, so a frame buffer that is 8-byte
 * aligned (malloc's are) gives an aligned struct pointer.  ha_decode
 * refuses an SA_ADD frame whose struct would be misaligned rather than
 * hand out such a pointer.
 *
 * Keys travel in IKE_SET (an IKE SA's record holds its keys: ike/ike_keep.c)
 * and SA_ADD (the ESP keys): the caller wipes every frame buffer, sent or
 * received, with explicit_bzero once it is done with it, and the structs
 * it encoded from.  The codec keeps no copy: struct ha_msg points into the
 * frame for everything secret.
 */
#ifndef DPVPN_HA_WIRE_H
#define DPVPN_HA_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "dpvpn_proto.h"

#define HA_WIRE_VERSION	2	/* 2: a role per group (HELLO, ROLE) */
/* What HELLO's version carries: this format and the dataplane protocol's. */
#define HA_HELLO_VERSION	((uint32_t)HA_WIRE_VERSION << 16 | DPVPN_PROTO_VERSION)
#define HA_HDR_LEN	12
#define HA_MARKS_MAX	256
/* The largest body, IKE_SET's (ha_wire.c checks that every other fits). */
#define HA_BODY_MAX	(DPVPN_KEEP_KEY_LEN + 4 + DPVPN_KEEP_MAX)
#define HA_FRAME_MAX	(HA_HDR_LEN + HA_BODY_MAX)

enum ha_type {
	HA_HELLO = 1,
	HA_SNAP_BEGIN,
	HA_SNAP_END,
	HA_IKE_SET,
	HA_IKE_DEL,
	HA_SA_ADD,
	HA_SA_DEL,
	HA_SEQ,
	HA_ACK,
	HA_MARKS,
	HA_ROLE,
	HA_POLICY,
	HA_TYPE_END
};

enum { HA_POLICY_ADD = 1, HA_POLICY_DEL = 2 };

enum ha_role {
	HA_ROLE_BACKUP = 0,
	HA_ROLE_MASTER = 1,
	HA_ROLE_FAULT = 2,
};

/* One inbound SA's replay high mark. */
struct ha_mark {
	uint32_t spi;		/* network order, as the dataplane keeps it */
	uint64_t high;
};

/* One frame, decoded; integers in host order (SPIs: network order). */
struct ha_msg {
	uint16_t type;		/* enum ha_type */
	uint32_t seq;		/* the sender's message number */
	union {
		struct {
			uint32_t version;	/* HA_HELLO_VERSION */
			uint32_t sa_size;	/* sizeof(struct dpvpn_sa_cfg) */
			uint8_t role, priority, role_b;	/* role_b: the second group's */
			uint64_t epoch;
			char node[DPVPN_NAME_LEN];
		} hello;
		struct {
			uint64_t epoch;
		} snap_begin;
		struct {
			uint32_t count;
		} snap_end;
		struct {
			uint8_t key[DPVPN_KEEP_KEY_LEN];
			uint32_t len;
			const uint8_t *rec;	/* len bytes, in the frame: secret */
		} ike_set;
		struct {
			uint8_t key[DPVPN_KEEP_KEY_LEN];
		} ike_del;
		struct {
			const struct dpvpn_sa_cfg *sa;	/* in the frame (aligned): secret */
		} sa_add;
		struct {
			char name[DPVPN_NAME_LEN];
			uint32_t spi;
			uint8_t dir;		/* enum dpvpn_sa_dir */
		} sa_del;
		struct {
			char name[DPVPN_NAME_LEN];
			uint32_t spi;
			uint64_t limit;
		} seq;
		struct {
			uint32_t seq;
		} ack;
		struct {
			uint16_t count;
			const uint8_t *raw;	/* count wire entries: read with ha_mark_get */
		} marks;
		struct {
			uint8_t role, role_b;	/* the first group's, the second's */
			uint64_t epoch;
		} role;
		struct {
			uint8_t op;		/* HA_POLICY_ADD or _DEL */
			struct dpvpn_policy p;	/* POLICY_ADD's; spi in network order */
		} policy;
	} u;
};

/*
 * Encode m into buf: the frame's length, or 0 (nothing written) if m is
 * not valid (the checks ha_decode makes) or the frame does not fit cap.
 * Names are written up to their NUL and zero-filled after it.
 */
size_t ha_encode(uint8_t *buf, size_t cap, const struct ha_msg *m);
/* A MARKS frame from an array of count (1..HA_MARKS_MAX) marks, as ha_encode. */
size_t ha_encode_marks(uint8_t *buf, size_t cap, uint32_t seq, const struct ha_mark *marks,
		       uint16_t count);
/*
 * Decode one whole frame of exactly len bytes into m: 0, or -1 with err
 * naming the field and why ("sa_del.name: not NUL-terminated").
 */
int ha_decode(const uint8_t *buf, size_t len, struct ha_msg *m, char *err, size_t errlen);
/* Entry i (< m->u.marks.count) of a decoded MARKS; all zero for another i. */
void ha_mark_get(const struct ha_msg *m, uint16_t i, struct ha_mark *out);
/* "hello", "snap-begin", ... "role"; "?" for another type. */
const char *ha_type_name(uint16_t type);
/* "backup", "master", "fault"; "?" for another role. */
const char *ha_role_name(uint8_t role);

#endif /* DPVPN_HA_WIRE_H */
