//! The primitives the crypto suite times, each checked before it is timed.
//!
//! A cipher row encrypts a buffer in place under a fresh nonce per
//! message (as a TLS record or an SSH packet is), after a round trip at
//! set-up: decrypting what it encrypted must give the input back. A hash
//! row first hashes "abc" and compares with the published digest. A
//! signature row first verifies what it signed, and a key-agreement row
//! checks that both sides derive the same secret. A check that fails is a
//! failure of that row, never a skip: a library that gets the answer wrong
//! has no speed worth reporting.
//!
//! Libraries, each the fastest measured for its rows (docs/suites/crypto.md
//! has the figures): `ring` (BoringSSL's assembly: AES-NI/VAES GCM,
//! vectorised ChaCha20, the curve and RSA code) for the AEADs and the
//! public-key rows; RustCrypto's `aes` + `ctr` for AES-CTR, which `ring`
//! does not expose; RustCrypto's `sha2`, `sha1` and `md-5` for the hashes
//! (`sha2` equals `ring` at 16 KiB and beats it on short inputs; `ring`'s
//! SHA-1 does not use the SHA extensions and it has no MD5); the `blake3`
//! crate (its own SIMD code) for BLAKE3. Where the system has OpenSSL 3's
//! libcrypto, AES-CTR, ChaCha20-Poly1305, SHA-512, MD5 and RSA use it
//! instead (see [`super::libcrypto`]): no Rust library reaches OpenSSL's
//! assembly there, and each such row first checks that libcrypto's answer
//! is the Rust library's.

use std::hint::black_box;

use anyhow::{anyhow, bail, ensure};
use ring::aead::{self, Aad, LessSafeKey, Nonce, UnboundKey};
use ring::agreement;
use ring::rand::SystemRandom;
use ring::signature::{self, KeyPair};

use super::libcrypto::{self, LibCrypto};

/// An operation ready to be timed: one call is one message, hash or signature.
pub type Op = Box<dyn FnMut() + Send>;

/// A 2048-bit RSA private key (PKCS#8 DER) made for this benchmark only:
/// `ring` signs with RSA but does not generate RSA keys.
const RSA2048_PKCS8: &[u8] = include_bytes!("rsa2048-bench-key.pk8");

/// A bulk cipher: authenticated encryption (GCM, ChaCha20-Poly1305) or a
/// keystream (CTR).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cipher {
    /// AES-128 in Galois/Counter mode (TLS 1.2/1.3, SSH, IPsec).
    Aes128Gcm,
    /// AES-256 in Galois/Counter mode.
    Aes256Gcm,
    /// ChaCha20-Poly1305 (TLS and SSH where AES has no hardware support).
    ChaCha20Poly1305,
    /// AES-128 in counter mode (SSH `aes128-ctr`).
    Aes128Ctr,
    /// AES-256 in counter mode (SSH `aes256-ctr`; the AES-256 rounds disk encryption uses).
    Aes256Ctr,
}

impl Cipher {
    /// Every cipher the suite measures.
    pub const ALL: [Cipher; 5] = [
        Cipher::Aes128Gcm,
        Cipher::Aes256Gcm,
        Cipher::ChaCha20Poly1305,
        Cipher::Aes128Ctr,
        Cipher::Aes256Ctr,
    ];

    /// The name in ids (`aes256gcm`).
    pub fn id(self) -> &'static str {
        match self {
            Cipher::Aes128Gcm => "aes128gcm",
            Cipher::Aes256Gcm => "aes256gcm",
            Cipher::ChaCha20Poly1305 => "chacha20poly1305",
            Cipher::Aes128Ctr => "aes128ctr",
            Cipher::Aes256Ctr => "aes256ctr",
        }
    }

    /// The name in text (`AES-256-GCM`).
    pub fn title(self) -> &'static str {
        match self {
            Cipher::Aes128Gcm => "AES-128-GCM",
            Cipher::Aes256Gcm => "AES-256-GCM",
            Cipher::ChaCha20Poly1305 => "ChaCha20-Poly1305",
            Cipher::Aes128Ctr => "AES-128-CTR",
            Cipher::Aes256Ctr => "AES-256-CTR",
        }
    }

    /// libcrypto's cipher, for the rows at `len`-byte messages where
    /// OpenSSL's code is the fastest measured (no library is opened here).
    fn system_cipher(self, len: usize) -> Option<libcrypto::Cipher> {
        match self {
            Cipher::Aes128Ctr => Some(libcrypto::Cipher::Aes128Ctr),
            Cipher::Aes256Ctr => Some(libcrypto::Cipher::Aes256Ctr),
            Cipher::ChaCha20Poly1305 if len >= SYSTEM_CHACHA_MIN => {
                Some(libcrypto::Cipher::ChaCha20Poly1305)
            }
            _ => None,
        }
    }

    /// The system's libcrypto and its cipher, where the row prefers it
    /// and the library is there.
    fn system(self, len: usize) -> Option<(&'static LibCrypto, libcrypto::Cipher)> {
        let c = self.system_cipher(len)?;
        libcrypto::get().map(|l| (l, c))
    }

    /// The Rust library of this row (the only one without libcrypto).
    fn rust_library(self) -> &'static str {
        match self {
            Cipher::Aes128Ctr | Cipher::Aes256Ctr => "RustCrypto aes+ctr",
            _ => "ring",
        }
    }

    /// The libraries this row can use, in text, without opening any.
    pub fn libraries(self, len: usize) -> String {
        with_system(self.system_cipher(len).is_some(), self.rust_library())
    }

    /// The library that implements it at `len`-byte messages (opens libcrypto).
    pub fn library(self, len: usize) -> String {
        match self.system(len) {
            Some((l, _)) => l.label(),
            None => self.rust_library().into(),
        }
    }

    /// The operation, after a round trip on a buffer of `len` bytes.
    pub fn prepare(self, len: usize) -> anyhow::Result<Op> {
        if let Some((l, c)) = self.system(len) {
            return match c {
                libcrypto::Cipher::ChaCha20Poly1305 => system_chacha_op(l, len),
                _ => system_ctr_op(l, c, self.key_len(), len),
            };
        }
        self.prepare_rust(len)
    }

    /// The operation with the Rust library (what [`Cipher::prepare`] uses
    /// without the system's libcrypto).
    pub fn prepare_rust(self, len: usize) -> anyhow::Result<Op> {
        match self {
            Cipher::Aes128Ctr => ctr_op::<aes::Aes128>(len),
            Cipher::Aes256Ctr => ctr_op::<aes::Aes256>(len),
            Cipher::Aes128Gcm => aead_op(&aead::AES_128_GCM, len),
            Cipher::Aes256Gcm => aead_op(&aead::AES_256_GCM, len),
            Cipher::ChaCha20Poly1305 => aead_op(&aead::CHACHA20_POLY1305, len),
        }
    }

    /// The key's length in bytes.
    fn key_len(self) -> usize {
        match self {
            Cipher::Aes128Gcm | Cipher::Aes128Ctr => 16,
            _ => 32,
        }
    }
}

/// A row's libraries in text: `rust`, or the system's libcrypto first.
fn with_system(system: bool, rust: &str) -> String {
    if system {
        format!("OpenSSL libcrypto where the system has it, else {rust}")
    } else {
        rust.to_string()
    }
}

/// The smallest message ChaCha20-Poly1305 seals through libcrypto: OpenSSL
/// 3.0's EVP sets a record's nonce up in ~230 ns (its stream runs faster
/// than ring's AVX2 code where it has AVX-512), ring in less, so shorter
/// records stay with ring (docs/suites/crypto.md has the figures).
const SYSTEM_CHACHA_MIN: usize = 16 * 1024;

/// The nonce bytes of message number `n`: unique per message, as GCM requires.
fn nonce_bytes(n: u64) -> [u8; aead::NONCE_LEN] {
    let mut b = [0u8; aead::NONCE_LEN];
    b[..8].copy_from_slice(&n.to_le_bytes());
    b
}

/// The nonce of message number `n`.
fn nonce(n: u64) -> Nonce {
    Nonce::assume_unique_for_key(nonce_bytes(n))
}

/// The key of the AEAD rows, `len` bytes.
fn aead_key(len: usize) -> Vec<u8> {
    (0..len).map(|i| i as u8 ^ 0x5c).collect()
}

/// ChaCha20-Poly1305 through libcrypto, after a check that it seals
/// exactly as ring does (ciphertext and tag) and opens its own output.
fn system_chacha_op(l: &'static LibCrypto, len: usize) -> anyhow::Result<Op> {
    let alg = &aead::CHACHA20_POLY1305;
    let key_bytes = aead_key(alg.key_len());
    let input = plaintext(len);
    let mut ours = input.clone();
    let tag = l.chacha_seal(&key_bytes, &nonce_bytes(0), &mut ours)?;
    let ring_key = LessSafeKey::new(
        UnboundKey::new(alg, &key_bytes).map_err(|_| anyhow!("ring refused the key"))?,
    );
    let mut theirs = input.clone();
    let ring_tag = ring_key
        .seal_in_place_separate_tag(nonce(0), Aad::empty(), &mut theirs)
        .map_err(|_| anyhow!("sealing failed"))?;
    ensure!(
        ours == theirs && tag == ring_tag.as_ref(),
        "libcrypto and ring sealed the same message differently"
    );
    l.chacha_open(&key_bytes, &nonce_bytes(0), &mut ours, tag)?;
    ensure!(ours == input, "decryption did not give the input back");
    l.chacha_op(&key_bytes, nonce_bytes, input)
}

/// AES-CTR through libcrypto, after a check that its keystream is
/// RustCrypto's and that applying it twice gives the input back.
fn system_ctr_op(
    l: &'static LibCrypto,
    c: libcrypto::Cipher,
    key_len: usize,
    len: usize,
) -> anyhow::Result<Op> {
    use ctr::cipher::{KeyIvInit, StreamCipher};
    let key = vec![0u8; key_len];
    let iv = [0u8; 16];
    let input = plaintext(len);
    let mut ours = input.clone();
    l.ctr_apply(c, &key, &iv, &mut ours)?;
    let mut theirs = input.clone();
    if key_len == 16 {
        ctr::Ctr128BE::<aes::Aes128>::new(&Default::default(), &Default::default())
            .apply_keystream(&mut theirs);
    } else {
        ctr::Ctr128BE::<aes::Aes256>::new(&Default::default(), &Default::default())
            .apply_keystream(&mut theirs);
    }
    ensure!(
        ours == theirs,
        "libcrypto's and RustCrypto's keystreams differ"
    );
    ensure!(
        len == 0 || ours != input,
        "encryption left the buffer as it was"
    );
    l.ctr_apply(c, &key, &iv, &mut ours)?;
    ensure!(ours == input, "decryption did not give the input back");
    l.ctr_op(c, &key, &iv, input)
}

/// A buffer of `len` bytes that is not all one value.
fn plaintext(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 131 + 7) as u8).collect()
}

fn aead_op(alg: &'static aead::Algorithm, len: usize) -> anyhow::Result<Op> {
    let key_bytes = aead_key(alg.key_len());
    let key = LessSafeKey::new(
        UnboundKey::new(alg, &key_bytes).map_err(|_| anyhow!("ring refused the key"))?,
    );
    // Round trip: the ciphertext differs from the input, and opening it
    // (tag checked) gives the input back.
    let input = plaintext(len);
    let mut buf = input.clone();
    let tag = key
        .seal_in_place_separate_tag(nonce(0), Aad::empty(), &mut buf)
        .map_err(|_| anyhow!("sealing failed"))?;
    ensure!(
        len == 0 || buf != input,
        "encryption left the buffer as it was"
    );
    buf.extend_from_slice(tag.as_ref());
    let opened = key
        .open_in_place(nonce(0), Aad::empty(), &mut buf)
        .map_err(|_| anyhow!("the tag of our own ciphertext did not verify"))?;
    ensure!(
        opened == input.as_slice(),
        "decryption did not give the input back"
    );

    let mut buf = input;
    let mut counter = 0u64;
    Ok(Box::new(move || {
        counter += 1;
        let tag = key.seal_in_place_separate_tag(nonce(counter), Aad::empty(), &mut buf);
        black_box(tag.ok());
    }))
}

fn ctr_op<A>(len: usize) -> anyhow::Result<Op>
where
    A: ctr::cipher::BlockCipherEncrypt
        + ctr::cipher::BlockSizeUser<BlockSize = ctr::cipher::consts::U16>,
    ctr::Ctr128BE<A>: ctr::cipher::KeyIvInit + ctr::cipher::StreamCipher + Send + 'static,
{
    use ctr::cipher::{KeyIvInit, StreamCipher};
    type Ctr<A> = ctr::Ctr128BE<A>;
    let key = ctr::cipher::Key::<Ctr<A>>::default();
    let iv = ctr::cipher::Iv::<Ctr<A>>::default();
    let input = plaintext(len);
    let mut buf = input.clone();
    Ctr::<A>::new(&key, &iv).apply_keystream(&mut buf);
    ensure!(
        len == 0 || buf != input,
        "encryption left the buffer as it was"
    );
    Ctr::<A>::new(&key, &iv).apply_keystream(&mut buf);
    ensure!(buf == input, "decryption did not give the input back");

    // One keystream that runs on across messages, as an SSH stream does.
    let mut c = Ctr::<A>::new(&key, &iv);
    Ok(Box::new(move || {
        c.apply_keystream(&mut buf);
        black_box(&buf);
    }))
}

/// A hash function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hash {
    /// SHA-256.
    Sha256,
    /// SHA-512 (faster than SHA-256 per byte on 64-bit CPUs without SHA extensions).
    Sha512,
    /// SHA-1 (git, legacy checksums).
    Sha1,
    /// MD5 (checksums).
    Md5,
    /// BLAKE3.
    Blake3,
}

impl Hash {
    /// Every hash the suite measures.
    pub const ALL: [Hash; 5] = [
        Hash::Sha256,
        Hash::Sha512,
        Hash::Sha1,
        Hash::Md5,
        Hash::Blake3,
    ];

    /// The name in ids (`sha256`).
    pub fn id(self) -> &'static str {
        match self {
            Hash::Sha256 => "sha256",
            Hash::Sha512 => "sha512",
            Hash::Sha1 => "sha1",
            Hash::Md5 => "md5",
            Hash::Blake3 => "blake3",
        }
    }

    /// The name in text (`SHA-256`).
    pub fn title(self) -> &'static str {
        match self {
            Hash::Sha256 => "SHA-256",
            Hash::Sha512 => "SHA-512",
            Hash::Sha1 => "SHA-1",
            Hash::Md5 => "MD5",
            Hash::Blake3 => "BLAKE3",
        }
    }

    /// libcrypto's digest, for the rows where OpenSSL's code is the
    /// fastest measured (no library is opened here).
    fn system_digest(self) -> Option<libcrypto::Digest> {
        match self {
            Hash::Sha512 => Some(libcrypto::Digest::Sha512),
            Hash::Md5 => Some(libcrypto::Digest::Md5),
            Hash::Sha256 | Hash::Sha1 | Hash::Blake3 => None,
        }
    }

    /// The system's libcrypto and its digest, where the row prefers it
    /// and the library is there.
    fn system(self) -> Option<(&'static LibCrypto, libcrypto::Digest)> {
        let d = self.system_digest()?;
        libcrypto::get().map(|l| (l, d))
    }

    /// The Rust library of this row (the only one without libcrypto).
    fn rust_library(self) -> &'static str {
        match self {
            Hash::Sha256 | Hash::Sha512 => "RustCrypto sha2",
            Hash::Sha1 => "RustCrypto sha1",
            Hash::Md5 => "RustCrypto md-5",
            Hash::Blake3 => "blake3",
        }
    }

    /// The libraries this row can use, in text, without opening any.
    pub fn libraries(self) -> String {
        with_system(self.system_digest().is_some(), self.rust_library())
    }

    /// The library that implements it (opens libcrypto).
    pub fn library(self) -> String {
        match self.system() {
            Some((l, _)) => l.label(),
            None => self.rust_library().into(),
        }
    }

    /// The digest of `data`.
    pub fn digest(self, data: &[u8]) -> Vec<u8> {
        use sha2::Digest;
        match self {
            Hash::Sha256 => sha2::Sha256::digest(data).to_vec(),
            Hash::Sha512 => sha2::Sha512::digest(data).to_vec(),
            Hash::Sha1 => sha1::Sha1::digest(data).to_vec(),
            Hash::Md5 => md5::Md5::digest(data).to_vec(),
            Hash::Blake3 => blake3::hash(data).as_bytes().to_vec(),
        }
    }

    /// The published digest of "abc".
    fn abc(self) -> &'static str {
        match self {
            Hash::Sha256 => "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
            Hash::Sha512 => {
                "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a\
                 2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f"
            }
            Hash::Sha1 => "a9993e364706816aba3e25717850c26c9cd0d89d",
            Hash::Md5 => "900150983cd24fb0d6963f7d28e17f72",
            Hash::Blake3 => "6437b3ac38465133ffb63b75273a8db548c558465d79db03fd359c6cd5bd9d85",
        }
    }

    /// The operation on `len` bytes, after the known-answer check (and,
    /// through libcrypto, a check that it agrees with the Rust library).
    pub fn prepare(self, len: usize) -> anyhow::Result<Op> {
        let Some((l, d)) = self.system() else {
            return self.prepare_rust(len);
        };
        let got = hex(&l.digest(d, b"abc")?);
        ensure!(
            got == self.abc(),
            "{} of \"abc\" is {got}, not the published digest",
            self.title()
        );
        let buf = plaintext(len);
        ensure!(
            l.digest(d, &buf)? == self.digest(&buf),
            "libcrypto's and the Rust library's {} differ",
            self.title()
        );
        l.digest_op(d, buf)
    }

    /// The operation with the Rust library (what [`Hash::prepare`] uses
    /// without the system's libcrypto).
    pub fn prepare_rust(self, len: usize) -> anyhow::Result<Op> {
        let got = hex(&self.digest(b"abc"));
        ensure!(
            got == self.abc(),
            "{} of \"abc\" is {got}, not the published digest",
            self.title()
        );
        use sha2::Digest;
        let buf = plaintext(len);
        Ok(match self {
            Hash::Sha256 => Box::new(move || {
                black_box(sha2::Sha256::digest(black_box(&buf)));
            }),
            Hash::Sha512 => Box::new(move || {
                black_box(sha2::Sha512::digest(black_box(&buf)));
            }),
            Hash::Sha1 => Box::new(move || {
                black_box(sha1::Sha1::digest(black_box(&buf)));
            }),
            Hash::Md5 => Box::new(move || {
                black_box(md5::Md5::digest(black_box(&buf)));
            }),
            Hash::Blake3 => Box::new(move || {
                black_box(blake3::hash(black_box(&buf)));
            }),
        })
    }
}

/// Lower-case hex of `b`.
pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// A public-key operation, counted per second.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PublicKey {
    /// Ed25519 signature of a short message.
    Ed25519Sign,
    /// Ed25519 verification.
    Ed25519Verify,
    /// X25519: a fresh key pair and the shared secret with a peer's key (a TLS 1.3 or SSH handshake's share).
    X25519,
    /// ECDSA P-256 signature (SHA-256) of a short message.
    EcdsaP256Sign,
    /// ECDSA P-256 verification.
    EcdsaP256Verify,
    /// RSA-2048 PKCS#1 v1.5 signature (SHA-256).
    Rsa2048Sign,
    /// RSA-2048 verification (e = 65537).
    Rsa2048Verify,
}

/// The message signed: the size of a TLS 1.3 CertificateVerify's input is
/// of this order, and hashing it is a small part of a signature.
const MESSAGE: &[u8] = b"opcost signs this message to count signatures per second";

impl PublicKey {
    /// Every public-key operation the suite measures.
    pub const ALL: [PublicKey; 7] = [
        PublicKey::Ed25519Sign,
        PublicKey::Ed25519Verify,
        PublicKey::X25519,
        PublicKey::EcdsaP256Sign,
        PublicKey::EcdsaP256Verify,
        PublicKey::Rsa2048Sign,
        PublicKey::Rsa2048Verify,
    ];

    /// The id after `crypto.` (`ed25519.sign`).
    pub fn id(self) -> &'static str {
        match self {
            PublicKey::Ed25519Sign => "ed25519.sign",
            PublicKey::Ed25519Verify => "ed25519.verify",
            PublicKey::X25519 => "x25519.keygen+derive",
            PublicKey::EcdsaP256Sign => "ecdsap256.sign",
            PublicKey::EcdsaP256Verify => "ecdsap256.verify",
            PublicKey::Rsa2048Sign => "rsa2048.sign",
            PublicKey::Rsa2048Verify => "rsa2048.verify",
        }
    }

    /// What one operation is, in text.
    pub fn title(self) -> &'static str {
        match self {
            PublicKey::Ed25519Sign => "Ed25519 signature",
            PublicKey::Ed25519Verify => "Ed25519 verification",
            PublicKey::X25519 => "X25519 key pair and shared secret",
            PublicKey::EcdsaP256Sign => "ECDSA P-256 (SHA-256) signature",
            PublicKey::EcdsaP256Verify => "ECDSA P-256 (SHA-256) verification",
            PublicKey::Rsa2048Sign => "RSA-2048 PKCS#1 v1.5 (SHA-256) signature",
            PublicKey::Rsa2048Verify => "RSA-2048 PKCS#1 v1.5 (SHA-256) verification",
        }
    }

    /// Whether OpenSSL's code is the fastest measured for this row (RSA).
    fn prefers_system(self) -> bool {
        matches!(self, PublicKey::Rsa2048Sign | PublicKey::Rsa2048Verify)
    }

    /// The system's libcrypto, where the row prefers it and it is there.
    fn system(self) -> Option<&'static LibCrypto> {
        self.prefers_system().then(libcrypto::get).flatten()
    }

    /// The libraries this row can use, in text, without opening any.
    pub fn libraries(self) -> String {
        with_system(self.prefers_system(), "ring")
    }

    /// The library that implements it (opens libcrypto).
    pub fn library(self) -> String {
        self.system()
            .map_or_else(|| "ring".into(), LibCrypto::label)
    }

    /// The operation, after a check that a signature verifies (and a
    /// tampered message does not), or that both sides of an agreement
    /// derive one secret.
    pub fn prepare(self) -> anyhow::Result<Op> {
        match self {
            PublicKey::Ed25519Sign | PublicKey::Ed25519Verify => {
                ed25519_op(self == PublicKey::Ed25519Sign)
            }
            PublicKey::EcdsaP256Sign | PublicKey::EcdsaP256Verify => {
                ecdsa_p256_op(self == PublicKey::EcdsaP256Sign)
            }
            PublicKey::Rsa2048Sign | PublicKey::Rsa2048Verify => {
                let sign = self == PublicKey::Rsa2048Sign;
                match self.system() {
                    Some(l) => system_rsa2048_op(l, sign),
                    None => rsa2048_op(sign),
                }
            }
            PublicKey::X25519 => x25519_op(),
        }
    }
}

/// The error of a ring call that failed without saying why.
fn unspecified(what: &'static str) -> impl FnOnce(ring::error::Unspecified) -> anyhow::Error {
    move |_| anyhow!("{what} failed")
}

/// An Ed25519 signature (`sign`) or verification of [`MESSAGE`], with a
/// fresh key pair.
fn ed25519_op(sign: bool) -> anyhow::Result<Op> {
    let rng = SystemRandom::new();
    let pkcs8 = signature::Ed25519KeyPair::generate_pkcs8(&rng)
        .map_err(unspecified("Ed25519 key generation"))?;
    let kp = signature::Ed25519KeyPair::from_pkcs8(pkcs8.as_ref())
        .map_err(|e| anyhow!("Ed25519 key: {e}"))?;
    let public =
        signature::UnparsedPublicKey::new(&signature::ED25519, kp.public_key().as_ref().to_vec());
    let sig = kp.sign(MESSAGE).as_ref().to_vec();
    check_signature(&public, &sig)?;
    Ok(if sign {
        Box::new(move || {
            black_box(kp.sign(black_box(MESSAGE)));
        })
    } else {
        Box::new(move || {
            black_box(public.verify(black_box(MESSAGE), &sig).is_ok());
        })
    })
}

/// An ECDSA P-256 (SHA-256) signature (`sign`) or verification of
/// [`MESSAGE`], with a fresh key pair.
fn ecdsa_p256_op(sign: bool) -> anyhow::Result<Op> {
    let rng = SystemRandom::new();
    let alg = &signature::ECDSA_P256_SHA256_ASN1_SIGNING;
    let pkcs8 = signature::EcdsaKeyPair::generate_pkcs8(alg, &rng)
        .map_err(unspecified("P-256 key generation"))?;
    let kp = signature::EcdsaKeyPair::from_pkcs8(alg, pkcs8.as_ref(), &rng)
        .map_err(|e| anyhow!("P-256 key: {e}"))?;
    let public = signature::UnparsedPublicKey::new(
        &signature::ECDSA_P256_SHA256_ASN1,
        kp.public_key().as_ref().to_vec(),
    );
    let sig = kp
        .sign(&rng, MESSAGE)
        .map_err(unspecified("ECDSA signing"))?
        .as_ref()
        .to_vec();
    check_signature(&public, &sig)?;
    Ok(if sign {
        Box::new(move || {
            black_box(kp.sign(&rng, black_box(MESSAGE)).ok());
        })
    } else {
        Box::new(move || {
            black_box(public.verify(black_box(MESSAGE), &sig).is_ok());
        })
    })
}

/// An RSA-2048 PKCS#1 v1.5 (SHA-256) signature (`sign`) or verification
/// of [`MESSAGE`], with the built-in key.
fn rsa2048_op(sign: bool) -> anyhow::Result<Op> {
    let rng = SystemRandom::new();
    let kp =
        signature::RsaKeyPair::from_pkcs8(RSA2048_PKCS8).map_err(|e| anyhow!("RSA key: {e}"))?;
    ensure!(
        kp.public().modulus_len() == 256,
        "the RSA key is not 2048 bits"
    );
    let public = signature::UnparsedPublicKey::new(
        &signature::RSA_PKCS1_2048_8192_SHA256,
        kp.public().as_ref().to_vec(),
    );
    let mut sig = vec![0u8; kp.public().modulus_len()];
    kp.sign(&signature::RSA_PKCS1_SHA256, &rng, MESSAGE, &mut sig)
        .map_err(unspecified("RSA signing"))?;
    check_signature(&public, &sig)?;
    Ok(if sign {
        let mut out = sig;
        Box::new(move || {
            let r = kp.sign(&signature::RSA_PKCS1_SHA256, &rng, MESSAGE, &mut out);
            black_box(r.is_ok());
        })
    } else {
        Box::new(move || {
            black_box(public.verify(black_box(MESSAGE), &sig).is_ok());
        })
    })
}

/// An RSA-2048 PKCS#1 v1.5 (SHA-256) signature (`sign`) or verification
/// of [`MESSAGE`] through libcrypto, with the built-in key, after a check
/// that libcrypto's signature is ring's (the padding is deterministic),
/// that it verifies, and that it does not on a changed message.
fn system_rsa2048_op(l: &'static LibCrypto, sign: bool) -> anyhow::Result<Op> {
    let kp =
        signature::RsaKeyPair::from_pkcs8(RSA2048_PKCS8).map_err(|e| anyhow!("RSA key: {e}"))?;
    let mut ring_sig = vec![0u8; kp.public().modulus_len()];
    kp.sign(
        &signature::RSA_PKCS1_SHA256,
        &SystemRandom::new(),
        MESSAGE,
        &mut ring_sig,
    )
    .map_err(unspecified("RSA signing"))?;
    let sig = l.rsa_sign(RSA2048_PKCS8, MESSAGE)?;
    ensure!(sig.len() == 256, "the RSA key is not 2048 bits");
    ensure!(sig == ring_sig, "libcrypto's and ring's signatures differ");
    ensure!(
        l.rsa_verify(RSA2048_PKCS8, MESSAGE, &sig)?,
        "our own signature did not verify"
    );
    let mut other = MESSAGE.to_vec();
    other[0] ^= 1;
    if l.rsa_verify(RSA2048_PKCS8, &other, &sig)? {
        bail!("a signature verified on a message it was not made for");
    }
    l.rsa_op(RSA2048_PKCS8, MESSAGE, sig, sign)
}

/// An X25519 key pair and its shared secret with a fixed peer's key,
/// after a check that both sides derive one secret.
fn x25519_op() -> anyhow::Result<Op> {
    let rng = SystemRandom::new();
    let peer = agreement::EphemeralPrivateKey::generate(&agreement::X25519, &rng)
        .map_err(unspecified("X25519 key generation"))?;
    let peer_public = peer
        .compute_public_key()
        .map_err(unspecified("X25519 public key"))?;
    let ours = agreement::EphemeralPrivateKey::generate(&agreement::X25519, &rng)
        .map_err(unspecified("X25519 key generation"))?;
    let our_public = ours
        .compute_public_key()
        .map_err(unspecified("X25519 public key"))?;
    let derive = |k, p: &[u8]| {
        agreement::agree_ephemeral(
            k,
            &agreement::UnparsedPublicKey::new(&agreement::X25519, p),
            |s: &[u8]| s.to_vec(),
        )
        .map_err(unspecified("X25519 agreement"))
    };
    let a = derive(ours, peer_public.as_ref())?;
    let b = derive(peer, our_public.as_ref())?;
    ensure!(a == b, "the two sides derived different secrets");
    let peer_public = peer_public.as_ref().to_vec();
    Ok(Box::new(move || {
        let k = agreement::EphemeralPrivateKey::generate(&agreement::X25519, &rng);
        let Ok(k) = k else { return };
        black_box(
            agreement::agree_ephemeral(
                k,
                &agreement::UnparsedPublicKey::new(&agreement::X25519, &peer_public),
                |s: &[u8]| s[0],
            )
            .ok(),
        );
    }))
}

/// The signature verifies, and the same signature on a changed message does not.
fn check_signature(
    public: &signature::UnparsedPublicKey<Vec<u8>>,
    sig: &[u8],
) -> anyhow::Result<()> {
    public
        .verify(MESSAGE, sig)
        .map_err(|_| anyhow!("our own signature did not verify"))?;
    let mut other = MESSAGE.to_vec();
    other[0] ^= 1;
    if public.verify(&other, sig).is_ok() {
        bail!("a signature verified on a message it was not made for");
    }
    Ok(())
}
