/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dpvpn_proto.h"
#include "lock.h"
#include "seqstate.h"

#define SEQ_MAX_ENTRIES	65536

struct seq_entry {
	char name[DPVPN_NAME_LEN];
	uint32_t spi;
	uint64_t limit;
};

struct seqstate {
	uint64_t block;
	int lock_fd;		/* PATH.lock, held while open (lock.h) */
	char path[4096];
	struct seq_entry *e;
	size_t n;
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
	s->lock_fd = take_lock(path, err, len);
	if (s->lock_fd < 0) {
		free(s);
		return NULL;
	}
	s->e = calloc(SEQ_MAX_ENTRIES, sizeof(*s->e));
	if (s->e == NULL) {
		snprintf(err, len, "%s", strerror(ENOMEM));
		seq_close(s);
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
	while (fgets(line, sizeof(line), f) != NULL) {
		struct seq_entry *e = &s->e[s->n];
		char name[DPVPN_NAME_LEN + 1];
		unsigned int spi;

		lineno++;
		if (s->n == SEQ_MAX_ENTRIES ||
		    sscanf(line, "%32s %x %" SCNu64, name, &spi, &e->limit) != 3 ||
		    strlen(name) >= DPVPN_NAME_LEN) {
			snprintf(err, len, "%s:%d: expected 'NAME SPI LIMIT'", path, lineno);
			fclose(f);
			seq_close(s);
			return NULL;
		}
		strcpy(e->name, name);
		e->spi = spi;
		s->n++;
	}
	fclose(f);
	return s;
}

void
seq_close(struct seqstate *s)
{
	if (s == NULL)
		return;
	close(s->lock_fd);
	free(s->e);
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

static struct seq_entry *
find(const struct seqstate *s, const char *name, uint32_t spi)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->e[i].spi == spi && strcmp(s->e[i].name, name) == 0)
			return &s->e[i];
	return NULL;
}

uint64_t
seq_get(const struct seqstate *s, const char *name, uint32_t spi)
{
	const struct seq_entry *e = find(s, name, spi);

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

int
seq_put(struct seqstate *s, const char *name, uint32_t spi, uint64_t limit)
{
	struct seq_entry *e = find(s, name, spi);

	if (e == NULL) {
		if (s->n == SEQ_MAX_ENTRIES) {
			errno = ENOSPC;
			return -1;
		}
		e = &s->e[s->n++];
		snprintf(e->name, sizeof(e->name), "%s", name);
		e->spi = spi;
	}
	if (limit > e->limit)
		e->limit = limit;
	return save(s);
}
