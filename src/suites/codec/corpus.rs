//! Deterministic generated inputs: the same bytes on every machine and every
//! run (seeded), so ratios can be compared across machines and versions.
//!
//! Each kind stands for a family of real data with its own redundancy:
//! JSON records (repetitive keys), English-like text (a Zipf vocabulary),
//! a service log (timestamps and repeated fields), an executable-like
//! binary (code with skewed opcodes, pointer tables, symbol strings and
//! padding), random bytes (incompressible) and an already-compressed file
//! (gzip of text, nearly incompressible but not random to a codec).

use std::io::Write;

/// The kinds of generated input, in run order.
pub const KINDS: [Kind; 6] = [
    Kind::Json,
    Kind::Text,
    Kind::Log,
    Kind::Binary,
    Kind::Random,
    Kind::Compressed,
];

/// A kind of generated input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// JSON records, one object per line.
    Json,
    /// English-like prose from a Zipf-distributed vocabulary.
    Text,
    /// A service log: timestamp, level, thread, request line, status, timing.
    Log,
    /// An executable-like mix: code, pointer tables, symbol strings, padding.
    Binary,
    /// Uniformly random bytes.
    Random,
    /// gzip output of English-like text (an already compressed file).
    Compressed,
}

/// Seed of every generator: the corpora never change between runs.
const SEED: u64 = 0x6f70_636f_7374;

/// Common English words, most frequent first (the Zipf ranks of the text).
const WORDS: &[&str] = &[
    "the",
    "of",
    "and",
    "to",
    "a",
    "in",
    "is",
    "it",
    "that",
    "was",
    "for",
    "on",
    "are",
    "as",
    "with",
    "his",
    "they",
    "at",
    "be",
    "this",
    "from",
    "have",
    "or",
    "by",
    "one",
    "had",
    "not",
    "but",
    "what",
    "all",
    "were",
    "when",
    "we",
    "there",
    "can",
    "an",
    "your",
    "which",
    "their",
    "said",
    "if",
    "do",
    "will",
    "each",
    "about",
    "how",
    "up",
    "out",
    "them",
    "then",
    "she",
    "many",
    "some",
    "so",
    "these",
    "would",
    "other",
    "into",
    "has",
    "more",
    "her",
    "two",
    "like",
    "him",
    "see",
    "time",
    "could",
    "no",
    "make",
    "than",
    "first",
    "been",
    "its",
    "who",
    "now",
    "people",
    "my",
    "made",
    "over",
    "did",
    "down",
    "only",
    "way",
    "find",
    "use",
    "may",
    "water",
    "long",
    "little",
    "very",
    "after",
    "words",
    "called",
    "just",
    "where",
    "most",
    "know",
    "get",
    "through",
    "back",
    "much",
    "before",
    "go",
    "good",
    "new",
    "write",
    "our",
    "used",
    "me",
    "man",
    "too",
    "any",
    "day",
    "same",
    "right",
    "look",
    "think",
    "also",
    "around",
    "another",
    "came",
    "come",
    "work",
    "three",
    "word",
    "must",
    "because",
    "does",
    "part",
    "even",
    "place",
    "well",
    "such",
    "here",
    "take",
    "why",
    "things",
    "help",
    "put",
    "years",
    "different",
    "away",
    "again",
    "off",
    "went",
    "old",
    "number",
    "great",
    "tell",
    "men",
    "say",
    "small",
    "every",
    "found",
    "still",
    "between",
    "name",
    "should",
    "home",
    "big",
    "give",
    "air",
    "line",
    "set",
    "own",
    "under",
    "read",
    "last",
    "never",
    "us",
    "left",
    "end",
    "along",
    "while",
    "might",
    "next",
    "sound",
    "below",
    "saw",
    "something",
    "thought",
    "both",
    "few",
    "those",
    "always",
    "looked",
    "show",
    "large",
    "often",
    "together",
    "asked",
    "house",
    "world",
    "going",
    "want",
    "school",
    "important",
    "until",
    "form",
    "food",
    "keep",
    "children",
    "feet",
    "land",
    "side",
    "without",
    "boy",
    "once",
    "animals",
    "life",
    "enough",
    "took",
    "sometimes",
    "four",
    "head",
    "above",
    "kind",
    "began",
    "almost",
    "live",
    "page",
    "got",
    "earth",
    "need",
    "far",
    "hand",
    "high",
    "year",
    "mother",
    "light",
    "country",
    "father",
    "let",
    "night",
    "following",
    "picture",
    "being",
    "study",
    "second",
    "eyes",
    "soon",
    "times",
    "story",
    "boys",
    "since",
    "white",
    "days",
    "paper",
    "hard",
    "near",
    "sentence",
    "better",
    "best",
    "across",
    "during",
    "today",
    "others",
    "however",
    "sure",
    "means",
    "knew",
    "try",
    "told",
    "young",
    "miles",
    "sun",
    "ways",
    "thing",
    "whole",
    "hear",
    "example",
    "heard",
    "several",
    "change",
    "answer",
    "room",
    "sea",
    "against",
    "top",
    "turned",
    "learn",
    "point",
    "city",
    "play",
    "toward",
    "five",
    "using",
    "himself",
    "usually",
    "machine",
    "memory",
    "system",
    "river",
    "mountain",
    "question",
    "measure",
];

const FIRST: &[&str] = &[
    "Ada", "Alan", "Barbara", "Claude", "Donald", "Edsger", "Frances", "Grace", "Hedy", "John",
    "Ken", "Linus", "Margaret", "Niklaus", "Radia", "Sophie", "Tim", "Vint",
];
const LAST: &[&str] = &[
    "Lovelace",
    "Turing",
    "Liskov",
    "Shannon",
    "Knuth",
    "Dijkstra",
    "Allen",
    "Hopper",
    "Lamarr",
    "McCarthy",
    "Thompson",
    "Torvalds",
    "Hamilton",
    "Wirth",
    "Perlman",
    "Wilson",
    "Berners-Lee",
    "Cerf",
];
const CITIES: &[&str] = &[
    "Amsterdam",
    "Berlin",
    "Lisbon",
    "Madrid",
    "Oslo",
    "Paris",
    "Prague",
    "Rome",
    "Vienna",
    "Zurich",
];
const TAGS: &[&str] = &[
    "admin", "beta", "customer", "staff", "trial", "vip", "partner", "legacy",
];
const PATHS: &[&str] = &[
    "/api/v1/users",
    "/api/v1/orders",
    "/api/v1/items",
    "/static/app.js",
    "/static/style.css",
    "/login",
    "/health",
    "/api/v2/search",
];
const METHODS: &[(&str, u32)] = &[("GET", 70), ("POST", 20), ("PUT", 6), ("DELETE", 4)];
const STATUSES: &[(u32, u32)] = &[(200, 80), (201, 5), (304, 6), (404, 5), (500, 2), (503, 2)];
const LEVELS: &[(&str, u32)] = &[("INFO", 85), ("WARN", 10), ("ERROR", 3), ("DEBUG", 2)];
const AGENTS: &[&str] = &[
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_6) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15",
    "curl/8.5.0",
    "python-requests/2.32.3",
];
/// Frequent x86-64 opcode bytes with rough weights (mov, lea, call, jcc, push...).
const OPCODES: &[(u8, u32)] = &[
    (0x89, 20),
    (0x8b, 20),
    (0x8d, 8),
    (0xe8, 8),
    (0x74, 5),
    (0x75, 5),
    (0x0f, 6),
    (0x83, 8),
    (0x85, 4),
    (0x31, 3),
    (0x50, 2),
    (0x53, 2),
    (0x55, 2),
    (0x5b, 2),
    (0x5d, 2),
    (0xc3, 3),
    (0xeb, 3),
    (0xff, 3),
    (0x39, 3),
    (0x01, 2),
    (0x29, 2),
    (0xc7, 3),
];
/// Pieces of symbol names.
const SYMBOL_PARTS: &[&str] = &[
    "init", "get", "set", "buffer", "read", "write", "alloc", "free", "lock", "unlock", "handle",
    "event", "table", "hash", "insert", "lookup", "node", "list", "parse", "emit",
];

/// `len` bytes of the given kind, the same on every call.
pub fn generate(kind: Kind, len: usize) -> Vec<u8> {
    let mut rng = fastrand::Rng::with_seed(SEED ^ kind as u64);
    let mut out = Vec::with_capacity(len + 4096);
    match kind {
        Kind::Json => fill(&mut out, len, |o, i| json_record(&mut rng, o, i)),
        Kind::Text => {
            let zipf = Zipf::new(WORDS.len());
            fill(&mut out, len, |o, _| paragraph(&mut rng, &zipf, o))
        }
        Kind::Log => {
            let mut ms: u64 = 1_795_000_000_000;
            fill(&mut out, len, |o, _| log_line(&mut rng, &mut ms, o))
        }
        Kind::Binary => {
            let mut base: u64 = 0x0040_1000;
            fill(&mut out, len, |o, _| binary_chunk(&mut rng, &mut base, o))
        }
        Kind::Random => {
            out.resize(len, 0);
            rng.fill(&mut out);
        }
        Kind::Compressed => {
            let zipf = Zipf::new(WORDS.len());
            fill(&mut out, len, |o, _| {
                let mut text = Vec::new();
                for _ in 0..64 {
                    paragraph(&mut rng, &zipf, &mut text);
                }
                gzip_member(&text, o)
            })
        }
    }
    out.truncate(len);
    out
}

/// Calls `step` (with a counter) until `out` holds at least `len` bytes.
fn fill(out: &mut Vec<u8>, len: usize, mut step: impl FnMut(&mut Vec<u8>, u64)) {
    let mut i = 0;
    while out.len() < len {
        step(out, i);
        i += 1;
    }
}

/// Picks from `items` with the given integer weights.
fn weighted<T: Copy>(rng: &mut fastrand::Rng, items: &[(T, u32)]) -> T {
    let total: u32 = items.iter().map(|(_, w)| w).sum();
    let mut r = rng.u32(0..total.max(1));
    for &(item, w) in items {
        if r < w {
            return item;
        }
        r -= w;
    }
    items[0].0
}

/// Ranks drawn with probability proportional to 1 / (rank + 1).
struct Zipf {
    cumulative: Vec<f64>,
}

impl Zipf {
    fn new(n: usize) -> Zipf {
        let mut acc = 0.0;
        let cumulative = (0..n)
            .map(|r| {
                acc += 1.0 / (r as f64 + 1.0);
                acc
            })
            .collect();
        Zipf { cumulative }
    }

    fn sample(&self, rng: &mut fastrand::Rng) -> usize {
        let total = self.cumulative.last().copied().unwrap_or(1.0);
        let x = rng.f64() * total;
        self.cumulative
            .partition_point(|&c| c < x)
            .min(self.cumulative.len() - 1)
    }
}

fn json_record(rng: &mut fastrand::Rng, out: &mut Vec<u8>, id: u64) {
    let first = FIRST[rng.usize(..FIRST.len())];
    let last = LAST[rng.usize(..LAST.len())];
    let tags: Vec<String> = (0..rng.usize(0..4))
        .map(|_| format!("\"{}\"", TAGS[rng.usize(..TAGS.len())]))
        .collect();
    let _ = writeln!(
        out,
        "{{\"id\":{},\"name\":\"{first} {last}\",\"email\":\"{}.{}@example.com\",\"age\":{},\"active\":{},\"balance\":{}.{:02},\"city\":\"{}\",\"tags\":[{}],\"created\":\"2026-{:02}-{:02}T{:02}:{:02}:{:02}Z\"}}",
        100_000 + id,
        first.to_lowercase(),
        last.to_lowercase(),
        rng.u32(18..90),
        rng.bool(),
        rng.u32(0..100_000),
        rng.u32(0..100),
        CITIES[rng.usize(..CITIES.len())],
        tags.join(","),
        rng.u32(1..13),
        rng.u32(1..29),
        rng.u32(0..24),
        rng.u32(0..60),
        rng.u32(0..60),
    );
}

fn paragraph(rng: &mut fastrand::Rng, zipf: &Zipf, out: &mut Vec<u8>) {
    for s in 0..rng.usize(3..8) {
        if s > 0 {
            out.push(b' ');
        }
        let n = rng.usize(5..21);
        for w in 0..n {
            let word = WORDS[zipf.sample(rng)];
            if w == 0 {
                let mut c = word.chars();
                if let Some(f) = c.next() {
                    out.extend(f.to_uppercase().to_string().bytes());
                    out.extend(c.as_str().bytes());
                }
            } else {
                out.push(b' ');
                out.extend(word.bytes());
            }
            if w + 1 < n && rng.u32(0..12) == 0 {
                out.push(b',');
            }
        }
        out.push(if rng.u32(0..10) == 0 { b'?' } else { b'.' });
    }
    out.extend(b"\n\n");
}

fn log_line(rng: &mut fastrand::Rng, ms: &mut u64, out: &mut Vec<u8>) {
    *ms += rng.u64(0..40);
    let secs = (*ms / 1000) % 86_400;
    let _ = writeln!(
        out,
        "2026-11-23T{:02}:{:02}:{:02}.{:03}Z {:<5} [worker-{}] {} {}/{} {} {}B {}.{}ms client=10.0.{}.{} ua=\"{}\"",
        secs / 3600,
        secs / 60 % 60,
        secs % 60,
        *ms % 1000,
        weighted(rng, LEVELS),
        rng.u32(1..9),
        weighted(rng, METHODS),
        PATHS[rng.usize(..PATHS.len())],
        rng.u32(1..50_000),
        weighted(rng, STATUSES),
        rng.u32(100..20_000),
        rng.u32(0..200),
        rng.u32(0..10),
        rng.u32(0..8),
        rng.u32(1..255),
        AGENTS[rng.usize(..AGENTS.len())],
    );
}

/// One 4 KiB-ish section of the executable-like mix: mostly code, then
/// pointer and integer tables, symbol strings, or zero padding.
fn binary_chunk(rng: &mut fastrand::Rng, base: &mut u64, out: &mut Vec<u8>) {
    const CHUNK: usize = 4096;
    let end = out.len() + CHUNK;
    match rng.u32(0..20) {
        0..12 => {
            while out.len() < end {
                if rng.bool() {
                    out.push(0x48); // REX.W
                }
                let op = weighted(rng, OPCODES);
                out.push(op);
                match op {
                    0xe8 | 0xeb | 0x74 | 0x75 => {
                        // Relative displacement: small, signed.
                        let d = rng.i32(-4096..4096);
                        if op == 0xe8 {
                            out.extend(d.to_le_bytes());
                        } else {
                            out.push(d as u8);
                        }
                    }
                    0x50..=0x5d | 0xc3 => {}
                    _ => {
                        out.push(0xc0 | rng.u8(0..64)); // ModRM
                        if rng.u32(0..3) == 0 {
                            out.extend(rng.i32(-256..256).to_le_bytes());
                        }
                    }
                }
            }
        }
        12..15 => {
            while out.len() < end {
                *base += 8 * rng.u64(1..16);
                out.extend(base.to_le_bytes());
                out.extend(rng.u32(0..1024).to_le_bytes());
                out.extend(0u32.to_le_bytes());
            }
        }
        15..18 => {
            while out.len() < end {
                for p in 0..rng.usize(2..5) {
                    if p > 0 {
                        out.push(b'_');
                    }
                    out.extend(SYMBOL_PARTS[rng.usize(..SYMBOL_PARTS.len())].bytes());
                }
                out.push(0);
            }
        }
        _ => out.resize(end, 0),
    }
}

/// Appends `data` as one gzip member (level 6, what `gzip` writes).
fn gzip_member(data: &[u8], out: &mut Vec<u8>) {
    let mut e = flate2::write::GzEncoder::new(out, flate2::Compression::default());
    // Writing to a Vec cannot fail.
    let _ = e.write_all(data);
    let _ = e.finish();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn corpora_have_the_asked_size_and_never_change() {
        for kind in KINDS {
            let a = generate(kind, 40 * 1024);
            assert_eq!(a.len(), 40 * 1024, "{kind:?}");
            assert_eq!(a, generate(kind, 40 * 1024), "{kind:?}");
            // A longer corpus starts with the shorter one.
            assert_eq!(&generate(kind, 100 * 1024)[..a.len()], &a[..], "{kind:?}");
        }
    }

    #[test]
    fn text_kinds_are_readable_and_redundant() {
        let json = generate(Kind::Json, 10_000);
        let first = json.split(|&b| b == b'\n').next().unwrap();
        let v: serde_json::Value = serde_json::from_slice(first).expect("a JSON record");
        assert!(v["id"].is_u64() && v["name"].is_string());
        let text = String::from_utf8(generate(Kind::Text, 10_000)).unwrap();
        assert!(text.contains(" the ") && text.contains(". "));
        let log = String::from_utf8(generate(Kind::Log, 10_000)).unwrap();
        assert!(log.starts_with("2026-11-23T") && log.contains(" ua=\""));
        let packed = generate(Kind::Compressed, 10_000);
        assert_eq!(&packed[..2], &[0x1f, 0x8b], "a gzip header");
    }
}
