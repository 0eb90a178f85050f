/* digest.c — BLAKE2b-256 through libsodium (see digest.h). */
#include <errno.h>
#include <stdio.h>
#include <unistd.h>
#include <string.h>

#include <sodium.h>

#include "core/digest.h"
#include "core/util.h"

_Static_assert(sizeof(struct digest_state) >= sizeof(crypto_generichash_state),
    "digest_state too small for crypto_generichash_state");

void
digest_init(void)
{
	static int done;
	if (!done) {
		if (sodium_init() < 0) {
			fprintf(stderr, "latentq: sodium_init failed\n");
			abort();
		}
		done = 1;
	}
}

static void
to_hex(const unsigned char raw[DIGEST_SIZE], char hex[DIGEST_HEX_SIZE])
{
	sodium_bin2hex(hex, DIGEST_HEX_SIZE, raw, DIGEST_SIZE);
}

void
digest_hex(const void *data, size_t n, char hex[DIGEST_HEX_SIZE])
{
	unsigned char raw[DIGEST_SIZE];
	digest_init();
	crypto_generichash(raw, sizeof(raw), data, n, NULL, 0);
	to_hex(raw, hex);
}

void
digest_begin(struct digest_state *st)
{
	digest_init();
	crypto_generichash_init((crypto_generichash_state *)st->opaque, NULL, 0,
	    DIGEST_SIZE);
}

void
digest_update(struct digest_state *st, const void *data, size_t n)
{
	crypto_generichash_update((crypto_generichash_state *)st->opaque, data, n);
}

void
digest_end(struct digest_state *st, char hex[DIGEST_HEX_SIZE])
{
	unsigned char raw[DIGEST_SIZE];
	crypto_generichash_final((crypto_generichash_state *)st->opaque, raw,
	    sizeof(raw));
	to_hex(raw, hex);
}

enum lq_status
digest_file(const char *path, char hex[DIGEST_HEX_SIZE], struct lq_error *err)
{
	int fd = util_open_regular(path);	/* a FIFO must not block */
	FILE *fp = fd >= 0 ? fdopen(fd, "rb") : NULL;
	if (fp == NULL) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		return error_set(err, LQ_FAILED, "LQ-IO-001", "cannot open %s: %s",
		    path, util_strerror(e));
	}
	struct digest_state st;
	digest_begin(&st);
	static unsigned char buf[1 << 20];
	size_t n;
	while ((n = fread(buf, 1, sizeof(buf), fp)) > 0)
		digest_update(&st, buf, n);
	if (ferror(fp)) {
		int e = errno;
		fclose(fp);
		return error_set(err, LQ_FAILED, "LQ-IO-002", "cannot read %s: %s",
		    path, strerror(e));
	}
	fclose(fp);
	digest_end(&st, hex);
	return LQ_OK;
}
