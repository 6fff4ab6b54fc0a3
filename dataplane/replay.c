/* SPDX-License-Identifier: BSD-3-Clause */
#include <string.h>

#include "replay.h"

bool
replay_init(struct replay_window *w, uint32_t size, bool shared)
{
	uint32_t n = 2;

	if (size != 0 && !replay_window_ok(size))
		return false;
	while (n < size / 64 + 1)
		n *= 2;
	memset(w, 0, sizeof(*w));
	w->size = size;
	w->mask = (uint16_t)(n - 1);
	w->shared = shared;
	return true;
}
