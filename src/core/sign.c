/*
 * sign.c — Ed25519 key pairs, signature records and HMAC-SHA256 through
 * libsodium (see sign.h for the file formats).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <sodium.h>

#include "core/json.h"
#include "core/sign.h"
#include "core/util.h"

#define PUB_TAG "latentq-ed25519-public"
#define SEC_TAG "latentq-ed25519-secret"

_Static_assert(SIGN_PUBLIC_SIZE == crypto_sign_PUBLICKEYBYTES, "pk size");
_Static_assert(SIGN_SECRET_SIZE == crypto_sign_SECRETKEYBYTES, "sk size");

void
sign_key_clear(struct sign_key *k)
{
	sodium_memzero(k, sizeof(*k));
}

char *
sign_key_dir(void)
{
	const char *xdg = getenv("XDG_CONFIG_HOME");
	if (xdg != NULL && xdg[0] == '/')
		return xasprintf("%s/latentq", xdg);
	const char *home = getenv("HOME");
	return xasprintf("%s/.config/latentq", home != NULL ? home : ".");
}

static int
valid_name(const char *name)
{
	size_t n = strlen(name);
	if (n == 0 || n > 64 || name[0] == '.')
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
			return 0;
	}
	return 1;
}

static enum lq_status
bad_name(const char *name, struct lq_error *err)
{
	error_set(err, LQ_FAILED, "LQ-SIGN-001", "\"%s\" is not a key name: "
	    "names are 1 to 64 of A-Z a-z 0-9 . _ - and do not start with '.'",
	    name);
	error_set_field(err, "NAME");
	error_set_hint(err, "try %s, or give a path with a '/'",
	    SIGN_DEFAULT_NAME);
	return LQ_FAILED;
}

/* Writes text to a new file (O_EXCL) with mode, fsynced. */
static enum lq_status
write_new(const char *path, const char *text, mode_t mode,
    struct lq_error *err)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
	    mode);
	if (fd < 0) {
		error_set(err, LQ_FAILED, "LQ-SIGN-002", "cannot create %s: %s",
		    path, strerror(errno));
		if (errno == EEXIST)
			error_set_hint(err, "keys are never overwritten; choose "
			    "another NAME or remove the old pair yourself");
		return LQ_FAILED;
	}
	size_t n = strlen(text);
	ssize_t w = write(fd, text, n);
	int bad = w != (ssize_t)n || fchmod(fd, mode) != 0 || fsync(fd) != 0;
	int e = errno;
	if (close(fd) != 0)
		bad = 1;
	if (bad) {
		unlink(path);
		return error_set(err, LQ_FAILED, "LQ-SIGN-002", "cannot write %s: "
		    "%s", path, strerror(e));
	}
	return LQ_OK;
}

enum lq_status
sign_generate_key(const char *name, char **pub_path, struct lq_error *err)
{
	if (pub_path != NULL)
		*pub_path = NULL;
	if (!valid_name(name))
		return bad_name(name, err);
	digest_init();
	char *dir = sign_key_dir();
	enum lq_status s = LQ_OK;
	char *failed = NULL;
	if (util_mkdir_p(dir, 0700, &failed) != 0) {
		s = error_set(err, LQ_FAILED, "LQ-SIGN-002", "cannot create "
		    "folder %s: %s", failed, strerror(errno));
		free(failed);
	}
	char *kp = xasprintf("%s/%s.key", dir, name);
	char *pp = xasprintf("%s/%s.pub", dir, name);
	free(dir);
	if (s != LQ_OK)
		goto out;
	struct sign_key k;
	memset(&k, 0, sizeof(k));
	crypto_sign_keypair(k.public_key, k.secret_key);
	char shex[2 * SIGN_SECRET_SIZE + 1];
	sodium_bin2hex(shex, sizeof(shex), k.secret_key, SIGN_SECRET_SIZE);
	sodium_bin2hex(k.public_hex, sizeof(k.public_hex), k.public_key,
	    SIGN_PUBLIC_SIZE);
	char *st = xasprintf("%s %s\n", SEC_TAG, shex);
	char *pt = xasprintf("%s %s\n", PUB_TAG, k.public_hex);
	/* the secret first: if it exists, nothing is touched */
	if ((s = write_new(kp, st, 0600, err)) == LQ_OK) {
		unlink(pp);	/* a stale .pub without its .key */
		if ((s = write_new(pp, pt, 0644, err)) != LQ_OK)
			unlink(kp);
	}
	sodium_memzero(shex, sizeof(shex));
	sodium_memzero(st, strlen(st));
	free(st);
	free(pt);
	sign_key_clear(&k);
	if (s == LQ_OK && pub_path != NULL) {
		*pub_path = pp;
		pp = NULL;
	}
out:
	free(kp);
	free(pp);
	return s;
}

/* Parses "TAG HEX\n" into out (n bytes). */
static int
parse_line(const char *text, const char *tag, unsigned char *out, size_t n)
{
	size_t tl = strlen(tag);
	if (strncmp(text, tag, tl) != 0 || text[tl] != ' ')
		return -1;
	const char *hex = text + tl + 1;
	size_t hl = strcspn(hex, "\n");
	if (hl != 2 * n || (hex[hl] != '\0' && strcmp(hex + hl, "\n") != 0))
		return -1;
	size_t got = 0;
	if (sodium_hex2bin(out, n, hex, hl, NULL, &got, NULL) != 0 || got != n)
		return -1;
	return 0;
}

enum lq_status
sign_load_key(const char *key, int want_secret, struct sign_key *out,
    struct lq_error *err)
{
	memset(out, 0, sizeof(*out));
	digest_init();
	char *path;
	if (strchr(key, '/') != NULL) {
		path = xstrdup(key);
	} else {
		if (!valid_name(key))
			return bad_name(key, err);
		char *dir = sign_key_dir();
		path = xasprintf("%s/%s.%s", dir, key, want_secret ? "key" : "pub");
		free(dir);
	}
	size_t n = 0;
	struct stat sb;
	enum lq_status s = LQ_OK;
	char *text = NULL;
	if (stat(path, &sb) != 0 || (text = util_read_file(path, &n)) == NULL) {
		s = error_set(err, LQ_FAILED, "LQ-SIGN-003", "cannot read key %s: "
		    "%s", path, strerror(errno));
		if (errno == ENOENT)
			error_set_hint(err, "create one with `latentq key generate "
			    "%s`", strchr(key, '/') ? SIGN_DEFAULT_NAME : key);
		goto out;
	}
	if (parse_line(text, SEC_TAG, out->secret_key, SIGN_SECRET_SIZE) == 0) {
		if ((sb.st_mode & 077) != 0) {
			s = error_set(err, LQ_FAILED, "LQ-SIGN-005", "secret key %s "
			    "is readable by others (mode %03o)", path,
			    (unsigned)(sb.st_mode & 0777));
			error_set_hint(err, "chmod 600 %s", path);
			goto out;
		}
		out->has_secret = 1;
		crypto_sign_ed25519_sk_to_pk(out->public_key, out->secret_key);
	} else if (!want_secret && parse_line(text, PUB_TAG, out->public_key,
	    SIGN_PUBLIC_SIZE) == 0) {
		/* public key only */
	} else {
		s = error_set(err, LQ_FAILED, "LQ-SIGN-005", "%s is not a latentq "
		    "%s key file", path, want_secret ? "secret" : "public or secret");
		goto out;
	}
	if (!want_secret) {
		sodium_memzero(out->secret_key, sizeof(out->secret_key));
		out->has_secret = 0;
	}
	sodium_bin2hex(out->public_hex, sizeof(out->public_hex), out->public_key,
	    SIGN_PUBLIC_SIZE);
out:
	if (text != NULL) {
		sodium_memzero(text, n);
		free(text);
	}
	if (s != LQ_OK)
		sign_key_clear(out);
	free(path);
	return s;
}

char *
sign_digest_record(const struct sign_key *k, const char *context,
    const char digest[DIGEST_HEX_SIZE])
{
	LQ_ASSERT(k->has_secret);
	char *msg = xasprintf("%s:%s", context, digest);
	unsigned char sig[crypto_sign_BYTES];
	crypto_sign_detached(sig, NULL, (const unsigned char *)msg, strlen(msg),
	    k->secret_key);
	char sighex[2 * crypto_sign_BYTES + 1];
	sodium_bin2hex(sighex, sizeof(sighex), sig, sizeof(sig));
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "algorithm", "ed25519");
	cJSON_AddStringToObject(o, "public_key", k->public_hex);
	cJSON_AddStringToObject(o, "digest", digest);
	cJSON_AddStringToObject(o, "signed", msg);
	cJSON_AddStringToObject(o, "signature", sighex);
	char *text = json_pretty(o);
	cJSON_Delete(o);
	free(msg);
	return text;
}

static enum lq_status
refuse(struct lq_error *err, const char *why)
{
	return error_set(err, LQ_FAILED, "LQ-SIGN-004", "signature refused: %s",
	    why);
}

enum lq_status
sign_verify_record(const char *record, size_t len, const char *context,
    const char digest[DIGEST_HEX_SIZE], const struct sign_key *trusted,
    char signer_hex[SIGN_PUBLIC_HEX_SIZE], struct lq_error *err)
{
	digest_init();
	cJSON *o = json_parse_document(record, len);
	enum lq_status s = LQ_OK;
	if (o == NULL || !cJSON_IsObject(o)) {
		s = refuse(err, "the record is not a JSON object");
		goto out;
	}
	const char *alg = json_get_string(o, "algorithm", NULL);
	const char *pk = json_get_string(o, "public_key", NULL);
	const char *dg = json_get_string(o, "digest", NULL);
	const char *msg = json_get_string(o, "signed", NULL);
	const char *sg = json_get_string(o, "signature", NULL);
	if (alg == NULL || strcmp(alg, "ed25519") != 0) {
		s = refuse(err, "the algorithm is not ed25519");
		goto out;
	}
	unsigned char pkb[SIGN_PUBLIC_SIZE], sgb[crypto_sign_BYTES];
	size_t got = 0;
	if (pk == NULL || strlen(pk) != 2 * SIGN_PUBLIC_SIZE ||
	    sodium_hex2bin(pkb, sizeof(pkb), pk, strlen(pk), NULL, &got, NULL) !=
	    0 || got != sizeof(pkb)) {
		s = refuse(err, "public_key is not 64 hex digits");
		goto out;
	}
	if (sg == NULL || strlen(sg) != 2 * crypto_sign_BYTES ||
	    sodium_hex2bin(sgb, sizeof(sgb), sg, strlen(sg), NULL, &got, NULL) !=
	    0 || got != sizeof(sgb)) {
		s = refuse(err, "signature is not 128 hex digits");
		goto out;
	}
	char *want = xasprintf("%s:%s", context, digest);
	int msg_ok = msg != NULL && strcmp(msg, want) == 0 && dg != NULL &&
	    strcmp(dg, digest) == 0;
	if (!msg_ok) {
		free(want);
		s = refuse(err, "it signs another digest than the content's "
		    "(the content was changed)");
		goto out;
	}
	if (trusted != NULL && sodium_memcmp(trusted->public_key, pkb,
	    SIGN_PUBLIC_SIZE) != 0) {
		free(want);
		error_set(err, LQ_FAILED, "LQ-SIGN-004", "signature refused: "
		    "signed by key %.16s…, not by the trusted key %.16s…", pk,
		    trusted->public_hex);
		s = LQ_FAILED;
		goto out;
	}
	if (crypto_sign_verify_detached(sgb, (const unsigned char *)want,
	    strlen(want), pkb) != 0) {
		free(want);
		s = refuse(err, "the Ed25519 signature does not verify (the "
		    "record was changed)");
		goto out;
	}
	free(want);
	if (signer_hex != NULL)
		snprintf(signer_hex, SIGN_PUBLIC_HEX_SIZE, "%s", pk);
out:
	cJSON_Delete(o);
	return s;
}

void
sign_hmac_sha256_hex(const char *secret, const void *data, size_t n,
    char hex[65])
{
	digest_init();
	crypto_auth_hmacsha256_state st;
	unsigned char mac[crypto_auth_hmacsha256_BYTES];
	crypto_auth_hmacsha256_init(&st, (const unsigned char *)secret,
	    strlen(secret));
	crypto_auth_hmacsha256_update(&st, data, n);
	crypto_auth_hmacsha256_final(&st, mac);
	sodium_bin2hex(hex, 65, mac, sizeof(mac));
}
