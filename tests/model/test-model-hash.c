/*
 * test-model-hash.c — model folder digests with the database hash cache:
 * hits skip reading, and a change of content, mtime or inode invalidates;
 * the models / model_files tables round-trip.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/digest.h"
#include "core/util.h"
#include "model/hash.h"
#include "store/models.h"
#include "store/store.h"
#include "../test.h"

static char tmp[] = "/tmp/lq-hash-XXXXXX";

static void
put(const char *rel, const char *text)
{
	char *p = xasprintf("%s/m/%s", tmp, rel);
	FILE *fp = fopen(p, "w");
	LQ_ASSERT(fp != NULL);
	fputs(text, fp);
	fclose(fp);
	free(p);
}

static void
set_mtime(const char *rel, time_t sec)
{
	char *p = xasprintf("%s/m/%s", tmp, rel);
	struct timespec ts[2] = {{sec, 0}, {sec, 0}};
	LQ_ASSERT(utimensat(AT_FDCWD, p, ts, 0) == 0);
	free(p);
}

static const struct model_file_digest *
file(const struct model_digest *d, const char *rel)
{
	for (size_t i = 0; i < d->n; i++)
		if (strcmp(d->files[i].relpath, rel) == 0)
			return &d->files[i];
	return NULL;
}

int
main(void)
{
	LQ_ASSERT(mkdtemp(tmp) != NULL);
	char *m = xasprintf("%s/m", tmp);
	char *cmd = xasprintf("mkdir -p %s/sub %s/.cache", m, m);
	LQ_ASSERT(system(cmd) == 0);
	free(cmd);
	put("a.txt", "alpha");
	put("sub/b.bin", "bravo");
	put(".cache/x", "ignored");
	set_mtime("a.txt", 1000000000);
	set_mtime("sub/b.bin", 1000000000);

	struct lq_error err;
	error_clear(&err);
	struct store *st;
	char *db = xasprintf("%s/q.db", tmp);
	CHECK_INT(store_open(db, &st, &err), LQ_OK);
	struct model_hash_cache cache = {st, store_file_hash_lookup, store_file_hash_record};

	/* first pass: everything read */
	struct model_digest d1;
	CHECK_INT(model_hash_folder(m, &cache, 0, &d1, &err), LQ_OK);
	CHECK_INT(d1.n, 2);
	CHECK_INT(d1.n_hashed, 2);
	CHECK_INT(d1.n_cached, 0);
	CHECK_STR(d1.files[0].relpath, "a.txt");
	CHECK_STR(d1.files[1].relpath, "sub/b.bin");
	char hex[DIGEST_HEX_SIZE];
	digest_hex("alpha", 5, hex);
	CHECK_STR(d1.files[0].blake2b, hex);

	/* second pass: all from the cache, same digest */
	struct model_digest d2;
	CHECK_INT(model_hash_folder(m, &cache, 0, &d2, &err), LQ_OK);
	CHECK_INT(d2.n_cached, 2);
	CHECK_INT(d2.n_hashed, 0);
	CHECK_STR(d2.digest, d1.digest);
	model_digest_clear(&d2);

	/* a hit does not read the file: a planted cache row is believed */
	const struct model_file_digest *a = file(&d1, "a.txt");
	char fake[DIGEST_HEX_SIZE];
	memset(fake, 'f', 64);
	fake[64] = '\0';
	CHECK_INT(store_put_file_hash(st, a->path, a->size, a->mtime_ns, a->inode, fake, &err),
	    LQ_OK);
	CHECK_INT(model_hash_folder(m, &cache, 0, &d2, &err), LQ_OK);
	CHECK_STR(file(&d2, "a.txt")->blake2b, fake);
	model_digest_clear(&d2);
	/* ...and --force re-reads and repairs it */
	CHECK_INT(model_hash_folder(m, &cache, 1, &d2, &err), LQ_OK);
	CHECK_INT(d2.n_hashed, 2);
	CHECK_STR(file(&d2, "a.txt")->blake2b, hex);
	model_digest_clear(&d2);

	/* new content of the same size, new mtime: re-read (a rewrite that
	 * restores size, mtime and inode is invisible to any stat-keyed cache;
	 * `model verify` re-hashes everything for that reason) */
	put("sub/b.bin", "BRAVO");
	set_mtime("sub/b.bin", 1000000001);
	CHECK_INT(model_hash_folder(m, &cache, 0, &d2, &err), LQ_OK);
	CHECK_INT(d2.n_hashed, 1);
	CHECK_INT(d2.n_cached, 1);
	CHECK(strcmp(d2.digest, d1.digest) != 0);
	digest_hex("BRAVO", 5, hex);
	CHECK_STR(file(&d2, "sub/b.bin")->blake2b, hex);
	model_digest_clear(&d2);

	/* mtime only: re-read, same digest as before the touch */
	struct model_digest d3;
	CHECK_INT(model_hash_folder(m, &cache, 0, &d3, &err), LQ_OK);
	set_mtime("sub/b.bin", 1000000002);
	CHECK_INT(model_hash_folder(m, &cache, 0, &d2, &err), LQ_OK);
	CHECK_INT(d2.n_hashed, 1);
	CHECK_STR(d2.digest, d3.digest);
	model_digest_clear(&d2);

	/* new inode (replaced by rename), same size and mtime: re-read */
	put("c.tmp", "BRAVO");
	set_mtime("c.tmp", 1000000002);
	char *from = xasprintf("%s/c.tmp", m), *to = xasprintf("%s/sub/b.bin", m);
	LQ_ASSERT(rename(from, to) == 0);
	CHECK_INT(model_hash_folder(m, &cache, 0, &d2, &err), LQ_OK);
	CHECK_INT(d2.n_hashed, 1);
	CHECK_STR(d2.digest, d3.digest);
	model_digest_clear(&d2);
	free(from);
	free(to);

	/* a new file changes the folder digest */
	put("d.json", "{}");
	CHECK_INT(model_hash_folder(m, &cache, 0, &d2, &err), LQ_OK);
	CHECK_INT(d2.n, 3);
	CHECK(strcmp(d2.digest, d3.digest) != 0);

	/* models and model_files round-trip */
	struct store_model sm = {0};
	sm.name = "tiny";
	sm.path = d2.root;
	sm.family = "ltxv";
	sm.config_json = "{}";
	sm.digest = d2.digest;
	sm.nfiles = d2.n;
	sm.files = xcalloc(d2.n, sizeof(*sm.files));
	for (size_t i = 0; i < d2.n; i++) {
		sm.files[i].relpath = d2.files[i].relpath;
		sm.files[i].size = d2.files[i].size;
		sm.files[i].mtime_ns = d2.files[i].mtime_ns;
		sm.files[i].inode = d2.files[i].inode;
		memcpy(sm.files[i].blake2b, d2.files[i].blake2b, DIGEST_HEX_SIZE);
	}
	int64_t id = 0, id2 = 0;
	CHECK_INT(store_put_model(st, &sm, &id, &err), LQ_OK);
	CHECK(id > 0);
	/* re-adding the same folder keeps the id */
	CHECK_INT(store_put_model(st, &sm, &id2, &err), LQ_OK);
	CHECK_INT(id2, id);
	struct store_model got;
	int found = 0;
	CHECK_INT(store_find_model(st, "tiny", &got, &found, &err), LQ_OK);
	CHECK(found);
	if (found) {
		CHECK_INT(got.nfiles, 3);
		CHECK_STR(got.files[2].relpath, "sub/b.bin");
		CHECK_STR(got.files[2].blake2b, file(&d2, "sub/b.bin")->blake2b);
		CHECK_STR(got.digest, d2.digest);
		store_model_clear(&got);
	}
	CHECK_INT(store_find_model(st, d2.root, &got, &found, &err), LQ_OK);
	CHECK(found);
	store_model_clear(&got);
	CHECK_INT(store_find_model(st, "nope", &got, &found, &err), LQ_OK);
	CHECK(!found);
	/* the name is taken by this folder */
	sm.path = "/elsewhere";
	error_clear(&err);
	CHECK_INT(store_put_model(st, &sm, &id2, &err), LQ_FAILED);
	CHECK_STR(err.code, "LQ-DB-010");
	CHECK_CONTAINS(err.message, d2.root);
	struct store_model *list;
	size_t n;
	CHECK_INT(store_list_models(st, &list, &n, &err), LQ_OK);
	CHECK_INT(n, 1);
	store_models_free(list, n);
	CHECK_INT(store_update_model_files(st, id, "00", sm.files, 1, &err), LQ_OK);
	CHECK_INT(store_get_model(st, id, &got, &found, &err), LQ_OK);
	CHECK_INT(got.nfiles, 1);
	CHECK_STR(got.digest, "00");
	store_model_clear(&got);
	free(sm.files);

	/* pinning: a job's {relpath: blake2b} against the files now */
	cJSON *now = cJSON_CreateObject();
	model_digest_add_json(&d2, "", now);
	char *pinned = cJSON_PrintUnformatted(now);
	CHECK_CONTAINS(pinned, "\"sub/b.bin\":");
	char **ch = NULL;
	size_t nch = 0;
	error_clear(&err);
	CHECK_INT(model_digest_compare(now, pinned, &ch, &nch, &err), LQ_OK);
	CHECK_INT(nch, 0);
	free(ch);
	cJSON_Delete(now);
	now = cJSON_CreateObject();
	model_digest_add_json(&d1, "", now);	/* before the edits: b changed, d.json absent */
	cJSON_AddStringToObject(now, "vae:extra", "00");
	CHECK_INT(model_digest_compare(now, pinned, &ch, &nch, &err), LQ_FAILED);
	CHECK_STR(err.code, "LQ-MODEL-021");
	CHECK_INT(nch, 3);
	if (nch == 3) {
		CHECK_STR(ch[0], "sub/b.bin changed");
		CHECK_STR(ch[1], "vae:extra added");
		CHECK_STR(ch[2], "d.json removed");
	}
	CHECK_STR(err.field, "sub/b.bin");
	CHECK_CONTAINS(err.message, "(and 2 more)");
	for (size_t i = 0; i < nch; i++)
		free(ch[i]);
	free(ch);
	error_clear(&err);
	CHECK_INT(model_digest_compare(now, "[1]", NULL, NULL, &err), LQ_FAILED);
	CHECK_STR(err.code, "LQ-MODEL-022");
	cJSON_Delete(now);
	free(pinned);

	model_digest_clear(&d1);
	model_digest_clear(&d2);
	model_digest_clear(&d3);
	store_close(st);
	free(db);
	free(m);
	cmd = xasprintf("rm -rf '%s'", tmp);
	(void)!system(cmd);
	free(cmd);
	return test_summary();
}
