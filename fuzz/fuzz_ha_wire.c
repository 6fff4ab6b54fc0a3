/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_ha_wire.c - the HA sync channel's frame codec (control/ha_wire.c)
 * on one frame as the transport delivers it: the input is the frame.  It
 * is decoded from an exact-size heap copy (malloc's: 8-byte aligned, as
 * ha_wire.h asks, and ASan sees any read past the frame); what decodes is
 * encoded again and must be the input byte for byte (a round trip: the
 * encoder and the decoder cannot disagree on a field, and decode accepts
 * no two frames for one message), must not fit a byte less, and its
 * pointers must lie inside the frame; what does not decode must say which
 * field ("FIELD: why").
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ha_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static __attribute__((noreturn)) void
die(const char *what)
{
	fprintf(stderr, "fuzz_ha_wire: %s\n", what);
	abort();
}

/* Where a decoded message points, the frame's bytes. */
static void
inside(const struct ha_msg *m, const uint8_t *frame, size_t size)
{
	const uint8_t *p = NULL;
	size_t len = 0;
	struct ha_mark mk;

	switch (m->type) {
	case HA_IKE_SET:
		p = m->u.ike_set.rec;
		len = m->u.ike_set.len;
		break;
	case HA_SA_ADD:
		p = (const uint8_t *)m->u.sa_add.sa;
		len = sizeof(struct dpvpn_sa_cfg);
		break;
	case HA_MARKS:
		p = m->u.marks.raw;
		len = (size_t)m->u.marks.count * 12;
		break;
	}
	if (p != NULL && (p < frame + HA_HDR_LEN || p + len != frame + size))
		die("a pointer not to the end of the frame");
	for (uint16_t i = 0; m->type == HA_MARKS && i < m->u.marks.count; i++) {
		ha_mark_get(m, i, &mk);
		if (mk.spi == 0)
			die("a mark with SPI 0 decoded");
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t out[HA_FRAME_MAX];
	struct ha_msg m;
	char err[256] = "";
	uint8_t *frame;
	size_t n;

	frame = malloc(size ? size : 1);
	if (frame == NULL)
		return 0;
	if ((uintptr_t)frame % 8 != 0)
		die("malloc: not 8-byte aligned");
	memcpy(frame, data, size);
	if (ha_decode(frame, size, &m, err, sizeof(err)) != 0) {
		if (strchr(err, ':') == NULL || err[0] == ':')
			die("refused without naming a field");
	} else {
		if (size > HA_FRAME_MAX || strcmp(ha_type_name(m.type), "?") == 0)
			die("decoded: a frame too long or of an unknown type");
		inside(&m, frame, size);
		n = ha_encode(out, sizeof(out), &m);
		if (n != size || memcmp(out, frame, size) != 0)
			die("round trip: encoded again, not the same bytes");
		if (ha_encode(out, size - 1, &m) != 0)
			die("encoded into a byte less than the frame");
		explicit_bzero(out, n);	/* IKE_SET and SA_ADD carry keys: wiped, */
	}
	explicit_bzero(frame, size);	/* as the channel does */
	free(frame);
	return 0;
}
