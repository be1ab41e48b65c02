//! The protocol's operation codes (`erl_dist_protocol`), and the flags
//! and tags that frame a distribution message.

/// LINK: `{1, FromPid, ToPid}`.
pub const LINK: i32 = 1;
/// SEND: `{2, Unused, ToPid}`, message follows.
pub const SEND: i32 = 2;
/// EXIT: `{3, FromPid, ToPid, Reason}`, a linked process ended.
pub const EXIT: i32 = 3;
/// UNLINK: `{4, FromPid, ToPid}`, the link protocol before OTP 26.
pub const UNLINK: i32 = 4;
/// NODE_LINK: `{5}`.
pub const NODE_LINK: i32 = 5;
/// REG_SEND: `{6, FromPid, Unused, ToName}`, message follows.
pub const REG_SEND: i32 = 6;
/// GROUP_LEADER: `{7, FromPid, ToPid}`.
pub const GROUP_LEADER: i32 = 7;
/// EXIT2: `{8, FromPid, ToPid, Reason}`, `exit(Pid, Reason)`.
pub const EXIT2: i32 = 8;
/// SEND_TT: `{12, Unused, ToPid, TraceToken}`, message follows.
pub const SEND_TT: i32 = 12;
/// EXIT_TT: `{13, FromPid, ToPid, TraceToken, Reason}`.
pub const EXIT_TT: i32 = 13;
/// REG_SEND_TT: `{16, FromPid, Unused, ToName, TraceToken}`, message follows.
pub const REG_SEND_TT: i32 = 16;
/// EXIT2_TT: `{18, FromPid, ToPid, TraceToken, Reason}`.
pub const EXIT2_TT: i32 = 18;
/// MONITOR_P: `{19, FromPid, ToProc, Ref}` (ToProc a pid or a name).
pub const MONITOR_P: i32 = 19;
/// DEMONITOR_P: `{20, FromPid, ToProc, Ref}`.
pub const DEMONITOR_P: i32 = 20;
/// MONITOR_P_EXIT: `{21, FromProc, ToPid, Ref, Reason}`.
pub const MONITOR_P_EXIT: i32 = 21;
/// SEND_SENDER: `{22, FromPid, ToPid}`, message follows.
pub const SEND_SENDER: i32 = 22;
/// SEND_SENDER_TT: `{23, FromPid, ToPid, TraceToken}`, message follows.
pub const SEND_SENDER_TT: i32 = 23;
/// PAYLOAD_EXIT: `{24, FromPid, ToPid}`, reason follows.
pub const PAYLOAD_EXIT: i32 = 24;
/// PAYLOAD_EXIT_TT: `{25, FromPid, ToPid, TraceToken}`, reason follows.
pub const PAYLOAD_EXIT_TT: i32 = 25;
/// PAYLOAD_EXIT2: `{26, FromPid, ToPid}`, reason follows.
pub const PAYLOAD_EXIT2: i32 = 26;
/// PAYLOAD_EXIT2_TT: `{27, FromPid, ToPid, TraceToken}`, reason follows.
pub const PAYLOAD_EXIT2_TT: i32 = 27;
/// PAYLOAD_MONITOR_P_EXIT: `{28, FromProc, ToPid, Ref}`, reason follows.
pub const PAYLOAD_MONITOR_P_EXIT: i32 = 28;
/// SPAWN_REQUEST: `{29, ReqId, From, GroupLeader, {M, F, Arity}, Opts}`,
/// the argument list follows.
pub const SPAWN_REQUEST: i32 = 29;
/// SPAWN_REQUEST_TT: SPAWN_REQUEST with a trace token last.
pub const SPAWN_REQUEST_TT: i32 = 30;
/// SPAWN_REPLY: `{31, ReqId, To, Flags, Result}`.
pub const SPAWN_REPLY: i32 = 31;
/// SPAWN_REPLY_TT: SPAWN_REPLY with a trace token last.
pub const SPAWN_REPLY_TT: i32 = 32;
/// ALIAS_SEND: `{33, FromPid, Alias}`, message follows.
pub const ALIAS_SEND: i32 = 33;
/// ALIAS_SEND_TT: `{34, FromPid, Alias, TraceToken}`, message follows.
pub const ALIAS_SEND_TT: i32 = 34;
/// UNLINK_ID: `{35, Id, FromPid, ToPid}`.
pub const UNLINK_ID: i32 = 35;
/// UNLINK_ID_ACK: `{36, Id, FromPid, ToPid}`.
pub const UNLINK_ID_ACK: i32 = 36;

/// Every operation code the protocol defines.
pub const DEFINED: [i32; 30] = [
    LINK,
    SEND,
    EXIT,
    UNLINK,
    NODE_LINK,
    REG_SEND,
    GROUP_LEADER,
    EXIT2,
    SEND_TT,
    EXIT_TT,
    REG_SEND_TT,
    EXIT2_TT,
    MONITOR_P,
    DEMONITOR_P,
    MONITOR_P_EXIT,
    SEND_SENDER,
    SEND_SENDER_TT,
    PAYLOAD_EXIT,
    PAYLOAD_EXIT_TT,
    PAYLOAD_EXIT2,
    PAYLOAD_EXIT2_TT,
    PAYLOAD_MONITOR_P_EXIT,
    SPAWN_REQUEST,
    SPAWN_REQUEST_TT,
    SPAWN_REPLY,
    SPAWN_REPLY_TT,
    ALIAS_SEND,
    ALIAS_SEND_TT,
    UNLINK_ID,
    UNLINK_ID_ACK,
];

/// A distribution message's type byte: no atom cache, the control and
/// its message follow as plain external terms.
pub const PASS_THROUGH: u8 = 112;

/// SPAWN_REPLY's flag: the link was set up.
pub const SPAWN_REPLY_LINKED: u32 = 1;
/// SPAWN_REPLY's flag: the monitor was set up.
pub const SPAWN_REPLY_MONITORED: u32 = 2;
