-- 0003_lease_token.sql — a fencing token for every claim of a job.
-- store_claim_job increments lease_token; the worker that rendered under a
-- claim passes its token with every write of the job's records (checkpoints,
-- artifacts, progress, events, done / poisoned), and a write whose token is
-- no longer the job's current one changes nothing (src/store/jobs.h).
ALTER TABLE jobs ADD COLUMN lease_token INTEGER NOT NULL DEFAULT 0;
