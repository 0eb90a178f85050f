-- 0001_init.sql — latentq's queue database, version 1.
-- Applied by store_open() when PRAGMA user_version < 1.  Never edit an
-- applied migration: add 0002_*.sql instead.

-- Each manifest entry as the user wrote it (rejected ones too).
CREATE TABLE requests (
	id            INTEGER PRIMARY KEY,
	manifest_path TEXT NOT NULL,
	manifest_digest TEXT NOT NULL,     -- BLAKE2b-256 of the manifest bytes
	entry_index   INTEGER NOT NULL,    -- position in jobs[]
	line          INTEGER,             -- where the entry starts
	request_json  TEXT NOT NULL,       -- the entry as written
	created_at    REAL NOT NULL
);

-- Models added with `latentq model add` (or implicitly by a job).
CREATE TABLE models (
	id          INTEGER PRIMARY KEY,
	name        TEXT UNIQUE,           -- NULL for unnamed (path-only) models
	path        TEXT NOT NULL UNIQUE,  -- absolute folder
	family      TEXT NOT NULL,         -- "ltxv"
	config_json TEXT NOT NULL,         -- model_index.json + component configs
	digest      TEXT NOT NULL,         -- BLAKE2b-256 over the sorted file list
	added_at    REAL NOT NULL
);

CREATE TABLE model_files (
	model_id  INTEGER NOT NULL REFERENCES models(id) ON DELETE CASCADE,
	relpath   TEXT NOT NULL,
	size      INTEGER NOT NULL,
	mtime_ns  INTEGER NOT NULL,
	inode     INTEGER NOT NULL,
	blake2b   TEXT NOT NULL,
	PRIMARY KEY (model_id, relpath)
);

-- Hash cache: a file whose (path, size, mtime, inode) is unchanged is not re-read.
CREATE TABLE file_hashes (
	path      TEXT PRIMARY KEY,
	size      INTEGER NOT NULL,
	mtime_ns  INTEGER NOT NULL,
	inode     INTEGER NOT NULL,
	blake2b   TEXT NOT NULL,
	hashed_at REAL NOT NULL
);

-- Jobs.  State machine in src/store/jobs.c.
CREATE TABLE jobs (
	id            INTEGER PRIMARY KEY,
	request_id    INTEGER NOT NULL REFERENCES requests(id),
	name          TEXT NOT NULL,
	state         TEXT NOT NULL CHECK (state IN
	              ('queued','running','done','rejected','cancelled','poisoned')),
	config_json   TEXT NOT NULL,       -- validated config, canonical JSON
	config_digest TEXT NOT NULL,       -- BLAKE2b-256 of config_json
	model_id      INTEGER REFERENCES models(id),
	model_digests TEXT,                -- JSON {relpath: blake2b} pinned at submit
	priority      INTEGER NOT NULL DEFAULT 0,
	attempts      INTEGER NOT NULL DEFAULT 0,
	max_attempts  INTEGER NOT NULL DEFAULT 3,
	lease_owner   TEXT,                -- "host:pid:starttime"
	lease_expires REAL,
	not_before    REAL,                -- retry backoff: not claimable before
	step          INTEGER NOT NULL DEFAULT 0,
	total_steps   INTEGER NOT NULL DEFAULT 0,
	phase         TEXT,
	error_code    TEXT,
	error_message TEXT,
	output_path   TEXT,
	created_at    REAL NOT NULL,
	updated_at    REAL NOT NULL,
	finished_at   REAL
);
CREATE INDEX jobs_claim ON jobs(state, priority DESC, id);
CREATE INDEX jobs_digest ON jobs(config_digest);

-- Latent after every denoising step.
CREATE TABLE checkpoints (
	job_id     INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
	step       INTEGER NOT NULL,       -- steps completed (1..N)
	sigma      REAL NOT NULL,
	dtype      TEXT NOT NULL,
	shape      TEXT NOT NULL,          -- JSON array
	latent     BLOB NOT NULL,
	digest     TEXT NOT NULL,          -- BLAKE2b-256 of latent
	config_digest TEXT NOT NULL,
	model_digest  TEXT NOT NULL,
	device_fingerprint TEXT NOT NULL,
	created_at REAL NOT NULL,
	PRIMARY KEY (job_id, step)
);

CREATE TABLE events (
	id       INTEGER PRIMARY KEY,
	job_id   INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
	at       REAL NOT NULL,
	kind     TEXT NOT NULL,            -- submitted, claimed, phase, step, crashed, ...
	detail   TEXT                      -- JSON
);
CREATE INDEX events_job ON events(job_id, id);

CREATE TABLE artifacts (
	id       INTEGER PRIMARY KEY,
	job_id   INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
	kind     TEXT NOT NULL,            -- mp4, png, contact_sheet, tensors
	path     TEXT NOT NULL,
	size     INTEGER NOT NULL,
	digest   TEXT NOT NULL,
	created_at REAL NOT NULL
);

CREATE TABLE text_cache (
	encoder_digest TEXT NOT NULL,
	tokens_digest  TEXT NOT NULL,
	dtype          TEXT NOT NULL,
	shape          TEXT NOT NULL,
	data           BLOB NOT NULL,
	created_at     REAL NOT NULL,
	PRIMARY KEY (encoder_digest, tokens_digest)
);

CREATE TABLE pipeline_cache (
	fingerprint TEXT PRIMARY KEY,
	data        BLOB NOT NULL,
	created_at  REAL NOT NULL
);
