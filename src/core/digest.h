/*
 * digest.h — BLAKE2b-256 (libsodium crypto_generichash, 32-byte output, no
 * key) of memory and files, as lower-case hex.  Digest strings are fixed
 * size, caller-provided: char hex[DIGEST_HEX_SIZE].
 */
#ifndef LQ_CORE_DIGEST_H
#define LQ_CORE_DIGEST_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

#define DIGEST_SIZE 32
#define DIGEST_HEX_SIZE 65	/* 64 hex digits and a NUL */

/* Initialises libsodium once; safe to call repeatedly.  Aborts on failure. */
void digest_init(void);

/* hex <- BLAKE2b-256(data[0..n)). */
void digest_hex(const void *data, size_t n, char hex[DIGEST_HEX_SIZE]);

/*
 * Streams a file through BLAKE2b-256.  On failure fills err (naming the path
 * and errno) and returns LQ_FAILED; hex is then undefined.
 */
enum lq_status digest_file(const char *path, char hex[DIGEST_HEX_SIZE],
    struct lq_error *err);

/* Incremental hashing; the state is opaque storage owned by the caller. */
struct digest_state {
	_Alignas(64) unsigned char opaque[384];
};
void digest_begin(struct digest_state *st);
void digest_update(struct digest_state *st, const void *data, size_t n);
void digest_end(struct digest_state *st, char hex[DIGEST_HEX_SIZE]);

#endif
