//! Random numbers for the protocol: the handshake's challenge, `global`'s
//! lock-retry jitter and incarnation. From the kernel (`getrandom`); with
//! no entropy source, from the clock and the address space layout, still
//! unknown to a peer in advance.

/// A random 64-bit number.
pub(crate) fn random_u64() -> u64 {
    let mut bytes = [0u8; 8];
    // SAFETY: getrandom writes at most `bytes.len()` bytes into the buffer.
    let n = unsafe { libc::getrandom(bytes.as_mut_ptr().cast(), bytes.len(), 0) };
    if n == 8 {
        return u64::from_ne_bytes(bytes);
    }
    let t = smarm_core::time::system_now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let a = &bytes as *const _ as u64;
    (t ^ a.rotate_left(17)).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

#[cfg(test)]
mod tests {
    #[test]
    fn draws_differ() {
        let draws: std::collections::BTreeSet<u64> = (0..64).map(|_| super::random_u64()).collect();
        assert!(draws.len() > 60);
    }
}
