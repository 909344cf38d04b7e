//! The run's own settings that move a cost: the environment variables
//! that change what the C library, the loader, the allocators and the
//! crypto and OpenMP runtimes do, the cgroup's CPU, CPU set and memory
//! limits, the CPUs the process may use, its scheduling policy and nice
//! value, and each CPU's governor and energy-performance preference.
//!
//! Why: the same command with `GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX2,...`
//! makes glibc's 8 KiB copy 1.6 to 1.9 times faster or slower, and
//! nothing else in the host description changes; `compare`, `trend` and
//! `fleet` can only name what was recorded.
//!
//! The environment is read through a strict allow-list ([`ENV_NAMES`],
//! [`ENV_PREFIXES`], the OpenSSL capability masks): nothing else of it is
//! kept, and a name or value that looks secret ([`looks_secret`]) is
//! dropped even when the list would take it. The files are read under a
//! root directory standing for `/`, so every reader is tested on a tree of
//! fixed files.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::parse;
use super::reader::{CPU, Reader};
use super::topology::cpu_list;

/// The environment variables recorded by their exact name: the glibc
/// tunables, the dynamic loader's, jemalloc's configuration, the locale
/// and the time zone (the text and time benchmarks depend on them).
pub const ENV_NAMES: &[&str] = &[
    "GLIBC_TUNABLES",
    "LD_PRELOAD",
    "LD_LIBRARY_PATH",
    "LD_BIND_NOW",
    "LD_BIND_NOT",
    "LD_AUDIT",
    "LD_HWCAP_MASK",
    "LD_DYNAMIC_WEAK",
    "MALLOC_CONF",
    "_RJEM_MALLOC_CONF",
    "JE_MALLOC_CONF",
    "LANG",
    "LC_ALL",
    "TZ",
];

/// The environment variables recorded by their prefix: glibc's malloc
/// (`MALLOC_ARENA_MAX`, `MALLOC_TOP_PAD_`...), tcmalloc's and mimalloc's
/// options, the OpenMP runtimes (GNU, LLVM/Intel) and the locale
/// categories.
pub const ENV_PREFIXES: &[&str] = &[
    "MALLOC_",
    "TCMALLOC_",
    "MIMALLOC_",
    "OMP_",
    "GOMP_",
    "KMP_",
    "LC_",
];

/// Words that make a variable's name look secret (compared without case):
/// such a variable is never recorded, whatever list takes it.
const SECRET_WORDS: &[&str] = &[
    "SECRET",
    "TOKEN",
    "PASSWORD",
    "PASSWD",
    "PASSPHRASE",
    "PASS",
    "KEY",
    "CREDENTIAL",
    "AUTH",
    "COOKIE",
    "SESSION",
    "PRIVATE",
    "SIGNATURE",
];

/// The longest value kept, in bytes; longer ones are cut and marked `…`.
const MAX_VALUE: usize = 2048;

/// The run's settings that move a cost (see the module doc). A document
/// older than them has none, which reads as unknown, not as unset.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Settings {
    /// The environment variables of the allow-list that were set, name →
    /// value; `None` when not recorded (older documents).
    pub env: Option<BTreeMap<String, String>>,
    /// The wrapper command the run's processes started under (`opcost ab
    /// --b-wrap 'nice -n 10'`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wrapper: Option<String>,
    /// The CPU the run was pinned to (`--cpu`, `opcost ab --b-cpu`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pinned_cpu: Option<usize>,
    /// The process's cgroup (v2 path, or the v1 cpu controller's).
    pub cgroup: Option<String>,
    /// The tightest CPU bandwidth limit on the cgroup's path, as cgroup v2
    /// writes it (`200000 100000`: two CPUs' worth; `max 100000`: none).
    pub cpu_max: Option<String>,
    /// The CPUs the cgroup's CPU set allows (`cpuset.cpus.effective`).
    pub cpuset: Option<String>,
    /// The tightest memory limit on the cgroup's path, bytes, or `max`.
    pub memory_max: Option<String>,
    /// The CPUs this process may run on (its affinity mask, `0-3`).
    pub allowed_cpus: Option<String>,
    /// The scheduling policy (`SCHED_OTHER`, `SCHED_FIFO`, `SCHED_BATCH`...).
    pub policy: Option<String>,
    /// The nice value.
    pub nice: Option<i32>,
    /// Each cpufreq governor in use → the CPUs using it (`0-7`).
    pub governors: BTreeMap<String, String>,
    /// Each energy-performance preference in use → the CPUs using it.
    pub epp: BTreeMap<String, String>,
}

/// A setting that differs between two runs: its name and the value of
/// each (`unset` for an environment variable one of them did not have).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SettingChange {
    /// The setting (`GLIBC_TUNABLES`, `cgroup cpu.max`, `nice`...).
    pub name: String,
    /// Its value in the first run (A, the earlier one).
    pub before: String,
    /// Its value in the second run (B, the later one).
    pub after: String,
}

/// True for an environment variable of the allow-list ([`ENV_NAMES`],
/// [`ENV_PREFIXES`], or `OPENSSL_…cap`, OpenSSL's CPU capability masks).
pub fn env_allowed(name: &str) -> bool {
    ENV_NAMES.contains(&name)
        || ENV_PREFIXES.iter().any(|p| name.starts_with(p))
        || (name.starts_with("OPENSSL_") && name.ends_with("cap"))
}

/// True for a variable whose name or value looks like a secret: a name
/// with one of [`SECRET_WORDS`] in it, or a value holding a URL with a
/// user and password (`scheme://user:pass@host`).
pub fn looks_secret(name: &str, value: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    if SECRET_WORDS.iter().any(|w| upper.contains(w)) {
        return true;
    }
    value.split("://").skip(1).any(|rest| {
        let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
        authority
            .rsplit_once('@')
            .is_some_and(|(user, _)| user.contains(':'))
    })
}

/// The variables of `vars` that are recorded: allowed, not secret-looking,
/// values cut at [`MAX_VALUE`] bytes.
pub fn filter_env<I, K, V>(vars: I) -> BTreeMap<String, String>
where
    I: IntoIterator<Item = (K, V)>,
    K: AsRef<str>,
    V: AsRef<str>,
{
    vars.into_iter()
        .filter(|(k, v)| env_allowed(k.as_ref()) && !looks_secret(k.as_ref(), v.as_ref()))
        .map(|(k, v)| (k.as_ref().to_string(), cut(v.as_ref())))
        .collect()
}

/// `v` cut at [`MAX_VALUE`] bytes (on a character boundary), marked `…`.
fn cut(v: &str) -> String {
    if v.len() <= MAX_VALUE {
        return v.to_string();
    }
    let mut end = MAX_VALUE;
    while !v.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &v[..end])
}

/// A command line with the value of each secret-looking `NAME=value` word
/// ([`looks_secret`]) replaced by `…`, for recording a wrapper or a label.
pub fn redact_command(cmd: &str) -> String {
    cmd.split(' ')
        .map(|w| match w.split_once('=') {
            Some((k, v)) if looks_secret(k, v) => format!("{k}=…"),
            _ => w.to_string(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

impl Settings {
    /// This process's settings: the files under `/` and its environment.
    pub fn detect() -> Settings {
        let env = std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)));
        Settings::read_at(Path::new("/"), env)
    }

    /// The settings the files under `root` (standing for `/`: its
    /// `proc/self` is the process read) and the environment `vars` give.
    pub fn read_at<I, K, V>(root: &Path, vars: I) -> Settings
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<str>,
        V: AsRef<str>,
    {
        let r = Reader { root };
        let mut s = Settings {
            env: Some(filter_env(vars)),
            ..Settings::default()
        };
        if let Some(text) = r.text("proc/self/status") {
            s.allowed_cpus = text
                .lines()
                .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
                .map(|v| v.trim().to_string());
        }
        if let Some((policy, nice)) = r
            .text("proc/self/stat")
            .as_deref()
            .and_then(policy_and_nice)
        {
            s.policy = Some(policy);
            s.nice = Some(nice);
        }
        if let Some(text) = r.text("proc/self/cgroup") {
            read_cgroup(&r, &text, &mut s);
        }
        s.governors = per_cpu(&r, "cpufreq/scaling_governor");
        s.epp = per_cpu(&r, "cpufreq/energy_performance_preference");
        s
    }

    /// These settings as one side of `opcost ab` had them: the variables
    /// `env` set over this process's (those the allow-list takes), the
    /// wrapper (secret-looking values cut out) and the pinned CPU.
    pub fn for_side(
        &self,
        env: &[(String, String)],
        wrapper: Option<&str>,
        cpu: Option<usize>,
    ) -> Settings {
        let mut s = self.clone();
        if let Some(e) = &mut s.env {
            e.extend(filter_env(env.iter().map(|(k, v)| (k, v))));
        }
        s.wrapper = wrapper.map(redact_command);
        s.pinned_cpu = cpu;
        s
    }

    /// True when the document recorded its settings (newer than them).
    pub fn recorded(&self) -> bool {
        self.env.is_some()
    }

    /// The recorded environment in one line, `NAME=value` by name, or
    /// `none`; `?` when not recorded.
    pub fn env_text(&self) -> String {
        match &self.env {
            None => "?".into(),
            Some(e) if e.is_empty() => "none".into(),
            Some(e) => e
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(" "),
        }
    }

    /// The recorded variables that make hosts of another kind for the
    /// fleet view, `NAME=value` by name: all but the locale, the time zone
    /// and `LD_LIBRARY_PATH`, which differ between hosts (and build
    /// tools) for reasons of their own; empty when none or not recorded.
    pub fn env_key(&self) -> String {
        let Some(e) = &self.env else {
            return String::new();
        };
        e.iter()
            .filter(|(k, _)| {
                !(k.starts_with("LC_") || ["LANG", "TZ", "LD_LIBRARY_PATH"].contains(&k.as_str()))
            })
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The settings as (name, value) facts for the fleet's and the
    /// trend's comparisons of host descriptions; none for a document that
    /// did not record them, `?` for what could not be read.
    pub fn facts(&self) -> Vec<(String, String)> {
        if !self.recorded() {
            return Vec::new();
        }
        let s = |v: &Option<String>| v.clone().unwrap_or_else(|| "?".into());
        let mut out = vec![
            ("environment".to_string(), self.env_text()),
            (
                "wrapper".to_string(),
                self.wrapper.clone().unwrap_or_else(|| "none".into()),
            ),
            (
                "pinned CPU".to_string(),
                self.pinned_cpu.map_or("none".into(), |c| c.to_string()),
            ),
            ("cgroup cpu.max".to_string(), s(&self.cpu_max)),
            ("cgroup cpuset".to_string(), s(&self.cpuset)),
            ("cgroup memory.max".to_string(), s(&self.memory_max)),
            ("allowed CPUs".to_string(), s(&self.allowed_cpus)),
            ("scheduling".to_string(), self.scheduling_text()),
        ];
        if !self.governors.is_empty() {
            out.push(("governor per CPU".into(), per_cpu_text(&self.governors)));
        }
        if !self.epp.is_empty() {
            out.push(("EPP per CPU".into(), per_cpu_text(&self.epp)));
        }
        out
    }

    /// The policy and nice value in words: `SCHED_OTHER, nice 0`.
    pub fn scheduling_text(&self) -> String {
        format!(
            "{}, nice {}",
            self.policy.as_deref().unwrap_or("?"),
            self.nice.map_or("?".into(), |n| n.to_string())
        )
    }

    /// The rows of the host description's settings section: (name, value).
    pub fn rows(&self) -> Vec<(String, String)> {
        if !self.recorded() {
            return vec![("recorded".into(), "no (a document older than them)".into())];
        }
        let mut out: Vec<(String, String)> = match &self.env {
            Some(e) if !e.is_empty() => e.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            _ => vec![(
                "environment".into(),
                "none of the recorded variables set".into(),
            )],
        };
        out.extend(
            self.facts()
                .into_iter()
                .filter(|(k, _)| k != "environment")
                .filter(|(k, v)| !((k == "wrapper" || k == "pinned CPU") && v == "none")),
        );
        out
    }

    /// What differs between `a`'s settings and `b`'s: each environment
    /// variable set in either with a different value (`unset` where one
    /// had none), then the other settings; empty when either did not
    /// record them.
    pub fn differences(a: &Settings, b: &Settings) -> Vec<SettingChange> {
        let (Some(ea), Some(eb)) = (&a.env, &b.env) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        let mut names: Vec<&String> = ea.keys().chain(eb.keys()).collect();
        names.sort();
        names.dedup();
        for n in names {
            let (va, vb) = (ea.get(n), eb.get(n));
            if va != vb {
                out.push(SettingChange {
                    name: n.clone(),
                    before: va.cloned().unwrap_or_else(|| "unset".into()),
                    after: vb.cloned().unwrap_or_else(|| "unset".into()),
                });
            }
        }
        let (fa, fb) = (a.facts(), b.facts());
        let value = |f: &[(String, String)], name: &str| {
            f.iter()
                .find(|(k, _)| k == name)
                .map_or_else(|| "?".to_string(), |(_, v)| v.clone())
        };
        let mut seen = Vec::new();
        for (name, _) in fa.iter().chain(&fb) {
            if name == "environment" || seen.contains(name) {
                continue;
            }
            seen.push(name.clone());
            let (va, vb) = (value(&fa, name), value(&fb, name));
            if va != vb {
                out.push(SettingChange {
                    name: name.clone(),
                    before: va,
                    after: vb,
                });
            }
        }
        out
    }
}

/// The variables of an environment as [`Settings::env_text`] writes it
/// (`NAME=value` words; a word that does not start a listed variable
/// belongs to the value before it, as in `LD_PRELOAD=a.so b.so`); `None`
/// for `?` (not recorded).
fn parse_env_text(text: &str) -> Option<BTreeMap<String, String>> {
    if text == "?" {
        return None;
    }
    let mut out: BTreeMap<String, String> = BTreeMap::new();
    let mut last: Option<String> = None;
    for word in text.split(' ').filter(|_| text != "none") {
        match word.split_once('=') {
            Some((k, v)) if env_allowed(k) => {
                out.insert(k.to_string(), v.to_string());
                last = Some(k.to_string());
            }
            _ => {
                if let Some(v) = last.as_ref().and_then(|k| out.get_mut(k)) {
                    v.push(' ');
                    v.push_str(word);
                }
            }
        }
    }
    Some(out)
}

/// What changed between two environments as [`Settings::env_text`] writes
/// them, variable by variable: `GLIBC_TUNABLES unset → glibc.cpu.hwcaps=-AVX2`
/// (`;`-separated); `None` when either is `?`.
pub fn env_text_changes(before: &str, after: &str) -> Option<String> {
    let (b, a) = (parse_env_text(before)?, parse_env_text(after)?);
    let mut names: Vec<&String> = b.keys().chain(a.keys()).collect();
    names.sort();
    names.dedup();
    let parts: Vec<String> = names
        .into_iter()
        .filter(|n| b.get(*n) != a.get(*n))
        .map(|n| {
            let v =
                |m: &BTreeMap<String, String>| m.get(n).cloned().unwrap_or_else(|| "unset".into());
            format!("{n} {} → {}", v(&b), v(&a))
        })
        .collect();
    Some(parts.join("; "))
}

impl std::fmt::Display for SettingChange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {} → {}", self.name, self.before, self.after)
    }
}

/// The scheduling policy and nice value from `/proc/self/stat` (fields 41
/// and 19, counted after the command name, which may hold spaces).
fn policy_and_nice(stat: &str) -> Option<(String, i32)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // `rest` starts at field 3 (the state).
    let nice: i32 = f.get(19 - 3)?.parse().ok()?;
    let policy: u32 = f.get(41 - 3)?.parse().ok()?;
    let name = match policy {
        0 => "SCHED_OTHER".to_string(),
        1 => "SCHED_FIFO".to_string(),
        2 => "SCHED_RR".to_string(),
        3 => "SCHED_BATCH".to_string(),
        5 => "SCHED_IDLE".to_string(),
        6 => "SCHED_DEADLINE".to_string(),
        n => format!("policy {n}"),
    };
    Some((name, nice))
}

/// Where the cgroup file systems are mounted, under the root.
const CGROUP: &str = "sys/fs/cgroup";

/// The cgroup limits of the process whose `/proc/self/cgroup` is `text`:
/// cgroup v2 when it lists the unified hierarchy (`0::/path`) and the
/// files are there, else the v1 cpu, cpuset and memory controllers.
fn read_cgroup(r: &Reader, text: &str, s: &mut Settings) {
    let mut v1: BTreeMap<&str, &str> = BTreeMap::new();
    let mut v2: Option<&str> = None;
    for line in text.lines() {
        let mut f = line.splitn(3, ':');
        let (Some(id), Some(ctrls), Some(path)) = (f.next(), f.next(), f.next()) else {
            continue;
        };
        if id == "0" && ctrls.is_empty() {
            v2 = Some(path);
        }
        for c in ctrls.split(',') {
            v1.insert(c, path);
        }
    }
    // The directories from the cgroup up to the hierarchy's root.
    let chain = |base: &str, path: &str| -> Vec<String> {
        let mut dirs = Vec::new();
        let mut p = path.trim_matches('/').to_string();
        loop {
            dirs.push(if p.is_empty() {
                base.to_string()
            } else {
                format!("{base}/{p}")
            });
            if p.is_empty() {
                break;
            }
            p = p
                .rsplit_once('/')
                .map_or(String::new(), |(a, _)| a.to_string());
        }
        dirs
    };
    if let Some(path) = v2 {
        let dirs = chain(CGROUP, path);
        let has_v2 = dirs
            .iter()
            .any(|d| r.exists(&format!("{d}/cgroup.controllers")))
            && dirs.iter().any(|d| {
                ["cpu.max", "memory.max", "cpuset.cpus.effective"]
                    .iter()
                    .any(|f| r.exists(&format!("{d}/{f}")))
            });
        if has_v2 {
            s.cgroup = Some(path.to_string());
            s.cpu_max = tightest(
                dirs.iter().filter_map(|d| r.text(&format!("{d}/cpu.max"))),
                cpu_share,
            );
            s.memory_max = tightest(
                dirs.iter()
                    .filter_map(|d| r.text(&format!("{d}/memory.max"))),
                |v| v.parse::<f64>().ok(),
            );
            s.cpuset = dirs
                .iter()
                .find_map(|d| r.text(&format!("{d}/cpuset.cpus.effective")));
            return;
        }
    }
    // cgroup v1: each controller has its own hierarchy.
    let v1_dirs = |ctrl: &str, mounts: &[&str]| -> Vec<String> {
        let Some(path) = v1.get(ctrl) else {
            return Vec::new();
        };
        mounts
            .iter()
            .map(|m| format!("{CGROUP}/{m}"))
            .find(|m| r.exists(m))
            .map_or_else(Vec::new, |base| chain(&base, path))
    };
    let cpu = v1_dirs("cpu", &["cpu", "cpu,cpuacct", "cpuacct,cpu"]);
    if !cpu.is_empty() {
        s.cgroup = v1.get("cpu").map(|p| p.to_string());
        s.cpu_max = tightest(
            cpu.iter().filter_map(|d| {
                let quota = r.signed(&format!("{d}/cpu.cfs_quota_us"))?;
                let period = r.int(&format!("{d}/cpu.cfs_period_us"))?;
                Some(if quota < 0 {
                    format!("max {period}")
                } else {
                    format!("{quota} {period}")
                })
            }),
            cpu_share,
        );
    }
    let mem = v1_dirs("memory", &["memory"]);
    s.memory_max = tightest(
        mem.iter().filter_map(|d| {
            let b = r.int(&format!("{d}/memory.limit_in_bytes"))?;
            // No limit reads as the largest page-aligned i64.
            Some(if b >= 1 << 62 {
                "max".to_string()
            } else {
                b.to_string()
            })
        }),
        |v| v.parse::<f64>().ok(),
    );
    s.cpuset = v1_dirs("cpuset", &["cpuset"])
        .iter()
        .find_map(|d| r.text(&format!("{d}/cpuset.effective_cpus")));
}

/// CPUs' worth of a `cpu.max` value (`200000 100000` → 2), `None` for `max`.
fn cpu_share(v: &str) -> Option<f64> {
    let mut f = v.split_whitespace();
    let quota: f64 = f.next()?.parse().ok()?;
    let period: f64 = f.next().unwrap_or("100000").parse().ok()?;
    (period > 0.0).then(|| quota / period)
}

/// Of the values along a cgroup's path, the one with the smallest limit
/// (`size` gives it; `None` is no limit), else the first (`max`).
fn tightest(
    values: impl Iterator<Item = String>,
    size: impl Fn(&str) -> Option<f64>,
) -> Option<String> {
    let all: Vec<String> = values.collect();
    all.iter()
        .filter_map(|v| Some((size(v)?, v)))
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, v)| v.clone())
        .or_else(|| all.first().cloned())
}

/// A per-CPU cpufreq file's values: value → the CPUs with it, as a list.
fn per_cpu(r: &Reader, file: &str) -> BTreeMap<String, String> {
    let mut by_value: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for name in r.entries(CPU) {
        let Some(n) = name
            .strip_prefix("cpu")
            .and_then(|n| n.parse::<usize>().ok())
        else {
            continue;
        };
        if let Some(v) = r.text(&format!("{CPU}/{name}/{file}")) {
            by_value.entry(v).or_default().push(n);
        }
    }
    by_value
        .into_iter()
        .map(|(v, mut cpus)| {
            cpus.sort_unstable();
            (v, cpu_list(&cpus))
        })
        .collect()
}

/// A per-CPU map in words: `performance` when one value holds for all
/// the CPUs read, else `performance on 0-3, powersave on 4-7`.
fn per_cpu_text(m: &BTreeMap<String, String>) -> String {
    if m.len() == 1 {
        return m.keys().next().cloned().unwrap_or_default();
    }
    let mut v: Vec<(&String, &String)> = m.iter().collect();
    v.sort_by_key(|(_, cpus)| parse::cpu_list(cpus).and_then(|c| c.first().copied()));
    v.iter()
        .map(|(val, cpus)| format!("{val} on {cpus}"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::sysfs::tests::tree;

    /// A `/proc/self/stat` line with nice `nice` and policy `policy`, its
    /// command name holding spaces and a parenthesis.
    fn stat(nice: i32, policy: u32) -> String {
        let mut f: Vec<String> = (3..=52).map(|i| format!("{i}")).collect();
        f[0] = "R".into();
        f[19 - 3] = nice.to_string();
        f[41 - 3] = policy.to_string();
        format!("4242 (a (weird) name) {}\n", f.join(" "))
    }

    #[test]
    fn only_the_listed_variables_are_kept_and_nothing_secret_looking() {
        let env = filter_env([
            ("GLIBC_TUNABLES", "glibc.cpu.hwcaps=-AVX2"),
            ("LD_PRELOAD", "/usr/lib/libjemalloc.so.2"),
            ("MALLOC_ARENA_MAX", "2"),
            ("OMP_NUM_THREADS", "4"),
            ("GOMP_SPINCOUNT", "0"),
            ("OPENSSL_ia32cap", "~0x200000200000000"),
            ("OPENSSL_CONF", "/etc/ssl/x.cnf"),
            ("HOME", "/root"),
            ("PATH", "/usr/bin"),
            ("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI"),
            ("PGPASSWORD", "hunter2"),
            ("GITHUB_TOKEN", "ghp_abc"),
            // Allowed by prefix, yet secret-looking: dropped.
            ("MALLOC_SECRET", "x"),
            ("OMP_AUTH_TOKEN", "y"),
            ("MALLOC_CONF", "background_thread:true"),
            ("LD_LIBRARY_PATH", "https://user:pw@example.com/lib"),
        ]);
        let names: Vec<&str> = env.keys().map(String::as_str).collect();
        assert_eq!(
            names,
            [
                "GLIBC_TUNABLES",
                "GOMP_SPINCOUNT",
                "LD_PRELOAD",
                "MALLOC_ARENA_MAX",
                "MALLOC_CONF",
                "OMP_NUM_THREADS",
                "OPENSSL_ia32cap",
            ]
        );
        assert_eq!(env["GLIBC_TUNABLES"], "glibc.cpu.hwcaps=-AVX2");
        let long = "x".repeat(MAX_VALUE + 10);
        let cut = filter_env([("LD_LIBRARY_PATH", long.as_str())]);
        assert!(cut["LD_LIBRARY_PATH"].ends_with('…'));
        assert!(cut["LD_LIBRARY_PATH"].len() < long.len());
    }

    #[test]
    fn secrets_in_a_wrapper_or_a_side_are_cut_out() {
        assert_eq!(
            redact_command("env PGPASSWORD=hunter2 API_TOKEN=t nice -n 5"),
            "env PGPASSWORD=… API_TOKEN=… nice -n 5"
        );
        let base = Settings::read_at(Path::new("/nonexistent"), [("LANG", "C.UTF-8")]);
        let side = base.for_side(
            &[
                (
                    "GLIBC_TUNABLES".into(),
                    "glibc.malloc.tcache_count=0".into(),
                ),
                ("DB_PASSWORD".into(), "x".into()),
                ("UNLISTED".into(), "y".into()),
            ],
            Some("env AWS_SECRET_ACCESS_KEY=k numactl -m 0"),
            Some(3),
        );
        assert_eq!(
            side.env_text(),
            "GLIBC_TUNABLES=glibc.malloc.tcache_count=0 LANG=C.UTF-8"
        );
        assert_eq!(
            side.wrapper.as_deref(),
            Some("env AWS_SECRET_ACCESS_KEY=… numactl -m 0")
        );
        assert_eq!(side.pinned_cpu, Some(3));
    }

    #[test]
    fn a_cgroup_v2_tree_gives_the_tightest_limits_on_the_path() {
        let dir = tree(&[
            ("proc/self/cgroup", "0::/user.slice/job.scope\n"),
            (
                "proc/self/status",
                "Name:\topcost\nCpus_allowed:\t0f\nCpus_allowed_list:\t0-3\n",
            ),
            ("proc/self/stat", stat(5, 3).as_str()),
            ("sys/fs/cgroup/cgroup.controllers", "cpuset cpu memory"),
            ("sys/fs/cgroup/user.slice/cpu.max", "150000 100000"),
            ("sys/fs/cgroup/user.slice/memory.max", "8589934592"),
            ("sys/fs/cgroup/user.slice/job.scope/cpu.max", "max 100000"),
            ("sys/fs/cgroup/user.slice/job.scope/memory.max", "max"),
            (
                "sys/fs/cgroup/user.slice/job.scope/cpuset.cpus.effective",
                "0-3\n",
            ),
        ]);
        let s = Settings::read_at(dir.path(), std::iter::empty::<(&str, &str)>());
        assert_eq!(s.cgroup.as_deref(), Some("/user.slice/job.scope"));
        assert_eq!(s.cpu_max.as_deref(), Some("150000 100000"));
        assert_eq!(s.memory_max.as_deref(), Some("8589934592"));
        assert_eq!(s.cpuset.as_deref(), Some("0-3"));
        assert_eq!(s.allowed_cpus.as_deref(), Some("0-3"));
        assert_eq!(
            (s.policy.as_deref(), s.nice),
            (Some("SCHED_BATCH"), Some(5))
        );
        assert_eq!(s.scheduling_text(), "SCHED_BATCH, nice 5");
        assert_eq!(s.env_text(), "none");
        // No limit anywhere: the leaf's `max`.
        let free = tree(&[
            ("proc/self/cgroup", "0::/a\n"),
            ("sys/fs/cgroup/cgroup.controllers", "cpu memory"),
            ("sys/fs/cgroup/a/cpu.max", "max 100000"),
            ("sys/fs/cgroup/a/memory.max", "max"),
        ]);
        let s = Settings::read_at(free.path(), std::iter::empty::<(&str, &str)>());
        assert_eq!(
            (s.cpu_max.as_deref(), s.memory_max.as_deref()),
            (Some("max 100000"), Some("max"))
        );
    }

    #[test]
    fn a_cgroup_v1_tree_is_read_as_v2_would_say_it() {
        let dir = tree(&[
            (
                "proc/self/cgroup",
                "4:memory:/jobs/7\n3:cpuset:/\n1:cpu,cpuacct:/jobs/7\n0::/\n",
            ),
            ("sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "-1"),
            ("sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us", "100000"),
            ("sys/fs/cgroup/cpu,cpuacct/jobs/7/cpu.cfs_quota_us", "50000"),
            (
                "sys/fs/cgroup/cpu,cpuacct/jobs/7/cpu.cfs_period_us",
                "100000",
            ),
            (
                "sys/fs/cgroup/memory/memory.limit_in_bytes",
                "9223372036854771712",
            ),
            (
                "sys/fs/cgroup/memory/jobs/7/memory.limit_in_bytes",
                "9223372036854771712",
            ),
            ("sys/fs/cgroup/cpuset/cpuset.effective_cpus", "0-1"),
        ]);
        let s = Settings::read_at(dir.path(), std::iter::empty::<(&str, &str)>());
        assert_eq!(s.cgroup.as_deref(), Some("/jobs/7"));
        assert_eq!(s.cpu_max.as_deref(), Some("50000 100000"));
        assert_eq!(s.memory_max.as_deref(), Some("max"));
        assert_eq!(s.cpuset.as_deref(), Some("0-1"));
    }

    #[test]
    fn governors_and_epp_are_listed_per_value() {
        let gov = "cpufreq/scaling_governor";
        let epp = "cpufreq/energy_performance_preference";
        let dir = tree(&[
            (format!("{CPU}/cpu0/{gov}").as_str(), "performance"),
            (format!("{CPU}/cpu1/{gov}").as_str(), "performance"),
            (format!("{CPU}/cpu2/{gov}").as_str(), "powersave"),
            (format!("{CPU}/cpu10/{gov}").as_str(), "powersave"),
            (format!("{CPU}/cpu0/{epp}").as_str(), "performance"),
            (format!("{CPU}/cpu1/{epp}").as_str(), "performance"),
            (format!("{CPU}/cpufreq/boost").as_str(), "1"),
        ]);
        let s = Settings::read_at(dir.path(), std::iter::empty::<(&str, &str)>());
        assert_eq!(s.governors["performance"], "0-1");
        assert_eq!(s.governors["powersave"], "2,10");
        assert_eq!(
            per_cpu_text(&s.governors),
            "performance on 0-1, powersave on 2,10"
        );
        assert_eq!(per_cpu_text(&s.epp), "performance");
        let facts = s.facts();
        assert!(facts.contains(&("EPP per CPU".into(), "performance".into())));
        // Nothing readable: no per-CPU facts, unknown cgroup.
        let empty = Settings::read_at(Path::new("/nonexistent"), [("TZ", "UTC")]);
        assert!(empty.facts().iter().all(|(k, _)| !k.ends_with("per CPU")));
        assert!(
            empty
                .facts()
                .contains(&("cgroup cpu.max".into(), "?".into()))
        );
    }

    #[test]
    fn differences_name_each_variable_and_setting() {
        let a = Settings::read_at(Path::new("/nonexistent"), [("MALLOC_ARENA_MAX", "2")]);
        let mut b = a.for_side(
            &[("GLIBC_TUNABLES".into(), "glibc.cpu.hwcaps=-AVX2".into())],
            None,
            Some(1),
        );
        b.env.as_mut().unwrap().remove("MALLOC_ARENA_MAX");
        b.nice = Some(10);
        let d = Settings::differences(&a, &b);
        let text: Vec<String> = d.iter().map(ToString::to_string).collect();
        assert_eq!(
            text,
            [
                "GLIBC_TUNABLES unset → glibc.cpu.hwcaps=-AVX2",
                "MALLOC_ARENA_MAX 2 → unset",
                "pinned CPU none → 1",
                "scheduling ?, nice ? → ?, nice 10",
            ]
        );
        assert!(Settings::differences(&a, &a).is_empty());
        // A trend's change of the environment fact, variable by variable.
        let before = a.env_text();
        let after = b.env_text();
        assert_eq!(
            env_text_changes(&before, &after).as_deref(),
            Some("GLIBC_TUNABLES unset → glibc.cpu.hwcaps=-AVX2; MALLOC_ARENA_MAX 2 → unset")
        );
        assert_eq!(
            env_text_changes("none", "LD_PRELOAD=a.so b.so TZ=UTC").as_deref(),
            Some("LD_PRELOAD unset → a.so b.so; TZ unset → UTC")
        );
        assert_eq!(env_text_changes("?", "none"), None);
        // The fleet's key leaves out what differs between hosts anyway.
        let mut c = b.clone();
        let env = c.env.as_mut().unwrap();
        env.insert("LANG".into(), "de_DE.UTF-8".into());
        env.insert("LD_LIBRARY_PATH".into(), "/opt/lib".into());
        assert_eq!(c.env_key(), "GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX2");
        assert_eq!(Settings::default().env_key(), "");
        // A side that did not record them: nothing to say.
        assert!(Settings::differences(&Settings::default(), &b).is_empty());
    }

    #[test]
    fn an_older_host_without_settings_loads_and_says_so() {
        let h: super::super::Host =
            serde_json::from_str(r#"{"hostname":"old","kernel":{"release":"6.1"}}"#).unwrap();
        assert!(!h.settings.recorded());
        assert!(h.settings.facts().is_empty());
        assert_eq!(h.settings.env_text(), "?");
        assert!(h.render_text().contains("no (a document older than them)"));
        // A recorded one round-trips.
        let s = Settings::read_at(Path::new("/nonexistent"), [("OMP_NUM_THREADS", "8")]);
        let back: Settings = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
        assert_eq!(back, s);
    }

    #[test]
    fn this_process_has_recorded_settings() {
        let s = Settings::detect();
        assert!(s.recorded());
        assert!(s.allowed_cpus.is_some());
        assert!(s.env.unwrap().keys().all(|k| env_allowed(k)));
    }
}
