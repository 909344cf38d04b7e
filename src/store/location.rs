//! Where a history lives: an SQLite file (a path) or a PostgreSQL database
//! (a `postgres://` or `postgresql://` URL), as `--db` or `OPCOST_DB` name it.
//!
//! A URL may carry a password; it is kept only to connect and is never
//! shown: [`PgUrl`]'s `Display` and `Debug` print the URL with the password
//! replaced by `***`, and every message about the database uses them.

use std::path::PathBuf;

/// A history's location.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Location {
    /// An SQLite file.
    Sqlite(PathBuf),
    /// A PostgreSQL database.
    Postgres(PgUrl),
}

impl Location {
    /// Reads `--db`: a `postgres://` or `postgresql://` URL is PostgreSQL,
    /// anything else a path of an SQLite file. A URL the driver cannot read
    /// is refused, and the message does not repeat its password.
    pub fn parse(s: &str) -> Result<Location, String> {
        if is_url(s) {
            PgUrl::parse(s).map(Location::Postgres)
        } else if s.contains("://") {
            Err(format!(
                "'{}' is neither a path nor a postgres:// or postgresql:// URL",
                redact(s)
            ))
        } else if s.is_empty() {
            Err("--db is empty: give a path or a postgres:// URL".into())
        } else {
            Ok(Location::Sqlite(PathBuf::from(s)))
        }
    }

    /// The location as it may be shown: the path, or the URL without its password.
    pub fn shown(&self) -> String {
        match self {
            Location::Sqlite(p) => p.display().to_string(),
            Location::Postgres(u) => u.to_string(),
        }
    }
}

/// True for the URL schemes PostgreSQL's own clients accept (lower case, as libpq).
fn is_url(s: &str) -> bool {
    s.starts_with("postgres://") || s.starts_with("postgresql://")
}

/// A PostgreSQL connection URL whose password is never shown.
#[derive(Clone, PartialEq, Eq)]
pub struct PgUrl {
    raw: String,
    shown: String,
}

impl PgUrl {
    /// Checks the URL with the driver's own parser; the error names the
    /// problem but not the password.
    pub fn parse(s: &str) -> Result<PgUrl, String> {
        let shown = redact(s);
        s.parse::<postgres::Config>()
            .map_err(|e| format!("'{shown}' is not a PostgreSQL URL the driver accepts: {e}"))?;
        Ok(PgUrl {
            raw: s.to_string(),
            shown,
        })
    }

    /// The URL with its password, to connect with. Never print it.
    pub fn secret(&self) -> &str {
        &self.raw
    }
}

impl std::fmt::Display for PgUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.shown)
    }
}

impl std::fmt::Debug for PgUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PgUrl({})", self.shown)
    }
}

/// `s` with the password of its user-info part (`user:PASSWORD@`) and of a
/// `password=` query parameter replaced by `***`.
pub fn redact(s: &str) -> String {
    let mut out = s.to_string();
    if let Some(start) = out.find("://").map(|i| i + 3) {
        // The authority ends at the first '/' or '?' after the scheme; the
        // user info at its last '@' (a password may hold '@' when encoded badly).
        let end = out[start..]
            .find(['/', '?'])
            .map_or(out.len(), |i| start + i);
        if let Some(at) = out[start..end].rfind('@').map(|i| start + i)
            && let Some(colon) = out[start..at].find(':').map(|i| start + i)
        {
            out.replace_range(colon + 1..at, "***");
        }
    }
    if let Some(q) = out.find('?') {
        let (head, query) = out.split_at(q + 1);
        let query: Vec<String> = query
            .split('&')
            .map(|kv| match kv.split_once('=') {
                Some((k, _)) if k.eq_ignore_ascii_case("password") => format!("{k}=***"),
                _ => kv.to_string(),
            })
            .collect();
        out = format!("{head}{}", query.join("&"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_and_paths_are_told_apart() {
        assert_eq!(
            Location::parse("/tmp/h.db").unwrap(),
            Location::Sqlite("/tmp/h.db".into())
        );
        assert_eq!(
            Location::parse("h.db").unwrap(),
            Location::Sqlite("h.db".into())
        );
        for u in [
            "postgres://u@db.example/opcost",
            "postgresql://u:pw@db.example:5433/opcost?sslmode=require",
            "postgresql:///opcost?host=/run/postgresql",
        ] {
            assert!(
                matches!(Location::parse(u), Ok(Location::Postgres(_))),
                "{u}"
            );
        }
        assert!(Location::parse("mysql://u:secret@h/db").is_err());
        assert!(
            !Location::parse("mysql://u:secret@h/db")
                .unwrap_err()
                .contains("secret")
        );
        assert!(Location::parse("").is_err());
        let e = Location::parse("postgres://u:secret@h/db?sslmode=bogus").unwrap_err();
        assert!(!e.contains("secret"), "{e}");
    }

    #[test]
    fn passwords_are_never_shown() {
        let cases = [
            (
                "postgres://alice:s3cr%40t@db:5432/opcost",
                "postgres://alice:***@db:5432/opcost",
            ),
            ("postgres://alice@db/opcost", "postgres://alice@db/opcost"),
            (
                "postgresql://db/opcost?user=a&password=hunter2&sslmode=require",
                "postgresql://db/opcost?user=a&password=***&sslmode=require",
            ),
            (
                "postgres://a:b@c@h/x?Password=p",
                "postgres://a:***@h/x?Password=***",
            ),
        ];
        for (raw, shown) in cases {
            assert_eq!(redact(raw), shown);
        }
        let u = PgUrl::parse("postgres://alice:hunter2@db/opcost").unwrap();
        assert!(!u.to_string().contains("hunter2"));
        assert!(!format!("{u:?}").contains("hunter2"));
        assert!(
            !format!("{:?}", Location::Postgres(u.clone())).contains("hunter2"),
            "Debug of the location"
        );
        assert!(u.secret().contains("hunter2"));
    }
}
