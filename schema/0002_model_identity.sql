-- 0002: one model identity (src/model/ref.h).  Digests recorded before it
-- were computed another way (every file of a folder, READMEs included), so
-- they are marked "legacy:" (STORE_LEGACY_DIGEST_PREFIX): a job that pinned
-- one is re-pinned with the identity, checkpoints included, the first time
-- it renders; a model added before it shows its legacy digest until
-- `latentq model verify NAME --update` records the identity.
UPDATE jobs SET model_digests = 'legacy:' || model_digests
	WHERE model_digests IS NOT NULL AND model_digests <> ''
	AND model_digests NOT LIKE 'legacy:%';
UPDATE checkpoints SET model_digest = 'legacy:' || model_digest
	WHERE model_digest NOT LIKE 'legacy:%';
UPDATE models SET digest = 'legacy:' || digest
	WHERE digest NOT LIKE 'legacy:%';
