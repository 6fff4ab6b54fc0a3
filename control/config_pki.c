/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * config_pki.c - a keying = ike tunnel's certificate keys (the [ikepki]
 * issue): auth = psk | pubkey, cert, private-key, ca (a file or a directory),
 * crl; and cfg_ike_pki_load, which reads those files into ike_pki's
 * credential and trust anchors, for the config check (errors at the key's
 * file:line) and for dpvpnd when it makes the connection.
 *
 * The private key's file is opened like every key file (cfg_open_secret: a
 * private regular file of root or of us, no symbolic link); its bytes are
 * wiped once ike_pki has parsed them, and no message quotes any file's bytes.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/rand.h>

#include "config_parse.h"
#include "ike_pki.h"

int cfg_key_tun_auth(struct parser *p, const char *val)
{
	struct cfg_ike *ike = &CUR_TUN(p)->ike;

	ike->pki.auth_line = p->line;
	if (!strcmp(val, "psk"))
		ike->auth = CFG_AUTH_PSK;
	else if (!strcmp(val, "pubkey"))
		ike->auth = CFG_AUTH_PUBKEY;
	else
		return cfg_kerr(p, "expected psk or pubkey, got '%s'", val);
	return 0;
}

/* A path key: absolute or relative to the config's directory, kept absolute. */
static int pki_path(struct parser *p, const char *val, char out[CFG_PKI_PATH_MAX], int *line)
{
	char path[4096];

	*line = p->line;
	if (cfg_key_path(p, val, path))
		return -1;
	if (strlen(path) >= CFG_PKI_PATH_MAX)
		return cfg_kerr(p, "%.80s...: a path of more than %d bytes", path,
				CFG_PKI_PATH_MAX - 1);
	memcpy(out, path, strlen(path) + 1);
	return 0;
}

int cfg_key_tun_cert(struct parser *p, const char *val)
{
	struct cfg_pki *k = &CUR_TUN(p)->ike.pki;

	return pki_path(p, val, k->cert, &k->cert_line);
}

int cfg_key_tun_private_key(struct parser *p, const char *val)
{
	struct cfg_pki *k = &CUR_TUN(p)->ike.pki;

	return pki_path(p, val, k->key, &k->key_line);
}

int cfg_key_tun_ca(struct parser *p, const char *val)
{
	struct cfg_pki *k = &CUR_TUN(p)->ike.pki;

	return pki_path(p, val, k->ca, &k->ca_line);
}

int cfg_key_tun_crl(struct parser *p, const char *val)
{
	struct cfg_pki *k = &CUR_TUN(p)->ike.pki;

	return pki_path(p, val, k->crl, &k->crl_line);
}

/* ---- reading the files -------------------------------------------------- */

struct file {
	uint8_t *p;
	size_t len;
};

/* fd's bytes (at most CFG_PKI_FILE_MAX) into f; closes fd.  0 or -1 with err. */
static int read_fd(int fd, const char *path, struct file *f, char *err, size_t elen)
{
	ssize_t n;

	f->p = malloc(CFG_PKI_FILE_MAX + 1);
	if (f->p == NULL) {
		close(fd);
		return snprintf(err, elen, "%s: out of memory", path), -1;
	}
	n = cfg_read_small(fd, (char *)f->p, CFG_PKI_FILE_MAX + 1);
	close(fd);
	if (n < 0 || n > CFG_PKI_FILE_MAX) {
		snprintf(err, elen, "%s: %s", path, n < 0 ? strerror(errno) :
			 "larger than 256 KiB");
		free(f->p);
		f->p = NULL;
		return -1;
	}
	f->len = (size_t)n;
	return 0;
}

/* A public file (certificate, CA, CRL): a regular file, any owner. */
static int read_public(const char *path, struct file *f, char *err, size_t elen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	struct stat st;

	if (fd < 0)
		return snprintf(err, elen, "%s: %s", path, strerror(errno)), -1;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return snprintf(err, elen, "%s: not a regular file", path), -1;
	}
	return read_fd(fd, path, f, err, elen);
}

static void file_wipe(struct file *f)
{
	if (f->p != NULL)
		explicit_bzero(f->p, f->len);
	free(f->p);
	f->p = NULL;
}

/* The digest takes each file's name and bytes, a NUL and a length apart. */
static void digest_add(EVP_MD_CTX *d, const char *path, const struct file *f)
{
	uint64_t len = f->len;

	EVP_DigestUpdate(d, path, strlen(path) + 1);
	EVP_DigestUpdate(d, &len, sizeof(len));
	EVP_DigestUpdate(d, f->p, f->len);
}

/* One CA file into t. */
static int add_ca_file(struct ike_pki_trust *t, EVP_MD_CTX *d, const char *path, char *err,
		       size_t elen)
{
	char why[160];
	struct file f;
	int rc;

	if (read_public(path, &f, err, elen))
		return -1;
	digest_add(d, path, &f);
	rc = ike_pki_trust_add_ca(t, f.p, f.len, why, sizeof(why));
	if (rc != 0)
		snprintf(err, elen, "%s: %s", path, why);
	file_wipe(&f);
	return rc != 0 ? -1 : 0;
}

/* Files only (no dot files, no subdirectories), in name order. */
static int regular_entry(const struct dirent *e)
{
	return e->d_name[0] != '.' && (e->d_type == DT_REG || e->d_type == DT_UNKNOWN);
}

/* ca = DIRECTORY: each of its files a CA file (PEM or DER), at least one. */
static int add_ca_dir(struct ike_pki_trust *t, EVP_MD_CTX *d, const char *dir, char *err,
		      size_t elen)
{
	struct dirent **ents;
	char path[4096];
	int n = scandir(dir, &ents, regular_entry, alphasort), rc = 0;

	if (n < 0)
		return snprintf(err, elen, "%s: %s", dir, strerror(errno)), -1;
	if (n == 0 || n > CFG_PKI_CA_FILES_MAX) {
		snprintf(err, elen, "%s: %d files, expected 1..%d CA certificates", dir, n,
			 CFG_PKI_CA_FILES_MAX);
		rc = -1;
	}
	for (int i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, ents[i]->d_name);
		if (rc == 0)
			rc = add_ca_file(t, d, path, err, elen);
		free(ents[i]);
	}
	free(ents);
	return rc;
}

static int load_trust(const struct cfg_pki *k, struct ike_pki_trust *t, EVP_MD_CTX *d,
		      int *line, char *err, size_t elen)
{
	struct stat st;
	char why[160];
	struct file f;
	int rc;

	*line = k->ca_line;
	if (stat(k->ca, &st))
		return snprintf(err, elen, "%s: %s", k->ca, strerror(errno)), -1;
	rc = S_ISDIR(st.st_mode) ? add_ca_dir(t, d, k->ca, err, elen) :
				   add_ca_file(t, d, k->ca, err, elen);
	if (rc != 0 || !k->crl[0])
		return rc;
	*line = k->crl_line;
	if (read_public(k->crl, &f, err, elen))
		return -1;
	digest_add(d, k->crl, &f);
	rc = ike_pki_trust_add_crl(t, f.p, f.len, why, sizeof(why));
	if (rc != 0)
		snprintf(err, elen, "%s: %s", k->crl, why);
	file_wipe(&f);
	return rc != 0 ? -1 : 0;
}

static int load_cred(const struct cfg_pki *k, struct ike_pki_cred **cred, EVP_MD_CTX *d,
		     int *line, char *err, size_t elen)
{
	struct file c = { NULL, 0 }, key = { NULL, 0 };
	char why[256];
	int fd, rc = -1;

	*line = k->cert_line;
	if (read_public(k->cert, &c, err, elen))
		return -1;
	*line = k->key_line;
	fd = cfg_open_secret(k->key, true, err, elen);
	if (fd >= 0 && read_fd(fd, k->key, &key, err, elen) == 0) {
		digest_add(d, k->cert, &c);
		digest_add(d, k->key, &key);
		rc = ike_pki_cred_load(c.p, c.len, key.p, key.len, cred, why, sizeof(why));
		/* which file: the certificate's messages start "certificate:" */
		if (rc != 0) {
			*line = strncmp(why, "certificate", 11) ? k->key_line : k->cert_line;
			snprintf(err, elen, "%s: %s", *line == k->cert_line ? k->cert : k->key,
				 why);
		}
	}
	file_wipe(&key);
	file_wipe(&c);
	return rc != 0 ? -1 : 0;
}

/*
 * The digest starts with a secret of this process, as install.c's key
 * fingerprints do: it covers the private key's bytes, and must tell a
 * reload only whether they changed, not let anyone test a guess at them.
 */
static int digest_start(EVP_MD_CTX *d)
{
	static uint8_t secret[32];
	static int have_secret;

	if (!have_secret)
		have_secret = RAND_bytes(secret, sizeof(secret)) == 1;
	return have_secret && EVP_DigestInit_ex(d, EVP_sha256(), NULL) == 1 &&
	       EVP_DigestUpdate(d, secret, sizeof(secret)) == 1 ? 0 : -1;
}

int cfg_ike_pki_load(const struct cfg_ike *ike, struct ike_pki_cred **cred,
		     struct ike_pki_trust **trust, uint8_t digest[32], int *line, char *err,
		     size_t elen)
{
	EVP_MD_CTX *d = EVP_MD_CTX_new();
	unsigned dlen = 0;
	int rc = -1;

	*cred = NULL;
	*trust = ike_pki_trust_new();
	*line = ike->pki.auth_line;
	if (d == NULL || *trust == NULL || digest_start(d) != 0)
		snprintf(err, elen, "out of memory");
	else if (load_cred(&ike->pki, cred, d, line, err, elen) == 0 &&
		 load_trust(&ike->pki, *trust, d, line, err, elen) == 0 &&
		 EVP_DigestFinal_ex(d, digest, &dlen) == 1)
		rc = 0;
	EVP_MD_CTX_free(d);
	if (rc != 0) {
		ike_pki_cred_free(*cred);
		ike_pki_trust_free(*trust);
		*cred = NULL;
		*trust = NULL;
	}
	return rc;
}

/* ---- the section's end -------------------------------------------------- */

/* A key given that the auth method does not use, or one it needs missing. */
static void check_keys(struct parser *p, const struct cfg_tunnel *t)
{
	const struct cfg_ike *ike = &t->ike;
	const struct cfg_pki *k = &ike->pki;
	const struct { const char *name; int line; } pub[] = {
		{ "cert", k->cert_line }, { "private-key", k->key_line },
		{ "ca", k->ca_line }, { "crl", k->crl_line },
	};

	if (ike->auth == CFG_AUTH_PSK) {
		if (!ike->psk_line)
			cfg_err_at(p, p->sect_line, "[tunnel %s] missing required key 'psk-file'",
				   t->name);
		for (size_t i = 0; i < sizeof(pub) / sizeof(pub[0]); i++)
			if (pub[i].line)
				cfg_err_at(p, pub[i].line, "[tunnel %s] %s: only with "
					   "auth = pubkey", t->name, pub[i].name);
		if (ike->remote_id_pattern)
			cfg_err_at(p, p->sect_line, "[tunnel %s] remote-id: a pattern ('*') only "
				   "with auth = pubkey", t->name);
		return;
	}
	if (ike->psk_line)
		cfg_err_at(p, ike->psk_line, "[tunnel %s] psk-file: not with auth = pubkey",
			   t->name);
	for (size_t i = 0; i < 3; i++)		/* crl is optional */
		if (!pub[i].line)
			cfg_err_at(p, p->sect_line, "[tunnel %s] missing required key '%s' "
				   "(auth = pubkey)", t->name, pub[i].name);
}

void cfg_finish_pki(struct parser *p, struct cfg_tunnel *t)
{
	struct ike_pki_trust *trust;
	struct ike_pki_cred *cred;
	char err[4096 + 300];
	size_t n;
	int line;

	check_keys(p, t);
	if (t->ike.auth != CFG_AUTH_PUBKEY || !t->ike.pki.cert_line || !t->ike.pki.key_line ||
	    !t->ike.pki.ca_line)
		return;
	if (cfg_ike_pki_load(&t->ike, &cred, &trust, t->ike.pki.digest, &line, err,
			     sizeof(err)) != 0) {
		cfg_err_at(p, line, "[tunnel %s] %s", t->name, err);
		return;
	}
	/* No local-id: the certificate's subject, as strongSwan takes it. */
	if (t->ike.local_id_type == 0) {
		if (ike_pki_cred_subject(cred, t->ike.local_id, CFG_IKE_ID_MAX, &n) == 0) {
			t->ike.local_id_type = IKE_ID_DER_ASN1_DN;
			t->ike.local_id_len = (uint8_t)n;
		} else {
			cfg_err_at(p, t->ike.pki.cert_line, "[tunnel %s] cert: a subject of more "
				   "than %d bytes: give a local-id", t->name, CFG_IKE_ID_MAX);
		}
	}
	ike_pki_cred_free(cred);
	ike_pki_trust_free(trust);
}
