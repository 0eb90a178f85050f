-- 0005_webhooks.sql — webhooks: who to tell when a job ends, and a
-- persistent outbox of notifications.  Brings the database to version 5.

-- URLs to notify for a job besides its config's "webhook" key (run/render
-- --webhook adds them when it claims the job).
CREATE TABLE job_webhooks (
	job_id  INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
	url     TEXT NOT NULL,
	PRIMARY KEY (job_id, url)
);

-- One row per notification.  Written by the trigger below in the same
-- transaction as the state change, so no job end is ever without its
-- notification; delivered (or given up) by src/worker/webhooks.c.
CREATE TABLE webhook_outbox (
	id           INTEGER PRIMARY KEY,
	job_id       INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
	url          TEXT NOT NULL,
	state        TEXT NOT NULL,        -- the state the job reached
	body         TEXT NOT NULL,        -- the JSON POSTed
	attempts     INTEGER NOT NULL DEFAULT 0,
	next_at      REAL NOT NULL,        -- not tried again before
	last_status  INTEGER,              -- HTTP status of the last try (0: none)
	last_error   TEXT,
	created_at   REAL NOT NULL,
	delivered_at REAL,                 -- a 2xx answer came
	abandoned_at REAL                  -- attempts spent
);
CREATE INDEX webhook_outbox_pending ON webhook_outbox(delivered_at,
	abandoned_at, next_at);

-- A job that becomes done, poisoned, failed or cancelled queues one
-- notification per URL: the job, state, error, attempts, artifacts with
-- digests and durations (seconds).
CREATE TRIGGER jobs_webhook_outbox AFTER UPDATE OF state ON jobs
WHEN NEW.state IN ('done', 'poisoned', 'failed', 'cancelled')
	AND NEW.state IS NOT OLD.state
BEGIN
	INSERT INTO webhook_outbox(job_id, url, state, body, next_at, created_at)
	SELECT NEW.id, u.url, NEW.state, json_object(
		'job', json_object('id', NEW.id, 'name', NEW.name,
			'config_digest', NEW.config_digest),
		'state', NEW.state,
		'error_code', NEW.error_code,
		'error_message', NEW.error_message,
		'attempts', NEW.attempts,
		'step', NEW.step,
		'total_steps', NEW.total_steps,
		'output', NEW.output_path,
		'artifacts', json((SELECT json_group_array(json_object('kind',
			a.kind, 'path', a.path, 'size', a.size, 'digest', a.digest))
			FROM artifacts a WHERE a.job_id = NEW.id)),
		'durations', json_object(
			'created_at', NEW.created_at,
			'ended_at', t.now,
			'total_seconds', t.now - NEW.created_at,
			'last_attempt_seconds', t.now - (SELECT max(at) FROM events
				WHERE job_id = NEW.id AND kind = 'claimed'))),
		t.now, t.now
	FROM (SELECT json_extract(NEW.config_json, '$.webhook') AS url
	      UNION SELECT url FROM job_webhooks WHERE job_id = NEW.id) u,
	     (SELECT (julianday('now') - 2440587.5) * 86400.0 AS now) t
	WHERE u.url IS NOT NULL AND u.url <> '';
END;
