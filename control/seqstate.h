/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * seqstate.h - outbound sequence numbers reserved, kept on disk, so that no
 * restart of either process ever sends a sequence number (and so an AEAD
 * nonce) twice under one key.  dpvpnd reserves a block at a time: it writes
 * the new limit to the state file (its first write: temporary file, fsync,
 * rename, fsync of the directory) before the dataplane may use any number
 * below it; after a
 * restart an SA continues above the last limit written.  Numbers reserved
 * but not used are lost, never reused.  The file is text, one record per
 * line: "NAME SPI LIMIT", mode 0600; a reservation appends its record
 * (write, fdatasync: a cost that does not grow with the number of SAs), a
 * load keeps each SA's highest limit, and the file is written whole (as
 * above) when it has more than twice as many records as SAs, or when a
 * record was left half written (a last line without its newline: never
 * durable, so never used, and dropped).  One dpvpnd at a time: two
 * reserving from one file would hand out the same numbers.
 */
#ifndef DPVPN_SEQSTATE_H
#define DPVPN_SEQSTATE_H

#include <stdbool.h>
#include <stdint.h>

#define SEQ_BLOCK	(1ull << 26)	/* numbers per reservation ([control] seq-block) */
#define SEQ_BLOCK_MIN	1024

struct seqstate;

/*
 * Lock PATH.lock (lock.h: refused while another dpvpnd holds it), then load
 * path (a missing file is an empty state); NULL and a message on error.
 * The lock is held until seq_close.
 */
struct seqstate *seq_open(const char *path, char *err, size_t len);
void seq_close(struct seqstate *s);
/* Numbers per reservation (default SEQ_BLOCK). */
void seq_set_block(struct seqstate *s, uint64_t block);
uint64_t seq_block(const struct seqstate *s);
/* The limit last written for the SA, 0 if none. */
uint64_t seq_get(const struct seqstate *s, const char *name, uint32_t spi);
/*
 * Record limit and make it durable; -1 (errno set) if it could not be.
 * Inside a batch it is only recorded: durable at seq_batch_end.
 */
int seq_put(struct seqstate *s, const char *name, uint32_t spi, uint64_t limit);
/*
 * A batch of puts made durable together, one write and fsync instead of one
 * per SA (an install of 100 000 tunnels): the caller ends the batch before
 * anything may use the numbers recorded in it (dpvpnd: before the
 * dataplane's BATCH_COMMIT, which is when policies start selecting the new
 * SAs).  seq_batch_end returns -1 (errno set) if the state could not be
 * saved (ending a batch twice does no harm); seq_flush saves now what was
 * put.
 */
void seq_batch_begin(struct seqstate *s);
int seq_batch_end(struct seqstate *s);
int seq_flush(struct seqstate *s);

#endif /* DPVPN_SEQSTATE_H */
