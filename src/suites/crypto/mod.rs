//! Crypto: what encrypting and hashing a buffer costs (E6's "AES MB/s").
//!
//! AES-256-GCM encryption and SHA-256 of a 16 KiB buffer, through the
//! RustCrypto crates `aes-gcm` and `sha2`. Both crates pick their
//! implementation at run time: the CPU's AES-NI/CLMUL and SHA extensions
//! when present, else a constant-time portable one. They offer no run-time
//! switch between the two (only a build-time `--cfg`), so a run measures
//! the path the crate takes on this CPU and records in the parameters
//! whether the instructions were there.

mod findings;

use std::hint::black_box;

use aes_gcm::aead::{AeadInOut, KeyInit};
use aes_gcm::{Aes256Gcm, Key, Nonce};
use sha2::{Digest, Sha256};

use super::bench::{FnBench, Looped, Suite};
use crate::harness::warnings::Warning;
use crate::harness::{Bench, Ctx, Unit};
use crate::host::Host;

/// Bytes encrypted or hashed per operation.
pub const BUF: usize = 16 * 1024;

/// The id of the AES-256-GCM benchmark.
pub const AES_ID: &str = "crypto.aes256gcm.encrypt/16KiB";
/// The id of the SHA-256 benchmark.
pub const SHA_ID: &str = "crypto.sha256/16KiB";

/// The crypto suite.
pub fn suite() -> Suite {
    Suite {
        name: "crypto",
        summary: "AES-256-GCM and SHA-256 throughput through RustCrypto (hardware path when the CPU has one)",
        benches,
        findings: findings::findings,
    }
}

/// True when the CPU offers AES-NI and carry-less multiply (the crate's fast GCM path).
pub fn has_aes_instructions() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("aes")
            && std::arch::is_x86_feature_detected!("pclmulqdq")
    }
    #[cfg(target_arch = "aarch64")]
    {
        std::arch::is_aarch64_feature_detected!("aes")
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        false
    }
}

/// True when the CPU offers SHA-256 instructions (x86 SHA extensions, Armv8 SHA2).
pub fn has_sha_instructions() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("sha") && std::arch::is_x86_feature_detected!("sse4.1")
    }
    #[cfg(target_arch = "aarch64")]
    {
        std::arch::is_aarch64_feature_detected!("sha2")
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        false
    }
}

/// The implementation a crate takes, for the parameters and the warnings.
fn path_name(hw: bool) -> &'static str {
    if hw { "cpu-instructions" } else { "portable" }
}

fn benches(_host: &Host) -> Vec<Box<dyn Bench>> {
    let aes_hw = has_aes_instructions();
    let sha_hw = has_sha_instructions();
    vec![
        FnBench::new(
            AES_ID,
            "AES-256-GCM encryption of a 16 KiB buffer in place (aes-gcm crate)",
            Unit::Throughput {
                bytes_per_op: BUF as f64,
            },
            move |_ctx: &Ctx| {
                let key = Key::<Aes256Gcm>::from([7u8; 32]);
                let cipher = Aes256Gcm::new(&key);
                let mut buf = vec![0x5au8; BUF];
                let mut counter = 0u64;
                let mut l = Looped::new(move || {
                    // A fresh nonce per message, as GCM requires.
                    counter += 1;
                    let mut n = [0u8; 12];
                    n[..8].copy_from_slice(&counter.to_le_bytes());
                    let tag = cipher.encrypt_inout_detached(
                        &Nonce::from(n),
                        b"",
                        buf.as_mut_slice().into(),
                    );
                    black_box(tag.ok());
                });
                if !aes_hw {
                    l = l.warn(Warning::NoCryptoInstructions("AES-NI/CLMUL").to_string());
                }
                Ok(l.boxed())
            },
        )
        .param("bytes", BUF as u64)
        .param("implementation", path_name(aes_hw))
        .boxed(),
        FnBench::new(
            SHA_ID,
            "SHA-256 of a 16 KiB buffer (sha2 crate)",
            Unit::Throughput {
                bytes_per_op: BUF as f64,
            },
            move |_ctx: &Ctx| {
                let buf = vec![0xa5u8; BUF];
                let mut l = Looped::new(move || {
                    black_box(Sha256::digest(black_box(&buf)));
                });
                if !sha_hw {
                    l = l.warn(Warning::NoCryptoInstructions("SHA").to_string());
                }
                Ok(l.boxed())
            },
        )
        .param("bytes", BUF as u64)
        .param("implementation", path_name(sha_hw))
        .boxed(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::Unit;

    #[test]
    fn aes_gcm_output_is_the_known_answer_and_the_loop_encrypts() {
        // The empty-plaintext AES-256-GCM vector of the GCM specification
        // (test case 13): key and nonce all zero.
        let cipher = Aes256Gcm::new(&Key::<Aes256Gcm>::from([0u8; 32]));
        let tag = cipher
            .encrypt_inout_detached(&Nonce::from([0u8; 12]), b"", (&mut [][..]).into())
            .unwrap();
        let hex: String = tag.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, "530f8afbc74536b9a963b4f1c4cb738b");
    }

    #[test]
    fn sha256_is_the_known_answer() {
        let d = Sha256::digest(b"abc");
        let hex: String = d.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(
            hex,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn benches_are_throughputs_with_their_implementation() {
        let host = Host::detect();
        let b = benches(&host);
        assert_eq!(b.len(), 2);
        for x in &b {
            assert!(
                matches!(x.unit(), Unit::Throughput { bytes_per_op } if bytes_per_op == BUF as f64)
            );
            assert!(x.id().starts_with("crypto."));
        }
    }
}
