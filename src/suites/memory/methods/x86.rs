//! The x86_64 kernels of the memory methods. Every function needs a
//! 64-byte aligned slice whose length is a multiple of 256 bytes, and the
//! features it is compiled for.

use core::arch::x86_64::*;

/// Sums 64-bit lanes with 16-byte loads, four streams.
#[target_feature(enable = "sse2")]
pub unsafe fn read_sse2(a: &[u8]) -> u64 {
    let p = a.as_ptr().cast::<__m128i>();
    let mut s = [_mm_setzero_si128(); 4];
    let mut i = 0;
    while i < a.len() / 16 {
        for (k, acc) in s.iter_mut().enumerate() {
            *acc = _mm_add_epi64(*acc, unsafe { _mm_load_si128(p.add(i + k)) });
        }
        i += 4;
    }
    let t = _mm_add_epi64(_mm_add_epi64(s[0], s[1]), _mm_add_epi64(s[2], s[3]));
    let mut lanes = [0u64; 2];
    unsafe { _mm_storeu_si128(lanes.as_mut_ptr().cast(), t) };
    lanes[0].wrapping_add(lanes[1])
}

/// Sums 64-bit lanes with 32-byte loads, four streams.
#[target_feature(enable = "avx2")]
pub unsafe fn read_avx2(a: &[u8]) -> u64 {
    let p = a.as_ptr().cast::<__m256i>();
    let mut s = [_mm256_setzero_si256(); 4];
    let mut i = 0;
    while i < a.len() / 32 {
        for (k, acc) in s.iter_mut().enumerate() {
            *acc = _mm256_add_epi64(*acc, unsafe { _mm256_load_si256(p.add(i + k)) });
        }
        i += 4;
    }
    let t = _mm256_add_epi64(_mm256_add_epi64(s[0], s[1]), _mm256_add_epi64(s[2], s[3]));
    let mut lanes = [0u64; 4];
    unsafe { _mm256_storeu_si256(lanes.as_mut_ptr().cast(), t) };
    lanes.iter().fold(0u64, |x, &y| x.wrapping_add(y))
}

/// Sums 64-bit lanes with 64-byte loads, four streams.
#[target_feature(enable = "avx512f")]
pub unsafe fn read_avx512(a: &[u8]) -> u64 {
    let p = a.as_ptr().cast::<__m512i>();
    let mut s = [_mm512_setzero_si512(); 4];
    let mut i = 0;
    while i < a.len() / 64 {
        for (k, acc) in s.iter_mut().enumerate() {
            *acc = _mm512_add_epi64(*acc, unsafe { _mm512_load_si512(p.add(i + k)) });
        }
        i += 4;
    }
    let t = _mm512_add_epi64(_mm512_add_epi64(s[0], s[1]), _mm512_add_epi64(s[2], s[3]));
    _mm512_reduce_add_epi64(t) as u64
}

/// Stores `v` with 16-byte stores, non-temporal if `nt`.
#[target_feature(enable = "sse2")]
pub unsafe fn write_sse2(a: &mut [u8], v: u8, nt: bool) {
    let p = a.as_mut_ptr().cast::<__m128i>();
    let x = _mm_set1_epi8(v as i8);
    for i in 0..a.len() / 16 {
        unsafe {
            if nt {
                _mm_stream_si128(p.add(i), x);
            } else {
                _mm_store_si128(p.add(i), x);
            }
        }
    }
    if nt {
        _mm_sfence();
    }
}

/// Stores `v` with 32-byte stores, non-temporal if `nt`.
#[target_feature(enable = "avx2")]
pub unsafe fn write_avx2(a: &mut [u8], v: u8, nt: bool) {
    let p = a.as_mut_ptr().cast::<__m256i>();
    let x = _mm256_set1_epi8(v as i8);
    for i in 0..a.len() / 32 {
        unsafe {
            if nt {
                _mm256_stream_si256(p.add(i), x);
            } else {
                _mm256_store_si256(p.add(i), x);
            }
        }
    }
    if nt {
        _mm_sfence();
    }
}

/// Stores `v` with 64-byte stores, non-temporal if `nt`.
#[target_feature(enable = "avx512f")]
pub unsafe fn write_avx512(a: &mut [u8], v: u8, nt: bool) {
    let p = a.as_mut_ptr().cast::<__m512i>();
    let x = _mm512_set1_epi32(i32::from_ne_bytes([v; 4]));
    for i in 0..a.len() / 64 {
        unsafe {
            if nt {
                _mm512_stream_si512(p.add(i), x);
            } else {
                _mm512_store_si512(p.add(i), x);
            }
        }
    }
    if nt {
        _mm_sfence();
    }
}

/// Copies with 16-byte loads and stores, non-temporal stores if `nt`.
#[target_feature(enable = "sse2")]
pub unsafe fn copy_sse2(src: &[u8], dst: &mut [u8], nt: bool) {
    let s = src.as_ptr().cast::<__m128i>();
    let d = dst.as_mut_ptr().cast::<__m128i>();
    for i in 0..src.len().min(dst.len()) / 16 {
        unsafe {
            let x = _mm_load_si128(s.add(i));
            if nt {
                _mm_stream_si128(d.add(i), x);
            } else {
                _mm_store_si128(d.add(i), x);
            }
        }
    }
    if nt {
        _mm_sfence();
    }
}

/// Copies with 32-byte loads and stores, non-temporal stores if `nt`.
#[target_feature(enable = "avx2")]
pub unsafe fn copy_avx2(src: &[u8], dst: &mut [u8], nt: bool) {
    let s = src.as_ptr().cast::<__m256i>();
    let d = dst.as_mut_ptr().cast::<__m256i>();
    for i in 0..src.len().min(dst.len()) / 32 {
        unsafe {
            let x = _mm256_load_si256(s.add(i));
            if nt {
                _mm256_stream_si256(d.add(i), x);
            } else {
                _mm256_store_si256(d.add(i), x);
            }
        }
    }
    if nt {
        _mm_sfence();
    }
}

/// Copies with 64-byte loads and stores, non-temporal stores if `nt`.
#[target_feature(enable = "avx512f")]
pub unsafe fn copy_avx512(src: &[u8], dst: &mut [u8], nt: bool) {
    let s = src.as_ptr().cast::<__m512i>();
    let d = dst.as_mut_ptr().cast::<__m512i>();
    for i in 0..src.len().min(dst.len()) / 64 {
        unsafe {
            let x = _mm512_load_si512(s.add(i));
            if nt {
                _mm512_stream_si512(d.add(i), x);
            } else {
                _mm512_store_si512(d.add(i), x);
            }
        }
    }
    if nt {
        _mm_sfence();
    }
}

/// `rep movsb` of `src` into `dst`.
pub unsafe fn rep_movsb(src: &[u8], dst: &mut [u8]) {
    let n = src.len().min(dst.len());
    // SAFETY (caller): both ranges are valid for n bytes; DF is clear per the ABI.
    unsafe {
        core::arch::asm!(
            "rep movsb",
            inout("rcx") n => _,
            inout("rsi") src.as_ptr() => _,
            inout("rdi") dst.as_mut_ptr() => _,
            options(nostack, preserves_flags)
        );
    }
}

/// `rep stosb` of `v` into `a`.
pub unsafe fn rep_stosb(a: &mut [u8], v: u8) {
    // SAFETY (caller): the range is valid; DF is clear per the ABI.
    unsafe {
        core::arch::asm!(
            "rep stosb",
            inout("rcx") a.len() => _,
            inout("rdi") a.as_mut_ptr() => _,
            in("al") v,
            options(nostack, preserves_flags)
        );
    }
}
