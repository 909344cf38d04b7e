//! The history's schema and its migrations.
//!
//! Why it is shaped this way: the run document (JSON) is the source of
//! truth, kept whole in `runs.doc`, so a run loads back exactly as it was
//! saved whatever the columns say. The other columns are indexes: what
//! `opcost runs` lists and what lets a query find a benchmark across runs
//! without parsing every document. A new column is a new migration; a
//! migration never rewrites `doc`.
//!
//! The database is marked as opcost's with `PRAGMA application_id`, and its
//! schema version is `PRAGMA user_version`: 0 is an empty file, `i` means
//! the first `i` entries of [`MIGRATIONS`] were applied.

/// `PRAGMA application_id` of an opcost history ("opco" in ASCII).
pub const APPLICATION_ID: i32 = 0x6f70_636f;

/// The migrations, in order: entry `i` moves the schema from version `i`
/// to `i + 1`. Only ever append.
pub const MIGRATIONS: &[&str] = &[
    // 1: runs, their results and findings.
    r#"
    CREATE TABLE runs (
        id             TEXT PRIMARY KEY,   -- 8 hex digits
        started        TEXT NOT NULL,      -- RFC 3339 UTC
        duration_s     REAL NOT NULL,
        profile        TEXT NOT NULL,
        label          TEXT,
        hostname       TEXT NOT NULL,
        cpu_model      TEXT,
        opcost_version TEXT NOT NULL,
        doc_schema     INTEGER NOT NULL,   -- the document's layout version
        interrupted    INTEGER NOT NULL,
        n_results      INTEGER NOT NULL,
        n_skipped      INTEGER NOT NULL,
        saved          TEXT NOT NULL,      -- when it entered this history
        source         TEXT,               -- the file it was imported from
        host           TEXT NOT NULL,      -- the host block, JSON
        doc            TEXT NOT NULL       -- the whole run document, JSON
    );
    CREATE INDEX runs_by_host ON runs (hostname, started);
    CREATE INDEX runs_by_time ON runs (started);
    CREATE TABLE results (
        run_id    TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        seq       INTEGER NOT NULL,        -- position in the run
        bench_id  TEXT NOT NULL,
        area      TEXT NOT NULL,
        unit      TEXT NOT NULL,
        params    TEXT NOT NULL,           -- JSON object
        median    REAL,
        ci_low    REAL,
        ci_high   REAL,
        p5        REAL,
        p95       REAL,
        min       REAL,
        max       REAL,
        cv        REAL,                    -- NULL where not finite
        n_samples INTEGER NOT NULL,
        noisy     INTEGER NOT NULL,
        PRIMARY KEY (run_id, seq)
    );
    CREATE INDEX results_by_bench ON results (bench_id);
    CREATE TABLE findings (
        run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        seq    INTEGER NOT NULL,
        area   TEXT NOT NULL,
        text   TEXT NOT NULL,
        value  REAL,
        unit   TEXT NOT NULL,
        PRIMARY KEY (run_id, seq)
    );
    "#,
    // 2: runs written while they happen (a run is incomplete until it
    // ends; its results so far wait in partial_results), and the rounds
    // each result's estimate and interval come from.
    r#"
    ALTER TABLE runs ADD COLUMN complete INTEGER NOT NULL DEFAULT 1;
    ALTER TABLE results ADD COLUMN n_rounds INTEGER NOT NULL DEFAULT 0;
    CREATE TABLE partial_results (
        run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        seq    INTEGER NOT NULL,           -- position in the run
        doc    TEXT NOT NULL,              -- the result so far, JSON
        PRIMARY KEY (run_id, seq)
    );
    CREATE TABLE rounds (
        run_id     TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        seq        INTEGER NOT NULL,       -- the result's position in the run
        round      INTEGER NOT NULL,       -- in the order the rounds ran
        bench_id   TEXT NOT NULL,
        median     REAL,
        n_samples  INTEGER NOT NULL,
        at_s       REAL,                   -- seconds into the run
        canary     REAL,                   -- relative to the run's fast phase
        slow       INTEGER NOT NULL,
        used       INTEGER NOT NULL,       -- 0: replaced by a round measured again
        steal_ms   REAL,
        nivcsw     INTEGER,
        migrations INTEGER,
        load       REAL,
        PRIMARY KEY (run_id, seq, round)
    );
    CREATE INDEX rounds_by_bench ON rounds (bench_id);
    "#,
];

/// The schema version this binary writes and understands.
pub fn latest() -> i64 {
    MIGRATIONS.len() as i64
}

/// The name of the PostgreSQL schema (namespace) that holds an opcost
/// history, so that it can share a database with other applications.
pub const PG_SCHEMA: &str = "opcost";

/// The same migrations for PostgreSQL: entry `i` moves the schema from
/// version `i` to `i + 1`, the same logical tables and columns as
/// [`MIGRATIONS`] (booleans are `boolean`, the host block is `jsonb` so it
/// can be queried, and `row_no` stands for SQLite's implicit `rowid`).
/// Ids, host names and start times are compared bytewise (`COLLATE "C"`,
/// as SQLite does): they are ASCII, and a locale's collation would make
/// every index insert several times dearer.
/// `results` and `rounds` have no foreign key to `runs`: their rows are
/// only ever written with their run, in its transaction, and a per-row
/// check would be more than half the time of a bulk push (millions of
/// rounds); nothing deletes runs from a shared history. For the same
/// reason `rounds` has no index by benchmark (`results` has one): a
/// benchmark's rounds are found through its results.
/// The version is the single row of `schema_version`. Only ever append,
/// in step with [`MIGRATIONS`].
pub const PG_MIGRATIONS: &[&str] = &[
    // 1: runs, their results and findings.
    r#"
    CREATE TABLE schema_version (version integer NOT NULL);
    INSERT INTO schema_version VALUES (0);
    CREATE TABLE runs (
        id             text COLLATE "C" PRIMARY KEY,
        started        text COLLATE "C" NOT NULL,
        duration_s     double precision NOT NULL,
        profile        text NOT NULL,
        label          text,
        hostname       text COLLATE "C" NOT NULL,
        cpu_model      text,
        opcost_version text NOT NULL,
        doc_schema     bigint NOT NULL,
        interrupted    boolean NOT NULL,
        n_results      bigint NOT NULL,
        n_skipped      bigint NOT NULL,
        saved          text NOT NULL,
        source         text,
        host           jsonb NOT NULL,
        doc            text NOT NULL,
        row_no         bigint GENERATED ALWAYS AS IDENTITY
    );
    CREATE INDEX runs_by_host ON runs (hostname, started);
    CREATE INDEX runs_by_time ON runs (started);
    CREATE TABLE results (
        run_id    text COLLATE "C" NOT NULL,
        seq       bigint NOT NULL,
        bench_id  text COLLATE "C" NOT NULL,
        area      text NOT NULL,
        unit      text NOT NULL,
        params    text NOT NULL,
        median    double precision,
        ci_low    double precision,
        ci_high   double precision,
        p5        double precision,
        p95       double precision,
        min       double precision,
        max       double precision,
        cv        double precision,
        n_samples bigint NOT NULL,
        noisy     boolean NOT NULL,
        PRIMARY KEY (run_id, seq)
    );
    CREATE INDEX results_by_bench ON results (bench_id);
    CREATE TABLE findings (
        run_id text COLLATE "C" NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        seq    bigint NOT NULL,
        area   text NOT NULL,
        text   text NOT NULL,
        value  double precision,
        unit   text NOT NULL,
        PRIMARY KEY (run_id, seq)
    );
    "#,
    // 2: incomplete runs with their partial results, and the rounds.
    r#"
    ALTER TABLE runs ADD COLUMN complete boolean NOT NULL DEFAULT true;
    ALTER TABLE results ADD COLUMN n_rounds bigint NOT NULL DEFAULT 0;
    CREATE TABLE partial_results (
        run_id text COLLATE "C" NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        seq    bigint NOT NULL,
        doc    text NOT NULL,
        PRIMARY KEY (run_id, seq)
    );
    CREATE TABLE rounds (
        run_id     text COLLATE "C" NOT NULL,
        seq        bigint NOT NULL,
        round      bigint NOT NULL,
        bench_id   text COLLATE "C" NOT NULL,
        median     double precision,
        n_samples  bigint NOT NULL,
        at_s       double precision,
        canary     double precision,
        slow       boolean NOT NULL,
        used       boolean NOT NULL,
        steal_ms   double precision,
        nivcsw     bigint,
        migrations bigint,
        load       double precision,
        PRIMARY KEY (run_id, seq, round)
    );
    "#,
];
