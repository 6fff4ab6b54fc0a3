/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dpvpn_proto.h"
#include "lock.h"
#include "seqstate.h"

#define SEQ_MAX_ENTRIES	(1u << 22)	/* 4 M outbound SAs: far above --max-sa's reach */

struct seq_entry {
	char name[DPVPN_NAME_LEN];
	uint32_t spi;
	bool queued;		/* in the dirty list: to be appended */
	uint64_t limit;
};

/*
 * The entries in file order, and an open-addressing index over them (slot:
 * entry number + 1, 0 empty; at most half full), so that a lookup costs the
 * same for the ten-thousandth tunnel as for the first.
 */
struct seqstate {
	uint64_t block;
	int lock_fd;		/* PATH.lock, held while open (lock.h) */
	char path[4096];
	struct seq_entry *e;
	size_t n, cap;
	uint32_t *idx;
	size_t idx_size;	/* a power of 2, >= 2 * cap */
	bool batch;		/* seq_batch_begin'ed: puts wait for seq_batch_end */
	bool dirty;		/* a put since the last save */
	/* the entries put since: appended as records at the next flush */
	uint32_t *queue;
	size_t n_queue, queue_cap;
	size_t file_lines;	/* records in the file: rewritten whole past 2 * n + 1024 */
	bool on_disk;		/* the file exists (else the first flush creates it) */
	bool rewrite;		/* the next flush writes the file whole (a torn tail, a failed append) */
	int append_fd;		/* the file, O_APPEND; -1 until needed, and after a rewrite */
};

/* PATH.lock: no other dpvpnd reserves from this file while we do. */
static int
take_lock(const char *path, char *err, size_t len)
{
	char lock[4096 + 8], why[4200];
	int fd;

	snprintf(lock, sizeof(lock), "%s.lock", path);
	fd = lock_take(lock, why, sizeof(why));
	if (fd < 0 && errno == EWOULDBLOCK)
		snprintf(err, len, "%s: another dpvpnd reserves sequence numbers from %s: "
			 "two would hand out the same ones", why, path);
	else if (fd < 0)
		snprintf(err, len, "%s", why);
	return fd;
}

/* FNV-1a over the name and the SPI. */
static size_t
hash(const char *name, uint32_t spi)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (const char *c = name; *c; c++)
		h = (h ^ (uint8_t)*c) * 0x100000001b3ull;
	for (int i = 0; i < 4; i++)
		h = (h ^ ((spi >> (8 * i)) & 0xff)) * 0x100000001b3ull;
	return (size_t)(h ^ (h >> 32));
}

/* The index slot of (name, spi): its entry's, or the empty one it would take. */
static uint32_t *
slot(const struct seqstate *s, const char *name, uint32_t spi)
{
	size_t i = hash(name, spi) & (s->idx_size - 1);

	for (;; i = (i + 1) & (s->idx_size - 1)) {
		const struct seq_entry *e = s->idx[i] ? &s->e[s->idx[i] - 1] : NULL;

		if (e == NULL || (e->spi == spi && strcmp(e->name, name) == 0))
			return &s->idx[i];
	}
}

/* Room for twice as many entries, and the index built anew for them. */
static int
grow(struct seqstate *s)
{
	size_t cap = s->cap ? s->cap * 2 : 1024, size = 2 * cap;
	struct seq_entry *e;
	uint32_t *idx;

	if (cap > SEQ_MAX_ENTRIES) {
		errno = ENOSPC;
		return -1;
	}
	e = realloc(s->e, cap * sizeof(*e));
	if (e == NULL) {
		errno = ENOMEM;
		return -1;
	}
	s->e = e;
	idx = calloc(size, sizeof(*idx));
	if (idx == NULL) {
		errno = ENOMEM;
		return -1;
	}
	s->cap = cap;
	free(s->idx);
	s->idx = idx;
	s->idx_size = size;
	for (size_t i = 0; i < s->n; i++)
		*slot(s, s->e[i].name, s->e[i].spi) = (uint32_t)(i + 1);
	return 0;
}

/* The entry of (name, spi); with add, a new one (limit 0) if there is none. */
static struct seq_entry *
entry(struct seqstate *s, const char *name, uint32_t spi, bool add)
{
	struct seq_entry *e;
	uint32_t *sl;

	if (s->idx_size == 0 && (!add || grow(s)))
		return NULL;
	sl = slot(s, name, spi);
	if (*sl != 0 || !add)
		return *sl ? &s->e[*sl - 1] : NULL;
	if (s->n == s->cap) {
		if (grow(s))
			return NULL;
		sl = slot(s, name, spi);
	}
	e = &s->e[s->n];
	memset(e, 0, sizeof(*e));
	snprintf(e->name, sizeof(e->name), "%s", name);
	e->spi = spi;
	*sl = (uint32_t)++s->n;
	return e;
}

struct seqstate *
seq_open(const char *path, char *err, size_t len)
{
	struct seqstate *s = calloc(1, sizeof(*s));
	char line[256];
	FILE *f;
	int lineno = 0;

	if (s == NULL || strlen(path) >= sizeof(s->path)) {
		snprintf(err, len, "%s: %s", path, s ? "path too long" : strerror(ENOMEM));
		free(s);
		return NULL;
	}
	strcpy(s->path, path);
	s->block = SEQ_BLOCK;
	s->append_fd = -1;
	s->lock_fd = take_lock(path, err, len);
	if (s->lock_fd < 0) {
		free(s);
		return NULL;
	}
	f = fopen(path, "re");
	if (f == NULL) {
		if (errno == ENOENT)
			return s;	/* first start */
		snprintf(err, len, "%s: %s", path, strerror(errno));
		seq_close(s);
		return NULL;
	}
	s->on_disk = true;
	while (fgets(line, sizeof(line), f) != NULL) {
		char name[DPVPN_NAME_LEN + 1];
		struct seq_entry *e;
		unsigned int spi;
		uint64_t limit;

		lineno++;
		/* A last record without its newline was being appended when the
		 * process or the machine stopped: never made durable, so never
		 * used.  Dropped, and the file is written whole next time. */
		if (strchr(line, '\n') == NULL && feof(f)) {
			s->rewrite = true;
			break;
		}
		if (sscanf(line, "%32s %x %" SCNu64, name, &spi, &limit) != 3 ||
		    strlen(name) >= DPVPN_NAME_LEN) {
			snprintf(err, len, "%s:%d: expected 'NAME SPI LIMIT'", path, lineno);
			goto bad;
		}
		e = entry(s, name, spi, true);
		if (e == NULL) {
			snprintf(err, len, "%s:%d: %s", path, lineno, strerror(errno));
			goto bad;
		}
		if (limit > e->limit)
			e->limit = limit;
		s->file_lines++;
	}
	fclose(f);
	return s;
bad:
	fclose(f);
	seq_close(s);
	return NULL;
}

void
seq_close(struct seqstate *s)
{
	if (s == NULL)
		return;
	close(s->lock_fd);
	if (s->append_fd >= 0)
		close(s->append_fd);
	free(s->e);
	free(s->idx);
	free(s->queue);
	free(s);
}

void
seq_set_block(struct seqstate *s, uint64_t block)
{
	s->block = block;
}

uint64_t
seq_block(const struct seqstate *s)
{
	return s->block;
}

uint64_t
seq_get(const struct seqstate *s, const char *name, uint32_t spi)
{
	const struct seq_entry *e = entry((struct seqstate *)s, name, spi, false);

	return e ? e->limit : 0;
}

/* The whole file anew, durably: temporary file, fsync, rename, fsync the directory. */
static int
save(const struct seqstate *s)
{
	char tmp[4096 + 8], dir[4096];
	FILE *f;
	int fd, rc = 0;

	snprintf(tmp, sizeof(tmp), "%s.tmp", s->path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	f = fdopen(fd, "w");
	if (f == NULL) {
		close(fd);
		return -1;
	}
	for (size_t i = 0; i < s->n; i++)
		fprintf(f, "%s %08x %" PRIu64 "\n", s->e[i].name, s->e[i].spi, s->e[i].limit);
	if (fflush(f) != 0 || fsync(fd) != 0)
		rc = -1;
	if (fclose(f) != 0)
		rc = -1;
	if (rc == 0)
		rc = rename(tmp, s->path);
	if (rc != 0) {
		unlink(tmp);
		return -1;
	}
	snprintf(dir, sizeof(dir), "%s", s->path);
	fd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		rc = fsync(fd);
		close(fd);
	}
	return rc;
}

/* The queued entries' records at the end of the file, durably (fdatasync). */
static int
append(struct seqstate *s)
{
	size_t cap = s->n_queue * (DPVPN_NAME_LEN + 32), len = 0;
	char *buf = malloc(cap);
	int rc = 0;

	if (buf == NULL)
		return -1;
	for (size_t i = 0; i < s->n_queue; i++) {
		const struct seq_entry *e = &s->e[s->queue[i]];

		len += (size_t)snprintf(buf + len, cap - len, "%s %08x %" PRIu64 "\n", e->name,
					e->spi, e->limit);
	}
	if (s->append_fd < 0)
		s->append_fd = open(s->path, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (s->append_fd < 0)
		rc = -1;
	for (size_t off = 0; rc == 0 && off < len;) {
		ssize_t w = write(s->append_fd, buf + off, len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			rc = -1;
		else
			off += (size_t)w;
	}
	if (rc == 0 && fdatasync(s->append_fd) != 0)
		rc = -1;
	free(buf);
	return rc;
}

int
seq_put(struct seqstate *s, const char *name, uint32_t spi, uint64_t limit)
{
	struct seq_entry *e = entry(s, name, spi, true);

	if (e == NULL)
		return -1;
	if (limit > e->limit)
		e->limit = limit;
	if (!e->queued) {
		if (s->n_queue == s->queue_cap) {
			size_t cap = s->queue_cap ? 2 * s->queue_cap : 64;
			uint32_t *q = realloc(s->queue, cap * sizeof(*q));

			if (q == NULL) {	/* the whole file, now or at the batch's end */
				s->rewrite = true;
				goto queued;
			}
			s->queue = q;
			s->queue_cap = cap;
		}
		s->queue[s->n_queue++] = (uint32_t)(e - s->e);
		e->queued = true;
	}
queued:
	s->dirty = true;
	return s->batch ? 0 : seq_flush(s);
}

void
seq_batch_begin(struct seqstate *s)
{
	s->batch = true;
}

int
seq_batch_end(struct seqstate *s)
{
	s->batch = false;
	return seq_flush(s);
}

/*
 * What was put since the last flush, durably: appended as records (O(puts),
 * not O(SAs)), or the file written whole when it has none yet, when a torn
 * tail or a failed append is to be cleaned up, or when the records
 * outnumber the SAs twice (a load keeps each SA's highest limit).
 */
int
seq_flush(struct seqstate *s)
{
	bool whole = !s->on_disk || s->rewrite || s->file_lines + s->n_queue > 2 * s->n + 1024;

	if (!s->dirty)
		return 0;
	if (!whole && append(s) != 0)
		whole = true;	/* a record may be half written: the file anew */
	if (whole) {
		if (s->append_fd >= 0)
			close(s->append_fd);	/* the old file's: renamed over */
		s->append_fd = -1;
		if (save(s) != 0) {
			s->rewrite = true;
			return -1;
		}
		s->file_lines = s->n;
		s->on_disk = true;
		s->rewrite = false;
	} else {
		s->file_lines += s->n_queue;
	}
	for (size_t i = 0; i < s->n_queue; i++)
		s->e[s->queue[i]].queued = false;
	s->n_queue = 0;
	s->dirty = false;
	return 0;
}
