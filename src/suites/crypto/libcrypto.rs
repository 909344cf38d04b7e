//! OpenSSL's libcrypto (3.x), opened at run time where the system has it.
//!
//! For some primitives no Rust library reaches OpenSSL's assembly: its
//! AES-CTR, ChaCha20-Poly1305, SHA-512 and MD5 code and its RSA (AVX-512
//! IFMA where the CPU has it) run up to 2.3× faster than the best crate on
//! the machines in docs/suites/crypto.md. Those rows use the system's
//! libcrypto when `libcrypto.so.3` can be opened, through the EVP calls a
//! program would make; the binary does not link it, so it still runs (with
//! the Rust libraries for those rows) on a system without OpenSSL 3.
//!
//! Every function is looked up by name once; a missing one (an OpenSSL
//! older than 3.0, or something else under the name) means the library is
//! not used, and [`why_not`] says why. Contexts are freed when their
//! operation is dropped; the fetched algorithms and the library itself stay
//! for the life of the process.

use std::ffi::{CStr, CString, c_char, c_int, c_long, c_uint, c_void};
use std::hint::black_box;
use std::sync::OnceLock;

use anyhow::{anyhow, bail, ensure};

/// An operation ready to be timed: one call is one message, digest or
/// signature (the crypto suite's `ops::Op`; this module is below `ops`).
pub type Op = Box<dyn FnMut() + Send>;

/// A pointer to an OpenSSL object (`EVP_MD_CTX`, `EVP_PKEY`...).
type Ptr = *mut c_void;

/// The file opened: OpenSSL 3's stable soname.
const SONAME: &str = "libcrypto.so.3";

/// `EVP_CTRL_AEAD_GET_TAG`.
const CTRL_AEAD_GET_TAG: c_int = 0x10;
/// `EVP_CTRL_AEAD_SET_TAG`.
const CTRL_AEAD_SET_TAG: c_int = 0x11;
/// `RSA_PKCS1_PADDING`.
const RSA_PKCS1_PADDING: c_int = 1;

/// Declares the functions used, with their C signatures, and a loader
/// that looks each one up by name.
macro_rules! functions {
    ($($field:ident = $name:literal: fn($($arg:ty),*) -> $ret:ty;)*) => {
        /// The libcrypto functions opcost calls.
        struct Fns {
            $($field: unsafe extern "C" fn($($arg),*) -> $ret,)*
        }

        /// Looks every function up in the library behind `handle`.
        ///
        /// # Safety
        /// `handle` is a live `dlopen` handle of OpenSSL 3's libcrypto,
        /// whose functions have the signatures declared here.
        unsafe fn load(handle: Ptr) -> Result<Fns, String> {
            Ok(Fns {
                $($field: {
                    // SAFETY: the name is NUL-terminated; the handle is live.
                    let p = unsafe { libc::dlsym(handle, concat!($name, "\0").as_ptr().cast()) };
                    if p.is_null() {
                        return Err(format!("{SONAME} has no {}", $name));
                    }
                    // SAFETY: the symbol is the function of that name in
                    // OpenSSL 3, whose signature is the one declared.
                    unsafe { std::mem::transmute::<Ptr, unsafe extern "C" fn($($arg),*) -> $ret>(p) }
                },)*
            })
        }
    };
}

functions! {
    version = "OpenSSL_version": fn(c_int) -> *const c_char;
    version_major = "OPENSSL_version_major": fn() -> c_uint;
    md_fetch = "EVP_MD_fetch": fn(Ptr, *const c_char, *const c_char) -> Ptr;
    md_ctx_new = "EVP_MD_CTX_new": fn() -> Ptr;
    md_ctx_free = "EVP_MD_CTX_free": fn(Ptr) -> ();
    digest_init = "EVP_DigestInit_ex": fn(Ptr, Ptr, Ptr) -> c_int;
    digest_update = "EVP_DigestUpdate": fn(Ptr, *const c_void, usize) -> c_int;
    digest_final = "EVP_DigestFinal_ex": fn(Ptr, *mut u8, *mut c_uint) -> c_int;
    cipher_fetch = "EVP_CIPHER_fetch": fn(Ptr, *const c_char, *const c_char) -> Ptr;
    cipher_ctx_new = "EVP_CIPHER_CTX_new": fn() -> Ptr;
    cipher_ctx_free = "EVP_CIPHER_CTX_free": fn(Ptr) -> ();
    cipher_init = "EVP_CipherInit_ex": fn(Ptr, Ptr, Ptr, *const u8, *const u8, c_int) -> c_int;
    cipher_update = "EVP_CipherUpdate": fn(Ptr, *mut u8, *mut c_int, *const u8, c_int) -> c_int;
    cipher_final = "EVP_CipherFinal_ex": fn(Ptr, *mut u8, *mut c_int) -> c_int;
    cipher_ctrl = "EVP_CIPHER_CTX_ctrl": fn(Ptr, c_int, c_int, Ptr) -> c_int;
    d2i_private_key = "d2i_AutoPrivateKey": fn(*mut Ptr, *mut *const u8, c_long) -> Ptr;
    pkey_free = "EVP_PKEY_free": fn(Ptr) -> ();
    pkey_ctx_new = "EVP_PKEY_CTX_new": fn(Ptr, Ptr) -> Ptr;
    pkey_ctx_free = "EVP_PKEY_CTX_free": fn(Ptr) -> ();
    sign_init = "EVP_PKEY_sign_init": fn(Ptr) -> c_int;
    verify_init = "EVP_PKEY_verify_init": fn(Ptr) -> c_int;
    set_rsa_padding = "EVP_PKEY_CTX_set_rsa_padding": fn(Ptr, c_int) -> c_int;
    set_signature_md = "EVP_PKEY_CTX_set_signature_md": fn(Ptr, Ptr) -> c_int;
    sign = "EVP_PKEY_sign": fn(Ptr, *mut u8, *mut usize, *const u8, usize) -> c_int;
    verify = "EVP_PKEY_verify": fn(Ptr, *const u8, usize, *const u8, usize) -> c_int;
}

/// The system's libcrypto, opened.
pub struct LibCrypto {
    fns: Fns,
    version: String,
}

// SAFETY: the function pointers and the version string are immutable after
// loading, and OpenSSL's functions are thread-safe on distinct contexts.
unsafe impl Sync for LibCrypto {}
// SAFETY: as above.
unsafe impl Send for LibCrypto {}

/// The library, opened on first use, or why it could not be.
fn opened() -> &'static Result<LibCrypto, String> {
    static LIB: OnceLock<Result<LibCrypto, String>> = OnceLock::new();
    LIB.get_or_init(open)
}

/// The system's libcrypto 3, if it can be opened.
pub fn get() -> Option<&'static LibCrypto> {
    opened().as_ref().ok()
}

/// Why the system's libcrypto is not used, if it is not.
pub fn why_not() -> Option<&'static str> {
    opened().as_ref().err().map(String::as_str)
}

fn open() -> Result<LibCrypto, String> {
    let name = CString::new(SONAME).expect("no NUL in the soname");
    // SAFETY: a NUL-terminated name; the handle is never closed, so every
    // function looked up in it stays valid for the life of the process.
    let handle = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    if handle.is_null() {
        return Err(format!("{SONAME} not found"));
    }
    // SAFETY: the handle is live and names OpenSSL 3's soname.
    let fns = unsafe { load(handle) }?;
    // SAFETY: functions of OpenSSL 3; OpenSSL_version returns a static string.
    let (major, version) = unsafe {
        let v = (fns.version)(0);
        let text = if v.is_null() {
            String::from("OpenSSL")
        } else {
            CStr::from_ptr(v).to_string_lossy().into_owned()
        };
        ((fns.version_major)(), text)
    };
    if major < 3 {
        return Err(format!("{SONAME} is {version}, not OpenSSL 3"));
    }
    Ok(LibCrypto { fns, version })
}

/// A digest libcrypto computes here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Digest {
    /// SHA-256 (for RSA's message digest).
    Sha256,
    /// SHA-512.
    Sha512,
    /// MD5.
    Md5,
}

impl Digest {
    fn name(self) -> &'static CStr {
        match self {
            Digest::Sha256 => c"SHA256",
            Digest::Sha512 => c"SHA512",
            Digest::Md5 => c"MD5",
        }
    }
}

/// A cipher libcrypto runs here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cipher {
    /// AES-128-CTR.
    Aes128Ctr,
    /// AES-256-CTR.
    Aes256Ctr,
    /// ChaCha20-Poly1305.
    ChaCha20Poly1305,
}

impl Cipher {
    fn name(self) -> &'static CStr {
        match self {
            Cipher::Aes128Ctr => c"AES-128-CTR",
            Cipher::Aes256Ctr => c"AES-256-CTR",
            Cipher::ChaCha20Poly1305 => c"ChaCha20-Poly1305",
        }
    }
}

/// An `EVP_MD_CTX` with its fetched digest.
struct MdCtx {
    lib: &'static LibCrypto,
    ctx: Ptr,
    md: Ptr,
    out: [u8; 64],
}

// SAFETY: the context is used by one thread at a time (it moves with the op).
unsafe impl Send for MdCtx {}

impl Drop for MdCtx {
    fn drop(&mut self) {
        // SAFETY: a context from EVP_MD_CTX_new, freed once.
        unsafe { (self.lib.fns.md_ctx_free)(self.ctx) }
    }
}

impl MdCtx {
    /// Hashes `data`; the digest is `self.out[..n]`.
    fn hash(&mut self, data: &[u8]) -> Option<usize> {
        let f = &self.lib.fns;
        let mut n: c_uint = 0;
        // SAFETY: a live context, a fetched digest, a buffer of data.len()
        // bytes and an output of 64 bytes (the largest digest here).
        let ok = unsafe {
            (f.digest_init)(self.ctx, self.md, std::ptr::null_mut()) == 1
                && (f.digest_update)(self.ctx, data.as_ptr().cast(), data.len()) == 1
                && (f.digest_final)(self.ctx, self.out.as_mut_ptr(), &mut n) == 1
        };
        ok.then_some(n as usize)
    }
}

/// An `EVP_CIPHER_CTX`.
struct CipherCtx {
    lib: &'static LibCrypto,
    ctx: Ptr,
}

// SAFETY: the context is used by one thread at a time (it moves with the op).
unsafe impl Send for CipherCtx {}

impl Drop for CipherCtx {
    fn drop(&mut self) {
        // SAFETY: a context from EVP_CIPHER_CTX_new, freed once.
        unsafe { (self.lib.fns.cipher_ctx_free)(self.ctx) }
    }
}

impl CipherCtx {
    /// Encrypts (or decrypts) `buf` in place.
    fn update(&mut self, buf: &mut [u8]) -> bool {
        let mut n: c_int = 0;
        let len = c_int::try_from(buf.len()).unwrap_or(c_int::MAX);
        // SAFETY: a live, initialised context; in-place is allowed for
        // stream modes and ChaCha20-Poly1305; n ≤ len bytes are written.
        unsafe {
            (self.lib.fns.cipher_update)(self.ctx, buf.as_mut_ptr(), &mut n, buf.as_ptr(), len) == 1
        }
    }

    /// Sets a new nonce (key and direction kept).
    fn rekey_nonce(&mut self, nonce: &[u8; 12]) -> bool {
        let null = std::ptr::null_mut();
        // SAFETY: a live context with its cipher and key set; -1 keeps the direction.
        unsafe {
            (self.lib.fns.cipher_init)(self.ctx, null, null, std::ptr::null(), nonce.as_ptr(), -1)
                == 1
        }
    }

    /// Finishes an AEAD message; when encrypting, the tag is written to `tag`,
    /// when decrypting, `tag` is checked first.
    fn finish(&mut self, tag: &mut [u8; 16], encrypt: bool) -> bool {
        let f = &self.lib.fns;
        let mut n: c_int = 0;
        let mut tail = [0u8; 32];
        // SAFETY: a live AEAD context; the tag buffer holds 16 bytes; a
        // stream AEAD writes nothing at the end (tail is spare room).
        unsafe {
            if !encrypt
                && (f.cipher_ctrl)(self.ctx, CTRL_AEAD_SET_TAG, 16, tag.as_mut_ptr().cast()) != 1
            {
                return false;
            }
            if (f.cipher_final)(self.ctx, tail.as_mut_ptr(), &mut n) != 1 {
                return false;
            }
            !encrypt
                || (f.cipher_ctrl)(self.ctx, CTRL_AEAD_GET_TAG, 16, tag.as_mut_ptr().cast()) == 1
        }
    }
}

/// An `EVP_PKEY_CTX` with its key.
struct PkeyCtx {
    lib: &'static LibCrypto,
    ctx: Ptr,
    key: Ptr,
}

// SAFETY: the context is used by one thread at a time (it moves with the op).
unsafe impl Send for PkeyCtx {}

impl Drop for PkeyCtx {
    fn drop(&mut self) {
        // SAFETY: a context and a key from EVP_PKEY_CTX_new and
        // d2i_AutoPrivateKey; the context holds its own reference to the key.
        unsafe {
            (self.lib.fns.pkey_ctx_free)(self.ctx);
            (self.lib.fns.pkey_free)(self.key);
        }
    }
}

impl LibCrypto {
    /// The library's version (`OpenSSL 3.0.19 27 Jan 2026`).
    pub fn version(&self) -> &str {
        &self.version
    }

    /// What a row's details call it.
    pub fn label(&self) -> String {
        format!("{} libcrypto (system)", self.version)
    }

    fn md(&'static self, d: Digest) -> anyhow::Result<MdCtx> {
        // SAFETY: fetch by a NUL-terminated name from the default library
        // context; a new context; both checked for NULL.
        let (md, ctx) = unsafe {
            let md = (self.fns.md_fetch)(std::ptr::null_mut(), d.name().as_ptr(), std::ptr::null());
            (md, (self.fns.md_ctx_new)())
        };
        ensure!(!md.is_null(), "libcrypto has no {d:?}");
        ensure!(!ctx.is_null(), "EVP_MD_CTX_new failed");
        Ok(MdCtx {
            lib: self,
            ctx,
            md,
            out: [0; 64],
        })
    }

    /// The digest `d` of `data`.
    pub fn digest(&'static self, d: Digest, data: &[u8]) -> anyhow::Result<Vec<u8>> {
        let mut m = self.md(d)?;
        let n = m
            .hash(data)
            .ok_or_else(|| anyhow!("libcrypto's {d:?} failed"))?;
        Ok(m.out[..n].to_vec())
    }

    /// Hashing a `len`-byte buffer with `d`, one digest per call (init,
    /// update, final on one reused context, as a program hashing many
    /// messages does).
    pub fn digest_op(&'static self, d: Digest, buf: Vec<u8>) -> anyhow::Result<Op> {
        let mut m = self.md(d)?;
        ensure!(m.hash(&buf).is_some(), "libcrypto's {d:?} failed");
        Ok(Box::new(move || {
            black_box(m.hash(black_box(&buf)));
            black_box(&m.out);
        }))
    }

    fn cipher(
        &'static self,
        c: Cipher,
        key: &[u8],
        iv: &[u8],
        encrypt: bool,
    ) -> anyhow::Result<CipherCtx> {
        // SAFETY: fetch by a NUL-terminated name; a new context; both checked.
        let (cipher, ctx) = unsafe {
            let cipher =
                (self.fns.cipher_fetch)(std::ptr::null_mut(), c.name().as_ptr(), std::ptr::null());
            (cipher, (self.fns.cipher_ctx_new)())
        };
        ensure!(!cipher.is_null(), "libcrypto has no {c:?}");
        ensure!(!ctx.is_null(), "EVP_CIPHER_CTX_new failed");
        let cc = CipherCtx { lib: self, ctx };
        // SAFETY: a live context and cipher; the key and IV are the
        // cipher's lengths (32/16 bytes key, 16-byte CTR IV or 12-byte nonce),
        // as the callers pass.
        let ok = unsafe {
            (self.fns.cipher_init)(
                ctx,
                cipher,
                std::ptr::null_mut(),
                key.as_ptr(),
                iv.as_ptr(),
                c_int::from(encrypt),
            )
        };
        ensure!(ok == 1, "libcrypto refused the {c:?} key");
        Ok(cc)
    }

    /// The keystream of a CTR cipher over `buf` (one stream from `iv` on).
    pub fn ctr_apply(
        &'static self,
        c: Cipher,
        key: &[u8],
        iv: &[u8; 16],
        buf: &mut [u8],
    ) -> anyhow::Result<()> {
        let mut cc = self.cipher(c, key, iv, true)?;
        ensure!(cc.update(buf), "libcrypto's {c:?} failed");
        Ok(())
    }

    /// Encrypting `buf` in place with a CTR cipher, one keystream running
    /// on across calls (as an SSH stream does).
    pub fn ctr_op(
        &'static self,
        c: Cipher,
        key: &[u8],
        iv: &[u8; 16],
        mut buf: Vec<u8>,
    ) -> anyhow::Result<Op> {
        let mut cc = self.cipher(c, key, iv, true)?;
        Ok(Box::new(move || {
            black_box(cc.update(&mut buf));
            black_box(&buf);
        }))
    }

    /// Seals `buf` in place with ChaCha20-Poly1305 under `nonce` (no
    /// associated data), returning the tag.
    pub fn chacha_seal(
        &'static self,
        key: &[u8],
        nonce: &[u8; 12],
        buf: &mut [u8],
    ) -> anyhow::Result<[u8; 16]> {
        let mut cc = self.cipher(Cipher::ChaCha20Poly1305, key, nonce, true)?;
        let mut tag = [0u8; 16];
        ensure!(
            cc.update(buf) && cc.finish(&mut tag, true),
            "libcrypto's ChaCha20-Poly1305 seal failed"
        );
        Ok(tag)
    }

    /// Opens `buf` in place, checking `tag`.
    pub fn chacha_open(
        &'static self,
        key: &[u8],
        nonce: &[u8; 12],
        buf: &mut [u8],
        tag: [u8; 16],
    ) -> anyhow::Result<()> {
        let mut cc = self.cipher(Cipher::ChaCha20Poly1305, key, nonce, false)?;
        let mut tag = tag;
        ensure!(cc.update(buf), "libcrypto's ChaCha20-Poly1305 open failed");
        ensure!(cc.finish(&mut tag, false), "the tag did not verify");
        Ok(())
    }

    /// Sealing `buf` in place with ChaCha20-Poly1305, a fresh nonce (from
    /// `nonce(n)`) and a tag per call, as a TLS record is.
    pub fn chacha_op(
        &'static self,
        key: &[u8],
        nonce: fn(u64) -> [u8; 12],
        mut buf: Vec<u8>,
    ) -> anyhow::Result<Op> {
        let mut cc = self.cipher(Cipher::ChaCha20Poly1305, key, &nonce(0), true)?;
        let mut counter = 0u64;
        let mut tag = [0u8; 16];
        Ok(Box::new(move || {
            counter += 1;
            let ok =
                cc.rekey_nonce(&nonce(counter)) && cc.update(&mut buf) && cc.finish(&mut tag, true);
            black_box(ok);
            black_box(&tag);
        }))
    }

    /// A context for RSA PKCS#1 v1.5 (SHA-256) signing (`sign`) or
    /// verifying with the PKCS#8 private key `pkcs8`.
    fn rsa(&'static self, pkcs8: &[u8], sign: bool) -> anyhow::Result<PkeyCtx> {
        let f = &self.fns;
        let mut p = pkcs8.as_ptr();
        // SAFETY: DER of pkcs8.len() bytes; d2i advances p within it.
        let key =
            unsafe { (f.d2i_private_key)(std::ptr::null_mut(), &mut p, pkcs8.len() as c_long) };
        ensure!(!key.is_null(), "libcrypto could not read the RSA key");
        // SAFETY: a live key; the new context takes its own reference.
        let ctx = unsafe { (f.pkey_ctx_new)(key, std::ptr::null_mut()) };
        if ctx.is_null() {
            // SAFETY: the key read above, freed once.
            unsafe { (f.pkey_free)(key) };
            bail!("EVP_PKEY_CTX_new failed");
        }
        let pc = PkeyCtx {
            lib: self,
            ctx,
            key,
        };
        let sha256 = self.md(Digest::Sha256)?.md;
        // SAFETY: a live context; a fetched SHA-256 that outlives it.
        let ok = unsafe {
            (if sign { f.sign_init } else { f.verify_init })(ctx) == 1
                && (f.set_rsa_padding)(ctx, RSA_PKCS1_PADDING) == 1
                && (f.set_signature_md)(ctx, sha256) == 1
        };
        ensure!(
            ok,
            "libcrypto could not set up RSA PKCS#1 v1.5 with SHA-256"
        );
        Ok(pc)
    }

    /// The RSA PKCS#1 v1.5 (SHA-256) signature of `message` with `pkcs8`.
    pub fn rsa_sign(&'static self, pkcs8: &[u8], message: &[u8]) -> anyhow::Result<Vec<u8>> {
        let pc = self.rsa(pkcs8, true)?;
        let digest = self.digest(Digest::Sha256, message)?;
        let mut sig = vec![0u8; 512];
        let mut len = sig.len();
        // SAFETY: a live signing context; sig has len bytes of room.
        let ok = unsafe {
            (self.fns.sign)(
                pc.ctx,
                sig.as_mut_ptr(),
                &mut len,
                digest.as_ptr(),
                digest.len(),
            )
        };
        ensure!(ok == 1, "libcrypto's RSA signature failed");
        sig.truncate(len);
        Ok(sig)
    }

    /// Whether `sig` is a valid RSA PKCS#1 v1.5 (SHA-256) signature of `message`.
    pub fn rsa_verify(
        &'static self,
        pkcs8: &[u8],
        message: &[u8],
        sig: &[u8],
    ) -> anyhow::Result<bool> {
        let pc = self.rsa(pkcs8, false)?;
        let digest = self.digest(Digest::Sha256, message)?;
        // SAFETY: a live verifying context and two buffers of their lengths.
        let r = unsafe {
            (self.fns.verify)(
                pc.ctx,
                sig.as_ptr(),
                sig.len(),
                digest.as_ptr(),
                digest.len(),
            )
        };
        Ok(r == 1)
    }

    /// An RSA signature (`sign`) or verification of `message` per call,
    /// the message hashed each time (as ring's rows do).
    pub fn rsa_op(
        &'static self,
        pkcs8: &[u8],
        message: &'static [u8],
        sig: Vec<u8>,
        sign: bool,
    ) -> anyhow::Result<Op> {
        let pc = self.rsa(pkcs8, sign)?;
        let mut md = self.md(Digest::Sha256)?;
        let lib = self;
        let mut out = vec![0u8; 512];
        Ok(Box::new(move || {
            // The whole context moves in (not only its pointer field).
            let pc = &pc;
            let n = md.hash(black_box(message)).unwrap_or(0);
            let d = &md.out[..n];
            // SAFETY: a live context of the right kind; buffers of their lengths.
            let r = unsafe {
                if sign {
                    let mut len = out.len();
                    (lib.fns.sign)(pc.ctx, out.as_mut_ptr(), &mut len, d.as_ptr(), d.len())
                } else {
                    (lib.fns.verify)(pc.ctx, sig.as_ptr(), sig.len(), d.as_ptr(), d.len())
                }
            };
            black_box(r);
        }))
    }
}
