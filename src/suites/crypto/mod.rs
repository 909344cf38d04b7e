//! Crypto: how fast this machine encrypts, hashes, signs and agrees keys,
//! at the level `openssl speed` reports (E6's "AES MB/s").
//!
//! Bulk rows (bytes per second) at 64 B, 1 KiB and 16 KiB, because small
//! records cost differently: AES-128/256-GCM and ChaCha20-Poly1305 (TLS,
//! SSH), AES-128/256-CTR (SSH; AES-256 rounds are what disk encryption pays),
//! SHA-256, SHA-512, SHA-1, MD5 and BLAKE3. Public-key rows (operations per
//! second): Ed25519 sign/verify, X25519, ECDSA P-256 sign/verify, RSA-2048
//! sign/verify. The libraries (see [`ops`]) are the fastest this build can
//! reach: `ring` carries BoringSSL's assembly, which picks AES-NI, VAES,
//! the SHA extensions or Armv8 crypto at run time, as OpenSSL does.
//!
//! Every row checks its primitive before it is timed (a round trip, a
//! known answer, a signature that verifies); a wrong answer fails the row.
//! Each row records its library in details `impl` and the CPU flags open
//! to it in details `cpu_instructions`.

mod findings;
pub mod instructions;
pub mod libcrypto;
pub mod ops;

use std::collections::BTreeMap;

use instructions::{CpuCrypto, Needs};
use ops::{Cipher, Hash, PublicKey};

use super::bench::{FnBench, Looped, Suite};
use crate::harness::warnings::Warning;
use crate::harness::{Bench, Ctx, PrepareError, Unit};
use crate::host::Host;

/// The message sizes of the bulk rows, with their id labels.
pub const SIZES: [(usize, &str); 3] = [(64, "64B"), (1024, "1KiB"), (16 * 1024, "16KiB")];

/// The id of the AES-256-GCM benchmark at 16 KiB (kept from the first version).
pub const AES_ID: &str = "crypto.aes256gcm.encrypt/16KiB";
/// The id of the SHA-256 benchmark at 16 KiB (kept from the first version).
pub const SHA_ID: &str = "crypto.sha256/16KiB";

/// The crypto suite.
pub fn suite() -> Suite {
    Suite {
        name: "crypto",
        summary: "AES-GCM, ChaCha20-Poly1305, AES-CTR, SHA-2/SHA-1/MD5/BLAKE3 throughput and Ed25519, X25519, ECDSA, RSA operations per second",
        benches,
        findings: findings::findings,
    }
}

/// The id of a cipher row.
pub fn cipher_id(c: Cipher, size_label: &str) -> String {
    format!("crypto.{}.encrypt/{size_label}", c.id())
}

/// The id of a hash row.
pub fn hash_id(h: Hash, size_label: &str) -> String {
    format!("crypto.{}/{size_label}", h.id())
}

/// The id of a public-key row.
pub fn public_key_id(p: PublicKey) -> String {
    format!("crypto.{}", p.id())
}

/// What a cipher's speed hangs on.
fn cipher_needs(c: Cipher) -> Needs {
    match c {
        Cipher::ChaCha20Poly1305 => Needs::General,
        _ => Needs::Aes,
    }
}

/// What a hash's speed hangs on.
fn hash_needs(h: Hash) -> Needs {
    match h {
        Hash::Sha256 => Needs::Sha256,
        Hash::Sha1 => Needs::Sha1,
        Hash::Sha512 => Needs::Sha512,
        Hash::Md5 | Hash::Blake3 => Needs::General,
    }
}

/// The path a row takes: `cpu-instructions` when the CPU has the
/// dedicated instructions it needs, `portable` when it needs them and they
/// are missing, `general` when none exist for it.
fn path_name(cpu: &CpuCrypto, needs: Needs) -> &'static str {
    match needs {
        Needs::General => "general",
        // No x86 CPU in the table has SHA-512 rounds: vector code is its best path.
        Needs::Sha512 if cpu.x86 => "general",
        n if cpu.supports(n) => "cpu-instructions",
        _ => "portable",
    }
}

/// The parameters of a row of `len`-byte operations of `algorithm` (a
/// cipher or a hash), measured on the path `needs` takes on `cpu`.
fn sized_params(
    len: usize,
    algorithm: &str,
    cpu: &CpuCrypto,
    needs: Needs,
) -> BTreeMap<&'static str, serde_json::Value> {
    BTreeMap::from([
        ("bytes", len.into()),
        ("algorithm", algorithm.into()),
        ("implementation", path_name(cpu, needs).into()),
    ])
}

/// The warning a row carries when its instructions are missing.
fn missing_warning(cpu: &CpuCrypto, needs: Needs) -> Option<String> {
    let which = match needs {
        Needs::Aes if cpu.x86 => "AES-NI/CLMUL",
        Needs::Aes => "Armv8 AES/PMULL",
        Needs::Sha256 | Needs::Sha1 => "SHA",
        Needs::Sha512 | Needs::General => return None,
    };
    (path_name(cpu, needs) == "portable").then(|| Warning::NoCryptoInstructions(which).to_string())
}

/// Everything a row states about how it was measured.
struct Row {
    id: String,
    summary: String,
    unit: Unit,
    params: BTreeMap<&'static str, serde_json::Value>,
    /// The library that runs, decided where the row is prepared (only
    /// then is libcrypto opened, never in a process that runs no crypto row).
    library: Box<dyn Fn() -> String + Send + Sync>,
    cpu_instructions: String,
    warning: Option<String>,
    prepare: Box<dyn Fn() -> anyhow::Result<ops::Op> + Send + Sync>,
}

impl Row {
    fn into_bench(self) -> Box<dyn Bench> {
        let Row {
            prepare,
            warning,
            library,
            cpu_instructions,
            ..
        } = self;
        let mut b = FnBench::new(self.id, self.summary, self.unit, move |_ctx: &Ctx| {
            let op = prepare().map_err(|e| PrepareError::Fail(e.context("check before timing")))?;
            let details = serde_json::json!({
                "impl": library(),
                "cpu_instructions": cpu_instructions,
            });
            let mut l = Looped::new(op).with_details(details);
            if let Some(w) = &warning {
                l = l.warn(w.clone());
            }
            Ok(l.boxed())
        });
        // Small records are for a closer look: the whole-machine quick
        // profile keeps the 16 KiB rows and the public-key operations.
        let small = self
            .params
            .get("bytes")
            .and_then(serde_json::Value::as_u64)
            .is_some_and(|n| n < 16 * 1024);
        for (k, v) in self.params {
            b = b.param(k, v);
        }
        if small {
            b = b.on_request();
        }
        b.boxed()
    }
}

fn benches(host: &Host) -> Vec<Box<dyn Bench>> {
    let cpu = CpuCrypto::of(&host.cpu.arch, &host.cpu.flags);
    let mut rows = Vec::new();
    for c in Cipher::ALL {
        let needs = cipher_needs(c);
        for (len, label) in SIZES {
            rows.push(Row {
                id: cipher_id(c, label),
                summary: format!(
                    "{} encryption of a {label} message in place, fresh nonce each ({})",
                    c.title(),
                    c.libraries(len)
                ),
                unit: Unit::Throughput {
                    bytes_per_op: len as f64,
                },
                params: sized_params(len, c.title(), &cpu, needs),
                library: Box::new(move || c.library(len)),
                cpu_instructions: cpu.used_by(needs),
                warning: missing_warning(&cpu, needs),
                prepare: Box::new(move || c.prepare(len)),
            });
        }
    }
    for h in Hash::ALL {
        let needs = hash_needs(h);
        for (len, label) in SIZES {
            rows.push(Row {
                id: hash_id(h, label),
                summary: format!("{} of a {label} buffer ({})", h.title(), h.libraries()),
                unit: Unit::Throughput {
                    bytes_per_op: len as f64,
                },
                params: sized_params(len, h.title(), &cpu, needs),
                library: Box::new(move || h.library()),
                cpu_instructions: cpu.used_by(needs),
                warning: missing_warning(&cpu, needs),
                prepare: Box::new(move || h.prepare(len)),
            });
        }
    }
    for p in PublicKey::ALL {
        rows.push(Row {
            id: public_key_id(p),
            summary: format!("{} ({})", p.title(), p.libraries()),
            unit: Unit::Rate,
            params: BTreeMap::from([("algorithm", p.title().into())]),
            library: Box::new(move || p.library()),
            cpu_instructions: cpu.used_by(Needs::General),
            warning: None,
            prepare: Box::new(move || p.prepare()),
        });
    }
    rows.into_iter().map(Row::into_bench).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::Unit;

    #[test]
    fn the_first_versions_ids_are_kept() {
        assert_eq!(cipher_id(Cipher::Aes256Gcm, "16KiB"), AES_ID);
        assert_eq!(hash_id(Hash::Sha256, "16KiB"), SHA_ID);
        let ids: Vec<String> = benches(&Host::detect())
            .iter()
            .map(|b| b.id().to_string())
            .collect();
        assert!(ids.iter().any(|i| i == AES_ID) && ids.iter().any(|i| i == SHA_ID));
    }

    #[test]
    fn every_row_has_a_unit_of_its_kind_and_a_unique_id() {
        let b = benches(&Host::detect());
        assert_eq!(b.len(), 5 * 3 + 5 * 3 + 7);
        let mut ids: Vec<&str> = b.iter().map(|x| x.id()).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), b.len(), "ids are unique");
        for x in &b {
            assert!(x.id().starts_with("crypto."), "{}", x.id());
            match x.unit() {
                Unit::Throughput { bytes_per_op } => {
                    assert!(SIZES.iter().any(|&(n, _)| n as f64 == bytes_per_op));
                    assert!(x.params().contains_key("bytes"), "{}", x.id());
                }
                Unit::Rate => assert!(PublicKey::ALL.iter().any(|&p| public_key_id(p) == x.id())),
                other => panic!("{}: unexpected unit {other:?}", x.id()),
            }
        }
    }

    #[test]
    fn paths_follow_the_flags() {
        let with = CpuCrypto::of("x86_64", "aes pclmulqdq sha_ni avx2");
        let without = CpuCrypto::of("x86_64", "sse2 avx2");
        assert_eq!(path_name(&with, Needs::Aes), "cpu-instructions");
        assert_eq!(path_name(&without, Needs::Aes), "portable");
        assert_eq!(path_name(&without, Needs::General), "general");
        assert_eq!(path_name(&with, Needs::Sha512), "general");
        assert!(missing_warning(&with, Needs::Aes).is_none());
        let w = missing_warning(&without, Needs::Sha256).expect("a warning");
        assert!(w.contains("SHA"), "{w}");
    }

    #[test]
    fn every_primitive_passes_its_check_and_runs() {
        for c in Cipher::ALL {
            for (len, _) in SIZES {
                let mut op = c.prepare(len).unwrap_or_else(|e| panic!("{c:?}: {e:#}"));
                op();
            }
        }
        for h in Hash::ALL {
            let mut op = h.prepare(64).unwrap_or_else(|e| panic!("{h:?}: {e:#}"));
            op();
        }
        for p in PublicKey::ALL {
            let mut op = p.prepare().unwrap_or_else(|e| panic!("{p:?}: {e:#}"));
            op();
        }
    }

    #[test]
    fn the_rust_fallbacks_pass_their_checks_and_run() {
        // What a system without OpenSSL 3 measures.
        for c in Cipher::ALL {
            let mut op = c
                .prepare_rust(1024)
                .unwrap_or_else(|e| panic!("{c:?}: {e:#}"));
            op();
        }
        for h in Hash::ALL {
            let mut op = h
                .prepare_rust(64)
                .unwrap_or_else(|e| panic!("{h:?}: {e:#}"));
            op();
        }
    }

    #[test]
    fn rows_name_the_system_library_exactly_where_it_is_used() {
        let lib = libcrypto::get();
        if lib.is_none() {
            eprintln!("no libcrypto: {}", libcrypto::why_not().unwrap_or("?"));
        }
        let system = |name: String| name.contains("libcrypto (system)");
        for c in Cipher::ALL {
            for (len, _) in SIZES {
                let expected = lib.is_some()
                    && match c {
                        Cipher::Aes128Ctr | Cipher::Aes256Ctr => true,
                        Cipher::ChaCha20Poly1305 => len == 16 * 1024,
                        Cipher::Aes128Gcm | Cipher::Aes256Gcm => false,
                    };
                assert_eq!(system(c.library(len)), expected, "{c:?} {len}");
            }
        }
        for h in Hash::ALL {
            let expected = lib.is_some() && matches!(h, Hash::Sha512 | Hash::Md5);
            assert_eq!(system(h.library()), expected, "{h:?}");
        }
        for p in PublicKey::ALL {
            let expected =
                lib.is_some() && matches!(p, PublicKey::Rsa2048Sign | PublicKey::Rsa2048Verify);
            assert_eq!(system(p.library()), expected, "{p:?}");
        }
        let summary = benches(&Host::detect())
            .iter()
            .find(|b| b.id() == "crypto.sha512/16KiB")
            .map(|b| b.summary().to_string())
            .expect("the SHA-512 row");
        assert!(
            summary.contains("libcrypto") && summary.contains("sha2"),
            "{summary}"
        );
    }

    #[test]
    fn libcrypto_refuses_a_tampered_tag_and_a_changed_signature() {
        let Some(l) = libcrypto::get() else {
            eprintln!("no libcrypto: {}", libcrypto::why_not().unwrap_or("?"));
            return;
        };
        assert!(l.version().starts_with("OpenSSL 3"), "{}", l.version());
        let key = [7u8; 32];
        let nonce = [1u8; 12];
        let mut buf = b"a record of some length".to_vec();
        let mut tag = l.chacha_seal(&key, &nonce, &mut buf).expect("seal");
        tag[0] ^= 1;
        let err = l.chacha_open(&key, &nonce, &mut buf, tag).unwrap_err();
        assert!(err.to_string().contains("tag"), "{err:#}");
        let pkcs8 = include_bytes!("rsa2048-bench-key.pk8");
        let sig = l.rsa_sign(pkcs8, b"message").expect("sign");
        assert_eq!(sig.len(), 256);
        assert!(l.rsa_verify(pkcs8, b"message", &sig).expect("verify"));
        assert!(!l.rsa_verify(pkcs8, b"massage", &sig).expect("verify"));
        let d = l.digest(libcrypto::Digest::Md5, b"abc").expect("md5");
        assert_eq!(ops::hex(&d), "900150983cd24fb0d6963f7d28e17f72");
    }
}
