//! Distribution capability flags (`DFLAG_*` of the distribution
//! protocol): what a node offers in its handshake, and what it requires.

/// The node is visible (not hidden).
pub const PUBLISHED: u64 = 0x1;
/// Extended references (mandatory since OTP 25).
pub const EXTENDED_REFERENCES: u64 = 0x4;
/// Process monitors across nodes.
pub const DIST_MONITOR: u64 = 0x8;
/// Monitors of a registered name on another node.
pub const DIST_MONITOR_NAME: u64 = 0x20;
/// Fun tags (mandatory since OTP 25).
pub const FUN_TAGS: u64 = 0x10;
/// New fun tags (mandatory since OTP 25).
pub const NEW_FUN_TAGS: u64 = 0x80;
/// Extended pids and ports (mandatory since OTP 25).
pub const EXTENDED_PIDS_PORTS: u64 = 0x100;
/// `EXPORT_EXT` (mandatory since OTP 25).
pub const EXPORT_PTR_TAG: u64 = 0x200;
/// Bit binaries (mandatory since OTP 25).
pub const BIT_BINARIES: u64 = 0x400;
/// `NEW_FLOAT_EXT` (mandatory since OTP 25).
pub const NEW_FLOATS: u64 = 0x800;
/// UTF-8 atoms (mandatory since OTP 25).
pub const UTF8_ATOMS: u64 = 0x10000;
/// Maps (mandatory since OTP 25).
pub const MAP_TAG: u64 = 0x20000;
/// 32-bit creations (mandatory since OTP 25).
pub const BIG_CREATION: u64 = 0x40000;
/// `SEND_SENDER` control messages.
pub const SEND_SENDER: u64 = 0x80000;
/// The version 6 handshake (mandatory since OTP 25).
pub const HANDSHAKE_23: u64 = 0x100_0000;
/// `UNLINK_ID` / `UNLINK_ID_ACK` (mandatory since OTP 26).
pub const UNLINK_ID: u64 = 0x200_0000;
/// Marks a node that has every flag mandatory in OTP 25.
pub const MANDATORY_25_DIGEST: u64 = 0x400_0000;
/// 64-bit pid and port numbers (`V4_NC`, mandatory since OTP 26).
pub const V4_NC: u64 = 1 << 34;
/// `SPAWN_REQUEST` / `SPAWN_REPLY` (`erlang:spawn_request`, so `erpc`
/// and `rpc`).
pub const SPAWN: u64 = 1 << 32;
/// Process aliases (`ALIAS_SEND`).
pub const ALIAS: u64 = 1 << 35;

/// What a peer must offer: every flag mandatory in OTP 25 (Debian
/// bookworm's Erlang) and OTP 26.
pub const MANDATORY: u64 = EXTENDED_REFERENCES
    | FUN_TAGS
    | NEW_FUN_TAGS
    | EXTENDED_PIDS_PORTS
    | EXPORT_PTR_TAG
    | BIT_BINARIES
    | NEW_FLOATS
    | UTF8_ATOMS
    | MAP_TAG
    | BIG_CREATION
    | HANDSHAKE_23;

/// What a smarm node offers.
pub const OFFERED: u64 = MANDATORY
    | PUBLISHED
    | DIST_MONITOR
    | DIST_MONITOR_NAME
    | SEND_SENDER
    | UNLINK_ID
    | MANDATORY_25_DIGEST
    | V4_NC
    | SPAWN
    | ALIAS;

/// A set of capability flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flags(u64);

impl Flags {
    /// The flags a smarm node offers.
    pub const fn offered() -> Flags {
        Flags(OFFERED)
    }

    /// Flags from their bits.
    pub const fn from_bits(bits: u64) -> Flags {
        Flags(bits)
    }

    /// The bits.
    pub const fn bits(self) -> u64 {
        self.0
    }

    /// Whether every flag of `bits` is set.
    pub const fn has(self, bits: u64) -> bool {
        self.0 & bits == bits
    }

    /// The flags both sets have: what a connection may use.
    pub const fn common(self, other: Flags) -> Flags {
        Flags(self.0 & other.0)
    }
}
