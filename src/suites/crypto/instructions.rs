//! The CPU's crypto instructions, read from the flags the host module took
//! from /proc/cpuinfo (x86 `flags`, Arm `Features`).
//!
//! The libraries choose their code at run time from the same CPU bits, so
//! these flags say which paths were open to them: AES-NI and PCLMULQDQ (or
//! Armv8 AES and PMULL) for AES-GCM, VAES and VPCLMULQDQ for its wide
//! version, the SHA extensions for SHA-1 and SHA-256. They do not prove
//! which path a library took; the rates do that, against `openssl speed`.

/// One crypto instruction family: its /proc/cpuinfo flag and its usual name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Insn {
    /// The flag as /proc/cpuinfo spells it.
    pub flag: &'static str,
    /// The name people use for it.
    pub name: &'static str,
}

const fn insn(flag: &'static str, name: &'static str) -> Insn {
    Insn { flag, name }
}

/// x86 flags that crypto code uses, in the order they are reported.
const X86: [Insn; 7] = [
    insn("aes", "AES-NI"),
    insn("pclmulqdq", "PCLMULQDQ"),
    insn("vaes", "VAES"),
    insn("vpclmulqdq", "VPCLMULQDQ"),
    insn("sha_ni", "SHA extensions"),
    insn("avx2", "AVX2"),
    insn("avx512f", "AVX-512"),
];

/// Arm `Features` that crypto code uses.
const ARM: [Insn; 6] = [
    insn("aes", "Armv8 AES"),
    insn("pmull", "PMULL"),
    insn("sha1", "Armv8 SHA-1"),
    insn("sha2", "Armv8 SHA-256"),
    insn("sha512", "Armv8 SHA-512"),
    insn("asimd", "NEON"),
];

/// What a row's speed hangs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Needs {
    /// AES rounds (AES-NI, Armv8 AES).
    Aes,
    /// SHA-256 rounds (x86 SHA extensions, Armv8 SHA2).
    Sha256,
    /// SHA-1 rounds (x86 SHA extensions, Armv8 SHA1).
    Sha1,
    /// SHA-512 rounds (Armv8.2 SHA512; x86 has none in this list).
    Sha512,
    /// Nothing dedicated: general vector or scalar code.
    General,
}

/// The instruction families the flags of a host show, split by architecture.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuCrypto {
    /// The flags were an x86 `flags` line (else Arm `Features` or nothing).
    pub x86: bool,
    /// The crypto-relevant flags present, in the table's order.
    pub present: Vec<Insn>,
    /// The crypto-relevant flags of the architecture that are absent.
    pub absent: Vec<Insn>,
}

impl CpuCrypto {
    /// Reads the host's flags for `arch` (`x86_64`, `aarch64`...).
    pub fn of(arch: &str, flags: &str) -> CpuCrypto {
        let x86 = arch.starts_with("x86") || arch == "i686";
        let table: &[Insn] = if x86 {
            &X86
        } else if arch.starts_with("aarch64") || arch.starts_with("arm") {
            &ARM
        } else {
            &[]
        };
        let have: Vec<&str> = flags.split_whitespace().collect();
        let (present, absent) = table.iter().partition(|i| have.contains(&i.flag));
        CpuCrypto {
            x86,
            present,
            absent,
        }
    }

    /// True when the flag is present.
    pub fn has(&self, flag: &str) -> bool {
        self.present.iter().any(|i| i.flag == flag)
    }

    /// True when the CPU has the instructions a row's fast path needs.
    pub fn supports(&self, needs: Needs) -> bool {
        match needs {
            Needs::Aes if self.x86 => self.has("aes") && self.has("pclmulqdq"),
            Needs::Aes => self.has("aes") && self.has("pmull"),
            Needs::Sha256 if self.x86 => self.has("sha_ni"),
            Needs::Sha256 => self.has("sha2"),
            Needs::Sha1 if self.x86 => self.has("sha_ni"),
            Needs::Sha1 => self.has("sha1"),
            Needs::Sha512 => !self.x86 && self.has("sha512"),
            Needs::General => true,
        }
    }

    /// The flags a row can use that are present (space-separated, as
    /// /proc/cpuinfo spells them): its details' `cpu_instructions`.
    pub fn used_by(&self, needs: Needs) -> String {
        let wanted: &[&str] = match (needs, self.x86) {
            (Needs::Aes, true) => &["aes", "pclmulqdq", "vaes", "vpclmulqdq", "avx2", "avx512f"],
            (Needs::Aes, false) => &["aes", "pmull"],
            (Needs::Sha256 | Needs::Sha1, true) => &["sha_ni", "avx2"],
            (Needs::Sha256, false) => &["sha2"],
            (Needs::Sha1, false) => &["sha1"],
            (Needs::Sha512, true) => &["avx2"],
            (Needs::Sha512, false) => &["sha512"],
            (Needs::General, true) => &["avx2", "avx512f"],
            (Needs::General, false) => &["asimd"],
        };
        let f: Vec<&str> = self
            .present
            .iter()
            .map(|i| i.flag)
            .filter(|f| wanted.contains(f))
            .collect();
        f.join(" ")
    }

    /// The present families by name ("AES-NI, PCLMULQDQ, SHA extensions").
    pub fn present_names(&self) -> String {
        let n: Vec<&str> = self.present.iter().map(|i| i.name).collect();
        n.join(", ")
    }

    /// The absent families by name.
    pub fn absent_names(&self) -> String {
        let n: Vec<&str> = self.absent.iter().map(|i| i.name).collect();
        n.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn x86_flags_give_the_families_present_and_absent() {
        let c = CpuCrypto::of(
            "x86_64",
            "fpu sse2 aes pclmulqdq avx2 vaes vpclmulqdq sha_ni hypervisor",
        );
        assert!(c.x86);
        assert_eq!(
            c.present_names(),
            "AES-NI, PCLMULQDQ, VAES, VPCLMULQDQ, SHA extensions, AVX2"
        );
        assert_eq!(c.absent_names(), "AVX-512");
        assert!(c.supports(Needs::Aes) && c.supports(Needs::Sha256));
        assert!(!c.supports(Needs::Sha512), "x86 has no SHA-512 rounds here");
        assert_eq!(c.used_by(Needs::Aes), "aes pclmulqdq vaes vpclmulqdq avx2");
        assert_eq!(c.used_by(Needs::Sha1), "sha_ni avx2");
    }

    #[test]
    fn a_cpu_without_aes_ni_is_said_so() {
        let c = CpuCrypto::of("x86_64", "fpu sse2 ssse3 avx2");
        assert!(!c.supports(Needs::Aes));
        assert!(!c.supports(Needs::Sha256));
        assert!(c.supports(Needs::General));
        assert_eq!(c.used_by(Needs::Aes), "avx2");
        // "aes" must match a whole flag, not a part of another one.
        assert!(!CpuCrypto::of("x86_64", "vaes").has("aes"));
    }

    #[test]
    fn arm_features_use_the_arm_names() {
        let c = CpuCrypto::of("aarch64", "fp asimd evtstrm aes pmull sha1 sha2 crc32");
        assert!(!c.x86);
        assert_eq!(
            c.present_names(),
            "Armv8 AES, PMULL, Armv8 SHA-1, Armv8 SHA-256, NEON"
        );
        assert!(c.supports(Needs::Aes) && c.supports(Needs::Sha1));
        assert!(!c.supports(Needs::Sha512));
        let none = CpuCrypto::of("riscv64", "whatever");
        assert!(none.present.is_empty() && none.absent.is_empty());
    }
}
