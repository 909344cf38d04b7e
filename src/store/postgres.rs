//! The history in PostgreSQL: the runs of many hosts in one database.
//!
//! Why it is shaped this way:
//! - The same logical schema as the SQLite history (see
//!   [`schema::PG_MIGRATIONS`]), in a schema (namespace) of its own,
//!   `opcost`, so the database may hold other applications' tables. Its
//!   version is the row of `opcost.schema_version`; migrations run in one
//!   transaction under an advisory lock and re-read the version, so two
//!   hosts using a new database at once cannot both migrate.
//! - The run document is stored whole (`runs.doc`), as in SQLite: a run
//!   loads back equal to what was saved.
//! - Runs arrive in bulk (`opcost push`, a fleet's runs): [`PgStore::save_all`]
//!   writes any number of runs in one transaction, a batch at a time, each
//!   table by a binary `COPY`, never row by row.
//! - The URL's password is never shown (see [`PgUrl`]); TLS is used when the
//!   URL asks for it (`sslmode=require`), the server's certificate checked
//!   against the system's trust store.

use std::collections::HashMap;
use std::time::Duration;

use anyhow::{Context, anyhow, bail};
use postgres::binary_copy::BinaryCopyInWriter;
use postgres::config::SslMode;
use postgres::types::{ToSql, Type};
use postgres::{Client, NoTls, Transaction};

use super::location::PgUrl;
use super::{
    IdConflict, Incoming, Outcome, Parts, Prefix, RunRow, Saved, TrendFilter, TrendRows, TrendRun,
    cpu_model, finite, schema,
};
use crate::document::RunDoc;
use crate::harness::Measurement;

/// How long connecting may take when the URL does not say (`connect_timeout`).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The key of the advisory lock migrations hold ("opco").
const LOCK_KEY: i64 = 0x6f70_636f;

/// Runs written per round of `COPY`s, and the most JSON text such a batch
/// gathers before it is written (a bound on memory).
const BATCH_RUNS: usize = 100;
const BATCH_BYTES: usize = 32 << 20;

/// An open PostgreSQL history.
pub struct PgStore {
    client: Client,
    url: PgUrl,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore").field("url", &self.url).finish()
    }
}

/// An error of the database, said with the URL (without its password).
fn explain(e: postgres::Error, url: &PgUrl) -> anyhow::Error {
    let detail = match e.as_db_error() {
        Some(db) => format!("{}: {}", db.severity(), db.message()),
        None => e.to_string(),
    };
    anyhow!("PostgreSQL history {url}: {detail}")
}

impl PgStore {
    /// Connects to the database at `url` and migrates its opcost schema to
    /// the current version, creating it on first use.
    pub fn open(url: &PgUrl) -> anyhow::Result<PgStore> {
        let client = connect(url)?;
        let mut store = PgStore {
            client,
            url: url.clone(),
        };
        store.migrate()?;
        Ok(store)
    }

    /// The URL, without its password.
    pub fn url(&self) -> &PgUrl {
        &self.url
    }

    /// The schema version of the open history.
    pub fn version(&mut self) -> anyhow::Result<i64> {
        let row = self
            .client
            .query_one("SELECT version FROM schema_version", &[])
            .map_err(|e| explain(e, &self.url))?;
        Ok(i64::from(row.get::<_, i32>(0)))
    }

    fn migrate(&mut self) -> anyhow::Result<()> {
        let url = self.url.clone();
        let latest = schema::latest();
        // Usually there is nothing to do: one read, no lock.
        if let Ok(row) = self
            .client
            .query_one("SELECT version FROM schema_version", &[])
        {
            let v = i64::from(row.get::<_, i32>(0));
            if v == latest {
                return Ok(());
            }
        }
        let mut tx = self.client.transaction().map_err(|e| explain(e, &url))?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&LOCK_KEY])
            .map_err(|e| explain(e, &url))?;
        let q = |tx: &mut Transaction<'_>, sql: &str| -> anyhow::Result<bool> {
            tx.query_one(sql, &[&schema::PG_SCHEMA])
                .map(|r| r.get::<_, bool>(0))
                .map_err(|e| explain(e, &url))
        };
        let has_schema = q(
            &mut tx,
            "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)",
        )?;
        let has_version = q(
            &mut tx,
            "SELECT EXISTS (SELECT 1 FROM pg_tables WHERE schemaname = $1 AND tablename = 'schema_version')",
        )?;
        let has_tables = q(
            &mut tx,
            "SELECT EXISTS (SELECT 1 FROM pg_tables WHERE schemaname = $1)",
        )?;
        if has_tables && !has_version {
            bail!(
                "the schema `{}` of {url} holds tables that are not an opcost history; nothing was changed. Use another database",
                schema::PG_SCHEMA
            );
        }
        if !has_schema {
            tx.batch_execute(&format!("CREATE SCHEMA {}", schema::PG_SCHEMA))
                .map_err(|e| explain(e, &url))
                .context(
                    "creating the opcost schema (does the user have CREATE on the database?)",
                )?;
        }
        tx.batch_execute(&format!("SET search_path TO {}", schema::PG_SCHEMA))
            .map_err(|e| explain(e, &url))?;
        let mut version: i64 = if has_version {
            let row = tx
                .query_one("SELECT version FROM schema_version", &[])
                .map_err(|e| explain(e, &url))?;
            i64::from(row.get::<_, i32>(0))
        } else {
            0
        };
        if version > latest {
            bail!(
                "the history {url} has schema version {version}, newer than this opcost understands ({latest}); upgrade opcost. Nothing was changed"
            );
        }
        while version < latest {
            tx.batch_execute(schema::PG_MIGRATIONS[version as usize])
                .map_err(|e| explain(e, &url))
                .with_context(|| format!("migrating the history to schema {}", version + 1))?;
            version += 1;
            tx.execute(
                "UPDATE schema_version SET version = $1",
                &[&(version as i32)],
            )
            .map_err(|e| explain(e, &url))?;
        }
        tx.commit().map_err(|e| explain(e, &url))?;
        Ok(())
    }

    /// Saves one run (see [`PgStore::save_all`]); a different run with the
    /// same id is an [`IdConflict`].
    pub fn save(&mut self, doc: &RunDoc, source: Option<&str>) -> anyhow::Result<Saved> {
        let item = Ok(Incoming {
            source: source.map(str::to_string),
            ..Incoming::new(doc.clone())
        });
        let mut out = self.save_all(&mut std::iter::once(item))?;
        match out.pop() {
            Some(o) => o.result,
            None => bail!("run {} was not saved", doc.run.id),
        }
    }

    /// Saves every run `docs` yields, in one transaction: all are written or,
    /// on a database error, none. A run already there with the same content
    /// is [`Saved::AlreadyPresent`]; a different one with the same id, or a
    /// document that could not be read (an `Err` item), is a failed
    /// [`Outcome`] and the others are still saved.
    pub fn save_all(
        &mut self,
        docs: &mut dyn Iterator<Item = anyhow::Result<Incoming>>,
    ) -> anyhow::Result<Vec<Outcome>> {
        let url = self.url.clone();
        let mut outcomes = Vec::new();
        let mut tx = self.client.transaction().map_err(|e| explain(e, &url))?;
        loop {
            let mut batch: Vec<Parts> = Vec::new();
            let mut bytes = 0;
            for item in &mut *docs {
                match item.and_then(Incoming::into_parts) {
                    Ok((d, s, text)) => {
                        bytes += text.len();
                        batch.push((d, s, text));
                        if batch.len() >= BATCH_RUNS || bytes >= BATCH_BYTES {
                            break;
                        }
                    }
                    Err(e) => outcomes.push(Outcome {
                        id: String::new(),
                        result: Err(e),
                    }),
                }
            }
            if batch.is_empty() {
                break;
            }
            write_batch(&mut tx, batch, &mut outcomes, &url)?;
        }
        tx.commit().map_err(|e| explain(e, &url))?;
        Ok(outcomes)
    }

    /// Loads the run with exactly this id.
    pub fn load(&mut self, id: &str) -> anyhow::Result<RunDoc> {
        self.load_with_json(id).map(|(d, _)| d)
    }

    /// Loads the run with exactly this id, and for a complete run the
    /// JSON it is stored as.
    pub fn load_with_json(&mut self, id: &str) -> anyhow::Result<(RunDoc, Option<String>)> {
        let url = self.url.clone();
        let row = self
            .client
            .query_opt("SELECT doc, complete FROM runs WHERE id = $1", &[&id])
            .map_err(|e| explain(e, &url))?
            .ok_or_else(|| anyhow!("no run {id} in {url}"))?;
        let (text, complete): (String, bool) = (row.get(0), row.get(1));
        let unreadable = || format!("run {id} in {url} cannot be read by this opcost");
        let mut doc = RunDoc::from_json(&text).with_context(unreadable)?;
        if !complete {
            let parts = self
                .client
                .query(
                    "SELECT doc FROM partial_results WHERE run_id = $1 ORDER BY seq",
                    &[&id],
                )
                .map_err(|e| explain(e, &url))?;
            for p in parts {
                let m: Measurement =
                    serde_json::from_str(p.get::<_, &str>(0)).with_context(unreadable)?;
                doc.results.push(m);
            }
            doc.run.incomplete = true;
        }
        Ok((doc, complete.then_some(text)))
    }

    /// Saved runs, newest first, optionally of one host; `limit` 0 means all.
    pub fn list(&mut self, host: Option<&str>, limit: usize) -> anyhow::Result<Vec<RunRow>> {
        let limit: Option<i64> = (limit > 0).then_some(limit as i64);
        let rows = self
            .client
            .query(
                "SELECT id, started, hostname, cpu_model, profile, label,
                        CASE WHEN complete THEN n_results
                             ELSE (SELECT count(*) FROM partial_results p WHERE p.run_id = runs.id)
                        END,
                        n_skipped, interrupted, source, complete
                 FROM runs WHERE $1::text IS NULL OR hostname = $1
                 ORDER BY started DESC, row_no DESC LIMIT $2",
                &[&host, &limit],
            )
            .map_err(|e| explain(e, &self.url))?;
        Ok(rows
            .iter()
            .map(|r| RunRow {
                id: r.get(0),
                started: r.get(1),
                hostname: r.get(2),
                cpu_model: r.get(3),
                profile: r.get(4),
                label: r.get(5),
                n_results: r.get(6),
                n_skipped: r.get(7),
                interrupted: r.get(8),
                source: r.get(9),
                complete: r.get(10),
            })
            .collect())
    }

    /// The id of the latest run, of one host if given.
    pub fn latest(&mut self, host: Option<&str>) -> anyhow::Result<Option<String>> {
        let row = self
            .client
            .query_opt(
                "SELECT id FROM runs WHERE $1::text IS NULL OR hostname = $1
                 ORDER BY started DESC, row_no DESC LIMIT 1",
                &[&host],
            )
            .map_err(|e| explain(e, &self.url))?;
        Ok(row.map(|r| r.get(0)))
    }

    /// The ids of the latest complete run of each host (with this label,
    /// when given), by host name.
    pub fn latest_per_host(&mut self, label: Option<&str>) -> anyhow::Result<Vec<String>> {
        let rows = self
            .client
            .query(
                "SELECT id FROM (
                    SELECT DISTINCT ON (hostname) id, hostname FROM runs
                    WHERE complete AND ($1::text IS NULL OR label = $1)
                    ORDER BY hostname, started DESC, row_no DESC
                 ) latest ORDER BY hostname",
                &[&label],
            )
            .map_err(|e| explain(e, &self.url))?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }

    /// The complete runs `filter` selects, oldest first, and those of
    /// their results whose benchmark `keep` selects.
    pub fn trend_rows(
        &mut self,
        filter: &TrendFilter,
        keep: &dyn Fn(&str) -> bool,
    ) -> anyhow::Result<TrendRows> {
        const WHERE: &str = "u.complete AND ($1::text IS NULL OR u.hostname = $1)
            AND ($2::text IS NULL OR u.started >= $2) AND ($3::text IS NULL OR u.label = $3)";
        let args: [&(dyn ToSql + Sync); 3] = [&filter.host, &filter.since, &filter.label];
        let mut rows = TrendRows::default();
        let runs = self
            .client
            .query(
                &format!(
                    "SELECT id, started, hostname, profile, host::text FROM runs u
                     WHERE {WHERE} ORDER BY started, row_no"
                ),
                &args,
            )
            .map_err(|e| explain(e, &self.url))?;
        for r in &runs {
            rows.add_run(TrendRun {
                id: r.get(0),
                started: r.get(1),
                hostname: r.get(2),
                profile: r.get(3),
                host: r.get(4),
            });
        }
        let values = self
            .client
            .query(
                &format!(
                    "SELECT r.run_id, r.bench_id, r.unit, r.median, r.ci_low, r.ci_high
                     FROM results r JOIN runs u ON u.id = r.run_id
                     WHERE {WHERE} ORDER BY u.started, u.row_no, r.seq"
                ),
                &args,
            )
            .map_err(|e| explain(e, &self.url))?;
        for r in &values {
            let run_id: &str = r.get(0);
            rows.add_value(
                run_id,
                (r.get(1), r.get(2)),
                [r.get(3), r.get(4), r.get(5)],
                keep,
            );
        }
        Ok(rows)
    }

    /// The runs whose id starts with `prefix` (hex digits, any case).
    pub fn find_prefix(&mut self, prefix: &str) -> anyhow::Result<Prefix> {
        let prefix = prefix.to_ascii_lowercase();
        if prefix.is_empty() || !prefix.chars().all(|c| c.is_ascii_hexdigit()) {
            return Ok(Prefix::None);
        }
        let rows = self
            .client
            .query(
                "SELECT id FROM runs WHERE left(id, length($1)) = $1 ORDER BY id LIMIT 11",
                &[&prefix],
            )
            .map_err(|e| explain(e, &self.url))?;
        let ids: Vec<String> = rows.iter().map(|r| r.get(0)).collect();
        Ok(Prefix::of(ids))
    }

    /// The number of saved runs.
    pub fn count(&mut self) -> anyhow::Result<i64> {
        let row = self
            .client
            .query_one("SELECT count(*) FROM runs", &[])
            .map_err(|e| explain(e, &self.url))?;
        Ok(row.get(0))
    }
}

/// Connects with TLS when the URL says `sslmode=require`, in the clear
/// otherwise (`prefer`, the driver's default, is taken as plain, so a
/// server that offers TLS is not tried with a trust store it may not match).
fn connect(url: &PgUrl) -> anyhow::Result<Client> {
    let mut config: postgres::Config = url
        .secret()
        .parse()
        .map_err(|e| anyhow!("'{url}' is not a PostgreSQL URL the driver accepts: {e}"))?;
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(CONNECT_TIMEOUT);
    }
    if config.get_application_name().is_none() {
        config.application_name("opcost");
    }
    let client = if config.get_ssl_mode() == SslMode::Require {
        let (tls, _) = tokio_postgres_rustls::MakeRustlsConnect::with_native_certs().map_err(|_| {
            anyhow!(
                "the URL asks for TLS (sslmode=require) but no trusted certificate authority was found on this system; install ca-certificates or set SSL_CERT_FILE"
            )
        })?;
        config.connect(tls)
    } else {
        config.ssl_mode(SslMode::Disable);
        config.connect(NoTls)
    };
    let mut client = client.map_err(|e| {
        anyhow!(
            "cannot connect to the PostgreSQL history {url}: {}",
            error_text(&e)
        )
    })?;
    client
        .batch_execute(&format!("SET search_path TO {}", schema::PG_SCHEMA))
        .map_err(|e| explain(e, url))?;
    // Run documents are large JSON texts: lz4 compresses them several
    // times faster than the default pglz. PostgreSQL before 14, or built
    // without lz4, refuses the setting and keeps pglz.
    let _ = client.batch_execute("SET default_toast_compression = 'lz4'");
    Ok(client)
}

/// An error with its causes, which the driver's own `Display` leaves out.
fn error_text(e: &postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        return format!("{}: {}", db.severity(), db.message());
    }
    let mut s = e.to_string();
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        let t = c.to_string();
        if !s.contains(&t) {
            s = format!("{s}: {t}");
        }
        cause = c.source();
    }
    s
}

/// Writes one batch in the open transaction: the runs not there yet, by
/// `COPY`, their results, rounds and findings likewise.
fn write_batch(
    tx: &mut Transaction<'_>,
    batch: Vec<Parts>,
    outcomes: &mut Vec<Outcome>,
    url: &PgUrl,
) -> anyhow::Result<()> {
    let ids: Vec<&str> = batch.iter().map(|(d, _, _)| d.run.id.as_str()).collect();
    let existing: HashMap<String, (String, bool)> = tx
        .query(
            "SELECT id, doc, complete FROM runs WHERE id = ANY($1)",
            &[&ids],
        )
        .map_err(|e| explain(e, url))?
        .into_iter()
        .map(|r| (r.get(0), (r.get(1), r.get(2))))
        .collect();
    let mut new: Vec<Parts> = Vec::new();
    for (doc, source, text) in batch {
        let result = if let Some((old, complete)) = existing.get(&doc.run.id) {
            // The same text is the same run; another text may still be
            // (an older opcost wrote it): compared as documents.
            let same =
                *complete && (*old == text || RunDoc::from_json(old).is_ok_and(|o| o == doc));
            if same {
                Ok(Saved::AlreadyPresent)
            } else {
                Err(IdConflict(doc.run.id.clone()).into())
            }
        } else if let Some((first, _, _)) = new.iter().find(|(d, _, _)| d.run.id == doc.run.id) {
            if *first == doc {
                Ok(Saved::AlreadyPresent)
            } else {
                Err(IdConflict(doc.run.id.clone()).into())
            }
        } else {
            Ok(Saved::New)
        };
        outcomes.push(Outcome {
            id: doc.run.id.clone(),
            result: result.map_err(|e: anyhow::Error| e.context(format!("run {}", doc.run.id))),
        });
        if matches!(outcomes.last().map(|o| &o.result), Some(Ok(Saved::New))) {
            new.push((doc, source, text));
        }
    }
    if new.is_empty() {
        return Ok(());
    }
    copy_runs(tx, &new, url)?;
    copy_results(tx, &new, url)?;
    copy_rounds(tx, &new, url)?;
    copy_findings(tx, &new, url)?;
    Ok(())
}

/// A binary `COPY ... FROM STDIN` (the table and columns as `sql` names
/// them) of rows whose columns are of `types`.
fn copy_writer<'a>(
    tx: &'a mut Transaction<'_>,
    sql: &str,
    types: &[Type],
    url: &'a PgUrl,
) -> anyhow::Result<CopyIn<'a>> {
    let sink = tx.copy_in(sql).map_err(|e| explain(e, url))?;
    Ok(CopyIn {
        w: BinaryCopyInWriter::new(sink, types),
        url,
    })
}

/// An open binary `COPY`, whose errors name the database.
struct CopyIn<'a> {
    w: BinaryCopyInWriter<'a>,
    url: &'a PgUrl,
}

impl CopyIn<'_> {
    /// Sends one row.
    fn write(&mut self, row: &[&(dyn ToSql + Sync)]) -> anyhow::Result<()> {
        self.w.write(row).map_err(|e| explain(e, self.url))
    }

    /// Ends the copy: the rows are in the table.
    fn finish(self) -> anyhow::Result<()> {
        self.w.finish().map_err(|e| explain(e, self.url))?;
        Ok(())
    }
}

fn copy_runs(tx: &mut Transaction<'_>, runs: &[Parts], url: &PgUrl) -> anyhow::Result<()> {
    let t = Type::TEXT;
    let mut w = copy_writer(
        tx,
        "COPY runs (id, started, duration_s, profile, label, hostname, cpu_model,
                opcost_version, doc_schema, interrupted, n_results, n_skipped, saved, source,
                host, doc, complete) FROM STDIN BINARY",
        &[
            t.clone(),
            t.clone(),
            Type::FLOAT8,
            t.clone(),
            t.clone(),
            t.clone(),
            t.clone(),
            t.clone(),
            Type::INT8,
            Type::BOOL,
            Type::INT8,
            Type::INT8,
            t.clone(),
            t.clone(),
            Type::JSONB,
            t,
            Type::BOOL,
        ],
        url,
    )?;
    let saved = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    for (doc, source, text) in runs {
        let host = serde_json::to_value(&doc.host).context("serialising the host")?;
        let row: [&(dyn ToSql + Sync); 17] = [
            &doc.run.id,
            &doc.run.started,
            &finite(doc.run.duration_s).unwrap_or(0.0),
            &doc.run.profile.name(),
            &doc.run.label,
            &doc.host.hostname,
            &cpu_model(&host),
            &doc.opcost_version,
            &i64::from(doc.schema),
            &doc.run.interrupted,
            &(doc.results.len() as i64),
            &(doc.skipped.len() as i64),
            &saved,
            source,
            &host,
            text,
            &true,
        ];
        w.write(&row)?;
    }
    w.finish()
}

fn copy_results(tx: &mut Transaction<'_>, runs: &[Parts], url: &PgUrl) -> anyhow::Result<()> {
    let (t, f) = (Type::TEXT, Type::FLOAT8);
    let mut types = vec![Type::TEXT, Type::INT8, t.clone(), t.clone(), t.clone(), t];
    types.extend(std::iter::repeat_n(f, 8));
    types.extend([Type::INT8, Type::BOOL, Type::INT8]);
    let mut w = copy_writer(
        tx,
        "COPY results (run_id, seq, bench_id, area, unit, params, median, ci_low, ci_high,
                p5, p95, min, max, cv, n_samples, noisy, n_rounds) FROM STDIN BINARY",
        &types,
        url,
    )?;
    for (doc, _, _) in runs {
        for (i, m) in doc.results.iter().enumerate() {
            let params = serde_json::to_string(&m.params).context("serialising params")?;
            let row: [&(dyn ToSql + Sync); 17] = [
                &doc.run.id,
                &(i as i64),
                &m.id,
                &m.area,
                &m.unit.label(),
                &params,
                &finite(m.median),
                &finite(m.ci_low),
                &finite(m.ci_high),
                &finite(m.p5),
                &finite(m.p95),
                &finite(m.min),
                &finite(m.max),
                &finite(m.cv),
                &(m.samples.len() as i64),
                &m.noisy,
                &(m.rounds.len() as i64),
            ];
            w.write(&row)?;
        }
    }
    w.finish()
}

fn copy_rounds(tx: &mut Transaction<'_>, runs: &[Parts], url: &PgUrl) -> anyhow::Result<()> {
    if runs
        .iter()
        .all(|(d, _, _)| d.results.iter().all(|m| m.rounds.is_empty()))
    {
        return Ok(());
    }
    let (i8, f8) = (Type::INT8, Type::FLOAT8);
    let mut w = copy_writer(
        tx,
        "COPY rounds (run_id, seq, round, bench_id, median, n_samples, at_s, canary, slow,
                used, steal_ms, nivcsw, migrations, load) FROM STDIN BINARY",
        &[
            Type::TEXT,
            i8.clone(),
            i8.clone(),
            Type::TEXT,
            f8.clone(),
            i8.clone(),
            f8.clone(),
            f8.clone(),
            Type::BOOL,
            Type::BOOL,
            f8.clone(),
            i8.clone(),
            i8,
            f8,
        ],
        url,
    )?;
    for (doc, _, _) in runs {
        for (i, m) in doc.results.iter().enumerate() {
            for (k, r) in m.rounds.iter().enumerate() {
                let row: [&(dyn ToSql + Sync); 14] = [
                    &doc.run.id,
                    &(i as i64),
                    &(k as i64),
                    &m.id,
                    &finite(r.median),
                    &(r.n as i64),
                    &finite(r.at_s),
                    &r.canary.and_then(finite),
                    &r.slow,
                    &r.used,
                    &r.steal_ms.and_then(finite),
                    &r.nivcsw.map(|v| v as i64),
                    &r.migrations.map(|v| v as i64),
                    &r.load.and_then(finite),
                ];
                w.write(&row)?;
            }
        }
    }
    w.finish()
}

fn copy_findings(tx: &mut Transaction<'_>, runs: &[Parts], url: &PgUrl) -> anyhow::Result<()> {
    let t = Type::TEXT;
    let mut w = copy_writer(
        tx,
        "COPY findings (run_id, seq, area, text, value, unit) FROM STDIN BINARY",
        &[t.clone(), Type::INT8, t.clone(), t.clone(), Type::FLOAT8, t],
        url,
    )?;
    for (doc, _, _) in runs {
        for (i, f) in doc.findings.iter().enumerate() {
            let row: [&(dyn ToSql + Sync); 6] = [
                &doc.run.id,
                &(i as i64),
                &f.area,
                &f.text,
                &finite(f.value),
                &f.unit.label(),
            ];
            w.write(&row)?;
        }
    }
    w.finish()
}
