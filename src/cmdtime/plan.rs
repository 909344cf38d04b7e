//! From the command line of `opcost cmd` to the list of measured commands:
//! `CMD ::: BASELINE` pairs, the shared `--baseline` (where `{}` stands for
//! the measured command's program), the parameter scan (`{VAR}` replaced by
//! each value), splitting into words as a shell would (or `/bin/sh -c` with
//! `--shell`), ids, and every check that can fail before anything runs.

use std::path::PathBuf;
use std::time::Duration;

use crate::harness::Params;

use super::child::Launch;

/// The separator of a command and its own baseline: `CMD ::: BASELINE`.
pub const PAIR_SEP: &str = ":::";

/// Most commands one invocation may measure (a scan's values included).
pub const MAX_COMMANDS: usize = 10_000;

/// A parameter scan: `{name}` takes every value from `min` to `max` by `step`.
#[derive(Clone, Debug, PartialEq)]
pub struct Scan {
    /// The parameter's name, written `{name}` in the commands.
    pub name: String,
    /// First value.
    pub min: i64,
    /// Last value (included).
    pub max: i64,
    /// Increment.
    pub step: i64,
}

impl Scan {
    /// Parses `-P VAR MIN MAX` with `--step`.
    pub fn parse(words: &[String], step: i64) -> Result<Scan, String> {
        let [name, min, max] = words else {
            return Err("-P takes three values: VAR MIN MAX".into());
        };
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!(
                "-P {name}: the parameter name must be letters, digits or _"
            ));
        }
        let num = |s: &str| {
            s.parse::<i64>()
                .map_err(|_| format!("-P {name}: '{s}' is not an integer"))
        };
        let (min, max) = (num(min)?, num(max)?);
        if min > max {
            return Err(format!("-P {name}: MIN {min} is larger than MAX {max}"));
        }
        if step <= 0 {
            return Err(format!("--step {step}: must be positive"));
        }
        let s = Scan {
            name: name.clone(),
            min,
            max,
            step,
        };
        Ok(s)
    }

    /// The values, in order.
    pub fn values(&self) -> impl Iterator<Item = i64> + '_ {
        (self.min..=self.max).step_by(self.step as usize)
    }

    /// How many values.
    pub fn count(&self) -> u64 {
        ((self.max - self.min) / self.step) as u64 + 1
    }
}

/// What the user asked for, before expansion.
#[derive(Clone, Debug, Default)]
pub struct Request {
    /// The positional words: commands, with `:::` pairing a command with its baseline.
    pub words: Vec<String>,
    /// The baseline of every command that has no pair of its own.
    pub baseline: Option<String>,
    /// Names for the commands, in order (fewer than the commands is fine).
    pub names: Vec<String>,
    /// The parameter scan.
    pub scan: Option<Scan>,
    /// Run through `/bin/sh -c`.
    pub shell: bool,
    /// Standard input of every run.
    pub input: Option<PathBuf>,
    /// Let output through.
    pub show_output: bool,
    /// Per-run time limit.
    pub timeout: Option<Duration>,
    /// Working directory of every run.
    pub cwd: Option<PathBuf>,
    /// The untimed commands around the runs.
    pub hooks: HookLines,
}

/// The untimed commands around the runs, by when they run (hyperfine's
/// `--setup`, `--prepare`, `--conclude`, `--cleanup`): the lines as typed
/// ([`HookLines`]) or ready to run ([`Hooks`]).
#[derive(Clone, Debug)]
pub struct HookSet<T> {
    /// Once before the runs of each command.
    pub setup: Option<T>,
    /// Before every run.
    pub prepare: Option<T>,
    /// After every run.
    pub conclude: Option<T>,
    /// Once after the runs of each command.
    pub cleanup: Option<T>,
}

impl<T> Default for HookSet<T> {
    fn default() -> Self {
        HookSet {
            setup: None,
            prepare: None,
            conclude: None,
            cleanup: None,
        }
    }
}

impl<T> HookSet<T> {
    /// Each hook given through `f`, with its flag (`--setup`...); the
    /// first error stops it.
    pub fn try_map<U, E>(
        &self,
        mut f: impl FnMut(&'static str, &T) -> Result<U, E>,
    ) -> Result<HookSet<U>, E> {
        let mut one = |flag, h: &Option<T>| h.as_ref().map(|h| f(flag, h)).transpose();
        Ok(HookSet {
            setup: one("--setup", &self.setup)?,
            prepare: one("--prepare", &self.prepare)?,
            conclude: one("--conclude", &self.conclude)?,
            cleanup: one("--cleanup", &self.cleanup)?,
        })
    }
}

/// The untimed commands around the runs, as typed.
pub type HookLines = HookSet<String>;

/// An untimed command, ready to run.
#[derive(Clone, Debug)]
pub struct Hook {
    /// Its flag (`--prepare`...), for messages.
    pub flag: &'static str,
    /// The command line, the scan value substituted.
    pub line: String,
    /// How it is started.
    pub run: Launch,
}

/// The untimed commands of one measured command.
pub type Hooks = HookSet<Hook>;

impl Hooks {
    /// The command lines, for a result's details.
    pub fn details(&self) -> serde_json::Value {
        let line = |h: &Option<Hook>| h.as_ref().map(|h| h.line.clone());
        serde_json::json!({
            "setup": line(&self.setup),
            "prepare": line(&self.prepare),
            "conclude": line(&self.conclude),
            "cleanup": line(&self.cleanup),
        })
    }
}

/// One command to measure, with its baseline, ready to run.
#[derive(Clone, Debug)]
pub struct Spec {
    /// The result id: `cmd.NAME`, `cmd.NAME/VAR=VALUE` in a scan.
    pub id: String,
    /// The command line as given, the scan value substituted.
    pub command: String,
    /// The baseline command line, if any.
    pub baseline: Option<String>,
    /// The command line before substitution (groups a scan's points).
    pub template: String,
    /// The scan value, `(name, value)`.
    pub point: Option<(String, i64)>,
    /// How the command is started.
    pub run: Launch,
    /// How the baseline is started.
    pub base: Option<Launch>,
    /// The untimed commands around its runs.
    pub hooks: Hooks,
}

impl Spec {
    /// The parameters recorded with the results.
    pub fn params(&self) -> Params {
        let mut p = Params::new();
        if let Some((name, v)) = &self.point {
            p.insert(name.clone(), (*v).into());
        }
        p
    }
}

/// Expands the request into the commands to run, checking everything that
/// does not need a run: quoting, programs on PATH, the input file, names.
/// Every error is the user's (exit 2).
pub fn expand(r: &Request) -> Result<Vec<Spec>, String> {
    let pairs = pair_up(&r.words)?;
    check_request(r, pairs.len())?;
    let mut specs: Vec<Spec> = Vec::new();
    for (i, pair) in pairs.iter().enumerate() {
        let c = Command::of(r, i, pair)?;
        let points: Vec<Option<i64>> = match &r.scan {
            Some(s) => s.values().map(Some).collect(),
            None => vec![None],
        };
        for v in points {
            let spec = c.spec(r, v)?;
            if specs.iter().any(|s| s.id == spec.id) {
                return Err(format!(
                    "two commands would both be saved as {}; tell them apart with --name",
                    spec.id
                ));
            }
            specs.push(spec);
        }
    }
    Ok(specs)
}

/// The checks of the request as a whole, for `commands` commands: no more
/// names than commands, the working directory and the input usable, at
/// most [`MAX_COMMANDS`] to measure.
fn check_request(r: &Request, commands: usize) -> Result<(), String> {
    if r.names.len() > commands {
        return Err(format!(
            "{} --name given for {} command(s)",
            r.names.len(),
            commands
        ));
    }
    if let Some(d) = &r.cwd
        && !d.is_dir()
    {
        return Err(format!(
            "--cwd {}: {}",
            d.display(),
            if d.exists() {
                "is not a directory"
            } else {
                "no such directory"
            }
        ));
    }
    if let Some(p) = &r.input {
        std::fs::File::open(p).map_err(|e| format!("--input {}: {e}", p.display()))?;
        if p.is_dir() {
            return Err(format!("--input {}: is a directory", p.display()));
        }
    }
    let count = commands as u64 * r.scan.as_ref().map_or(1, Scan::count);
    if count > MAX_COMMANDS as u64 {
        return Err(format!(
            "{count} commands to measure (more than {MAX_COMMANDS}); use a larger --step"
        ));
    }
    Ok(())
}

/// One command of the request, before the scan's values: its line, its
/// baseline and its name.
struct Command<'a> {
    /// The command line as given.
    line: &'a str,
    /// Its own baseline (`CMD ::: BASELINE`), if any.
    own_base: Option<&'a str>,
    /// The shared `--baseline`, when it has none of its own.
    shared: Option<&'a str>,
    /// Its name in ids.
    name: String,
}

impl<'a> Command<'a> {
    /// The `i`th command of `r` (`(line, own baseline)`), checked: the
    /// scan's `{VAR}` in it or its baseline, its `--name` usable.
    fn of(
        r: &'a Request,
        i: usize,
        (line, own_base): &'a (String, Option<String>),
    ) -> Result<Command<'a>, String> {
        let shared = r.baseline.as_deref().filter(|_| own_base.is_none());
        if let Some(s) = &r.scan {
            let tag = format!("{{{}}}", s.name);
            if !line.contains(&tag) && !own_base.as_deref().or(shared).unwrap_or("").contains(&tag)
            {
                return Err(format!(
                    "-P {}: the command '{line}' does not contain {tag}",
                    s.name
                ));
            }
        }
        let name = match r.names.get(i) {
            Some(n) => {
                let n = sanitize(n);
                if n.is_empty() {
                    return Err(format!("--name '{}' has no usable character", r.names[i]));
                }
                n
            }
            None => default_name(line, r.scan.as_ref()),
        };
        Ok(Command {
            line,
            own_base: own_base.as_deref(),
            shared,
            name,
        })
    }

    /// The command at scan value `v` (none without a scan), ready to run:
    /// the value substituted, the command, its baseline and its hooks
    /// checked.
    fn spec(&self, r: &Request, v: Option<i64>) -> Result<Spec, String> {
        let subst = |line: &str| match (&r.scan, v) {
            (Some(s), Some(v)) => line.replace(&format!("{{{}}}", s.name), &v.to_string()),
            _ => line.to_string(),
        };
        let command = subst(self.line);
        let run = launch(&command, r)?;
        let baseline = match (self.own_base, self.shared) {
            (Some(b), _) => Some(subst(b)),
            (None, Some(b)) => Some(subst(b).replace("{}", &program_word(&command, r.shell)?)),
            (None, None) => None,
        };
        let base = baseline.as_deref().map(|b| launch(b, r)).transpose()?;
        let hooks = hooks(r, &subst)?;
        let point = r.scan.as_ref().zip(v).map(|(s, v)| (s.name.clone(), v));
        let id = match &point {
            Some((n, v)) => format!("cmd.{}/{n}={v}", self.name),
            None => format!("cmd.{}", self.name),
        };
        Ok(Spec {
            id,
            command,
            baseline,
            template: self.line.to_string(),
            point,
            run,
            base,
            hooks,
        })
    }
}

/// The request's hooks, each line passed through `subst` (the scan value)
/// and checked like a command; a hook reads no `--input`.
fn hooks(r: &Request, subst: &dyn Fn(&str) -> String) -> Result<Hooks, String> {
    r.hooks.try_map(|flag, l: &String| {
        if l.trim().is_empty() {
            return Err(format!("{flag}: an empty command"));
        }
        let line = subst(l);
        let mut run = launch(&line, r).map_err(|e| format!("{flag}: {e}"))?;
        run.input = None;
        Ok(Hook { flag, line, run })
    })
}

/// Splits the positional words into `(command, own baseline)` pairs.
fn pair_up(words: &[String]) -> Result<Vec<(String, Option<String>)>, String> {
    let mut out: Vec<(String, Option<String>)> = Vec::new();
    let mut it = words.iter().peekable();
    while let Some(w) = it.next() {
        if w == PAIR_SEP {
            return Err(format!(
                "'{PAIR_SEP}' must stand between a command and its baseline"
            ));
        }
        if w.trim().is_empty() {
            return Err("an empty command".into());
        }
        // `CMD ::: BASE` as one word, or as three.
        if let Some((c, b)) = w.split_once(&format!(" {PAIR_SEP} ")) {
            out.push((c.trim().to_string(), Some(b.trim().to_string())));
            continue;
        }
        if it.peek().is_some_and(|n| *n == PAIR_SEP) {
            it.next();
            let b = it.next().filter(|b| *b != PAIR_SEP && !b.trim().is_empty());
            let Some(b) = b else {
                return Err(format!("'{w} {PAIR_SEP}' lacks its baseline command"));
            };
            out.push((w.clone(), Some(b.clone())));
        } else {
            out.push((w.clone(), None));
        }
    }
    if out.is_empty() {
        return Err("no command to measure".into());
    }
    Ok(out)
}

/// How a command line is started: its words, or `/bin/sh -c LINE`.
fn launch(line: &str, r: &Request) -> Result<Launch, String> {
    let argv = if r.shell {
        vec!["/bin/sh".to_string(), "-c".to_string(), line.to_string()]
    } else {
        let words = split(line)?;
        check_program(&words[0], r.cwd.as_deref())?;
        words
    };
    Ok(Launch {
        argv,
        input: r.input.clone(),
        show_output: r.show_output,
        timeout: r.timeout,
        cwd: r.cwd.clone(),
    })
}

/// The words of a command line, quoted as a POSIX shell would.
fn split(line: &str) -> Result<Vec<String>, String> {
    let words = shell_words::split(line).map_err(|e| format!("cannot split '{line}': {e}"))?;
    if words.is_empty() {
        return Err("an empty command".into());
    }
    Ok(words)
}

/// The first word of a command line (the program).
fn program_word(line: &str, shell: bool) -> Result<String, String> {
    if shell {
        return Ok(line.split_whitespace().next().unwrap_or("").to_string());
    }
    Ok(shell_words::quote(&split(line)?[0]).into_owned())
}

/// Fails when `prog` is neither an executable path (relative to `cwd`
/// when given, as the run will see it) nor found on PATH.
fn check_program(prog: &str, cwd: Option<&std::path::Path>) -> Result<(), String> {
    let found = match cwd {
        Some(d) => which::which_in(prog, std::env::var_os("PATH"), d),
        None => which::which(prog),
    };
    found
        .map(drop)
        .map_err(|_| format!("command not found: {prog}"))
}

/// The name of a command without `--name`: its words without the scan's
/// `{VAR}`, the program reduced to its file name, made id-safe.
fn default_name(cmd: &str, scan: Option<&Scan>) -> String {
    let mut line = cmd.to_string();
    if let Some(s) = scan {
        line = line.replace(&format!("{{{}}}", s.name), "");
    }
    let mut words: Vec<String> = shell_words::split(&line)
        .unwrap_or_else(|_| line.split_whitespace().map(String::from).collect());
    if let Some(first) = words.first_mut()
        && let Some(base) = std::path::Path::new(first.as_str()).file_name()
    {
        *first = base.to_string_lossy().into_owned();
    }
    let name = sanitize(&words.join(" "));
    if name.is_empty() {
        "command".into()
    } else {
        name
    }
}

/// Longest name kept in an id.
const MAX_NAME: usize = 60;

/// Keeps letters, digits, `.`, `-` and `_`; any other run of characters
/// becomes one `_`; trimmed and cut to [`MAX_NAME`].
pub fn sanitize(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
            out.push(c);
        } else if !out.ends_with('_') {
            out.push('_');
        }
    }
    let out = out.trim_matches(|c| c == '_' || c == '.');
    out.chars()
        .take(MAX_NAME)
        .collect::<String>()
        .trim_end_matches('_')
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(words: &[&str]) -> Request {
        Request {
            words: words.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn pairs_in_one_word_or_three() {
        let specs = expand(&req(&["true ::: false", "echo a", ":::", "echo b"])).unwrap();
        assert_eq!(specs.len(), 2);
        assert_eq!(specs[0].baseline.as_deref(), Some("false"));
        assert_eq!(specs[1].command, "echo a");
        assert_eq!(specs[1].baseline.as_deref(), Some("echo b"));
        assert!(expand(&req(&["echo a", ":::"])).is_err());
        assert!(expand(&req(&[":::", "echo"])).is_err());
    }

    #[test]
    fn shared_baseline_takes_the_program() {
        let mut r = req(&["sleep 0.01", "true x"]);
        r.baseline = Some("{} 0".into());
        let specs = expand(&r).unwrap();
        assert_eq!(specs[0].baseline.as_deref(), Some("sleep 0"));
        assert_eq!(specs[1].baseline.as_deref(), Some("true 0"));
    }

    #[test]
    fn a_scan_expands_every_value() {
        let mut r = req(&["sleep {t} ::: sleep 0"]);
        r.scan = Some(Scan::parse(&["t".into(), "1".into(), "7".into()], 3).unwrap());
        let specs = expand(&r).unwrap();
        let ids: Vec<&str> = specs.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["cmd.sleep/t=1", "cmd.sleep/t=4", "cmd.sleep/t=7"]);
        assert_eq!(specs[1].run.argv, ["sleep", "4"]);
        assert_eq!(specs[1].params()["t"], 4);
        r.words = vec!["sleep 1".into()];
        assert!(expand(&r).unwrap_err().contains("{t}"));
    }

    #[test]
    fn bad_requests_are_refused_before_running() {
        let e = expand(&req(&["opcost-no-such-program 1"])).unwrap_err();
        assert!(
            e.contains("command not found: opcost-no-such-program"),
            "{e}"
        );
        assert!(expand(&req(&["echo 'open"])).is_err());
        let mut r = req(&["true"]);
        r.input = Some("/nonexistent/input".into());
        assert!(expand(&r).unwrap_err().contains("--input"));
        assert!(
            expand(&req(&["true", "true"]))
                .unwrap_err()
                .contains("--name")
        );
        assert!(Scan::parse(&["n".into(), "5".into(), "1".into()], 1).is_err());
    }

    #[test]
    fn hooks_take_the_scan_value_and_are_checked_like_commands() {
        let mut r = req(&["sleep {t}"]);
        r.scan = Some(Scan::parse(&["t".into(), "0".into(), "1".into()], 1).unwrap());
        r.hooks.prepare = Some("touch /tmp/x{t}".into());
        r.hooks.cleanup = Some("true".into());
        let specs = expand(&r).unwrap();
        let p = specs[1].hooks.prepare.as_ref().unwrap();
        assert_eq!(p.run.argv, ["touch", "/tmp/x1"]);
        assert_eq!(p.flag, "--prepare");
        assert!(specs[1].hooks.setup.is_none());
        assert_eq!(specs[0].hooks.details()["cleanup"], "true");
        r.hooks.prepare = Some("opcost-no-such-prepare".into());
        let e = expand(&r).unwrap_err();
        assert!(
            e.contains("--prepare: command not found: opcost-no-such-prepare"),
            "{e}"
        );
        r.hooks.prepare = Some("  ".into());
        assert!(
            expand(&r)
                .unwrap_err()
                .contains("--prepare: an empty command")
        );
    }

    #[test]
    fn the_working_directory_must_exist_and_places_relative_programs() {
        let dir = tempfile::tempdir().unwrap();
        let mut r = req(&["./tool"]);
        r.cwd = Some(dir.path().join("missing"));
        assert!(expand(&r).unwrap_err().contains("no such directory"));
        let file = dir.path().join("file");
        std::fs::write(&file, "").unwrap();
        r.cwd = Some(file);
        assert!(expand(&r).unwrap_err().contains("not a directory"));
        r.cwd = Some(dir.path().to_path_buf());
        assert!(
            expand(&r)
                .unwrap_err()
                .contains("command not found: ./tool")
        );
        let tool = dir.path().join("tool");
        std::fs::write(&tool, "#!/bin/sh\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
        let specs = expand(&r).unwrap();
        assert_eq!(specs[0].run.cwd.as_deref(), Some(dir.path()));
    }

    #[test]
    fn names_are_id_safe() {
        assert_eq!(sanitize("./a b/c.py --x=1"), "a_b_c.py_--x_1");
        assert_eq!(
            default_name("/usr/bin/python3 m.py {n}", None),
            "python3_m.py_n"
        );
        let s = Scan::parse(&["n".into(), "1".into(), "2".into()], 1).unwrap();
        assert_eq!(default_name("./loop {n}", Some(&s)), "loop");
    }
}
