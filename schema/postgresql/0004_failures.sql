-- 0004_failures.sql for PostgreSQL: schema/0004_failures.sql with REAL as
-- double precision.
-- 0004_failures.sql — attempts and failures counted apart (issue 21).
-- attempts counts every claim; failures counts the job's own faults since
-- it last made progress, and only failures can poison a job.  The times
-- give status its started/ended/elapsed and the history its run times.
ALTER TABLE jobs ADD COLUMN failures bigint NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN claim_step bigint;      -- jobs.step when this attempt was claimed
ALTER TABLE jobs ADD COLUMN claimed_at double precision;         -- when this attempt was claimed
ALTER TABLE jobs ADD COLUMN started_at double precision;         -- the first claim
ALTER TABLE jobs ADD COLUMN run_seconds double precision NOT NULL DEFAULT 0;  -- wall time of ended attempts
ALTER TABLE jobs ADD COLUMN error_grade TEXT;        -- retry, failed or fatal: the last error's grade
