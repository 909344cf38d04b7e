//! The integrity check every IPC benchmark runs during set-up: a sample
//! transfer of pseudo-random bytes whose checksum (or echo) must come back
//! intact, so that a broken transport is an error, not a fast number.

/// Bytes sent by the integrity check for messages of `size` bytes: several
/// messages, at least 4 KiB, at most 2 MiB, a whole number of messages.
pub fn verify_len(size: usize) -> usize {
    let size = size.max(1);
    let want = (size * 4).clamp(4 << 10, 2 << 20);
    want.div_ceil(size) * size
}

/// `len` pseudo-random bytes (xorshift64*, seeded): a dropped, repeated or
/// reordered byte changes the checksum.
pub fn pattern(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        out.extend_from_slice(&x.wrapping_mul(0x2545_f491_4f6c_dd1d).to_le_bytes());
    }
    out.truncate(len);
    out
}

/// FNV-1a, 64 bit: order-sensitive, allocation-free (the peer uses it after fork).
#[derive(Clone, Copy, Debug)]
pub struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    /// Feeds bytes.
    #[inline]
    pub fn update(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }

    /// The checksum so far.
    pub fn finish(&self) -> u64 {
        self.0
    }

    /// The checksum of `bytes`.
    pub fn of(bytes: &[u8]) -> u64 {
        let mut h = Fnv::default();
        h.update(bytes);
        h.finish()
    }
}

/// Why a sample transfer failed the check, as a sentence.
pub fn stream_mismatch(sent: &[u8], got_len: u64, got_sum: u64) -> Option<String> {
    if got_len != sent.len() as u64 {
        return Some(format!(
            "integrity check failed: sent {} bytes, the peer received {got_len}",
            sent.len()
        ));
    }
    if got_sum != Fnv::of(sent) {
        return Some(format!(
            "integrity check failed: the {} bytes the peer received differ from those sent (checksum mismatch)",
            sent.len()
        ));
    }
    None
}

/// Why an echoed message differs from the one sent, if it does.
pub fn echo_mismatch(sent: &[u8], got: &[u8]) -> Option<String> {
    if sent.len() != got.len() {
        return Some(format!(
            "integrity check failed: sent a {}-byte message, {} bytes came back",
            sent.len(),
            got.len()
        ));
    }
    sent.iter().zip(got).position(|(a, b)| a != b).map(|i| {
        format!(
            "integrity check failed: the echoed {}-byte message differs at byte {i}",
            sent.len()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verify_len_is_whole_messages_within_bounds() {
        for size in [1, 8, 64, 512, 1000, 4096, 65536, 1 << 20] {
            let n = verify_len(size);
            assert_eq!(n % size, 0, "{size}");
            assert!(n >= 4 << 10 && n >= 2 * size, "{size}");
            assert!(n <= (2 << 20) + size, "{size}");
        }
    }

    #[test]
    fn checksum_sees_a_dropped_or_swapped_byte() {
        let p = pattern(4096, 7);
        assert_eq!(p.len(), 4096);
        assert_ne!(pattern(64, 7), pattern(64, 8));
        let mut dropped = p.clone();
        dropped.remove(100);
        dropped.push(0);
        assert_ne!(Fnv::of(&p), Fnv::of(&dropped));
        let mut swapped = p.clone();
        swapped.swap(10, 11);
        if p[10] != p[11] {
            assert_ne!(Fnv::of(&p), Fnv::of(&swapped));
        }
        assert!(stream_mismatch(&p, 4096, Fnv::of(&p)).is_none());
        assert!(stream_mismatch(&p, 4095, Fnv::of(&p)).is_some());
        assert!(stream_mismatch(&p, 4096, Fnv::of(&dropped)).is_some());
    }

    #[test]
    fn echo_mismatch_names_the_byte() {
        assert!(echo_mismatch(b"abcd", b"abcd").is_none());
        assert!(echo_mismatch(b"abcd", b"abc").unwrap().contains("3 bytes"));
        assert!(echo_mismatch(b"abcd", b"abXd").unwrap().contains("byte 2"));
    }
}
