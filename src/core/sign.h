/*
 * sign.h — Ed25519 signatures of digests (libsodium crypto_sign_detached),
 * the keys latentq keeps for them, and HMAC-SHA256 (crypto_auth_hmacsha256)
 * for webhook bodies.  Beside digest.h because what is signed is always a
 * BLAKE2b-256 digest from there.
 *
 * Keys live in $XDG_CONFIG_HOME/latentq/ (else ~/.config/latentq/):
 *   NAME.key  mode 0600, one line "latentq-ed25519-secret HEX128"
 *   NAME.pub  one line "latentq-ed25519-public HEX64"
 * A NAME is 1..64 of [A-Za-z0-9._-], not starting with '.'; a KEY argument
 * that contains a '/' is a path to a .key or .pub file instead.
 *
 * A signature record (bundle.sig) is JSON:
 *   {"algorithm": "ed25519", "public_key": HEX64, "digest": HEX64,
 *    "signed": "latentq-bundle-v1:" + digest, "signature": HEX128}
 * The signed message is the ASCII text of "signed", so a signature for a
 * bundle can never pass as one for anything else.
 *
 * Ownership: struct sign_key is plain data (the secret half is wiped by
 * sign_key_clear); returned strings are caller-owned (free()).  Errors fill
 * the caller's struct lq_error (LQ-SIGN-* codes) and return LQ_FAILED.
 */
#ifndef LQ_CORE_SIGN_H
#define LQ_CORE_SIGN_H

#include <stddef.h>

#include "core/digest.h"
#include "core/error.h"

#define SIGN_PUBLIC_SIZE 32
#define SIGN_SECRET_SIZE 64
#define SIGN_PUBLIC_HEX_SIZE 65
#define SIGN_DEFAULT_NAME "default"
#define SIGN_CONTEXT_BUNDLE "latentq-bundle-v1"

struct sign_key {
	unsigned char public_key[SIGN_PUBLIC_SIZE];
	unsigned char secret_key[SIGN_SECRET_SIZE];
	int has_secret;
	char public_hex[SIGN_PUBLIC_HEX_SIZE];
};
void sign_key_clear(struct sign_key *k);

/* The key folder ($XDG_CONFIG_HOME/latentq or ~/.config/latentq); caller-owned. */
char *sign_key_dir(void);

/*
 * Generates a key pair NAME.key (0600) / NAME.pub in the key folder
 * (created 0700 if needed).  An existing NAME.key is never overwritten
 * (LQ-SIGN-002, hint: another name).  *pub_path gets the public key's path
 * (caller-owned; may be NULL).
 */
enum lq_status sign_generate_key(const char *name, char **pub_path,
    struct lq_error *err);

/*
 * Loads a key by NAME (from the key folder) or path.  With want_secret the
 * .key file is read (it holds both halves); else the .pub (or, when given a
 * .key path, its public half).  A secret key file readable by group or
 * others is refused (LQ-SIGN-003).
 */
enum lq_status sign_load_key(const char *key, int want_secret,
    struct sign_key *out, struct lq_error *err);

/* The signature record for `digest` under context `context`; caller-owned. */
char *sign_digest_record(const struct sign_key *k, const char *context,
    const char digest[DIGEST_HEX_SIZE]);

/*
 * Checks a signature record: well-formed, for `digest` under `context`,
 * signed by `trusted` (NULL: by the public key the record names), with a
 * valid signature.  LQ-SIGN-004 says which.  signer_hex (may be NULL) gets
 * the signer's public key.
 */
enum lq_status sign_verify_record(const char *record, size_t len,
    const char *context, const char digest[DIGEST_HEX_SIZE],
    const struct sign_key *trusted, char signer_hex[SIGN_PUBLIC_HEX_SIZE],
    struct lq_error *err);

/*
 * HMAC-SHA256 (RFC 2104) of data under key `secret` (its bytes, any
 * length: crypto_auth_hmacsha256_init takes a key of any length), as 64
 * lower-case hex digits — what Python's hmac.new(secret, data, "sha256")
 * computes.
 */
void sign_hmac_sha256_hex(const char *secret, const void *data, size_t n,
    char hex[65]);

#endif
