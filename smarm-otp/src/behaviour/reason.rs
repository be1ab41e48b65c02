//! Why a behaviour did not start ([`StartError`]) or why it stopped
//! ([`StopReason`]): shared by gen_server, typed actors and supervisors.

use super::CallError;
use crate::registry::RegisterError;
use smarm_core::{DownReason, Pid, SpawnError};
use thiserror::Error;

/// Why a server stopped.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum StopReason {
    /// Its work is done: a normal exit.
    #[error("normal")]
    Normal,
    /// It was asked to stop ([`GenServerRef::shutdown`](crate::gen_server::GenServerRef::shutdown), a stop request,
    /// its supervisor): a normal exit.
    #[error("shutdown")]
    Shutdown,
    /// It failed: an abnormal exit (monitors see it as a panic, a transient
    /// child is restarted).
    #[error("error: {0}")]
    Error(String),
    /// It ends with this exit reason, as Erlang's `{stop, Reason, State}`
    /// with a reason of the runtime's own: a supervisor that gives up ends
    /// with `Exit(DownReason::Shutdown)`, which its links see as abnormal
    /// but its own supervisor does not count as a failure, and no crash
    /// report is made. `Exit(DownReason::Exit)` is a normal exit.
    #[error("exit: {0}")]
    Exit(DownReason),
}

impl StopReason {
    /// Whether this stop is a failure: [`StopReason::Error`], or an
    /// [`Exit`](StopReason::Exit) with a reason other than a normal exit or
    /// a shutdown.
    pub fn is_abnormal(&self) -> bool {
        match self {
            StopReason::Error(_) => true,
            StopReason::Exit(reason) => !matches!(reason, DownReason::Exit | DownReason::Shutdown),
            StopReason::Normal | StopReason::Shutdown => false,
        }
    }
}

/// Why [`GenServer::init`](crate::gen_server::GenServer::init) refused to start: any error.
pub type InitError = Box<dyn std::error::Error + Send + Sync>;

/// Why a server did not start.
#[derive(Debug, Error)]
pub enum StartError {
    /// [`GenServer::init`](crate::gen_server::GenServer::init) returned this error.
    #[error("smarm: gen_server init failed: {0}")]
    Init(InitError),
    /// [`GenServer::init`](crate::gen_server::GenServer::init) panicked (the panic went to the server's
    /// monitors and links).
    #[error("smarm: gen_server init panicked")]
    InitPanicked,
    /// The name is held by another live actor.
    #[error("smarm: cannot start gen_server {name:?}: the name is held by live actor {holder}")]
    NameTaken {
        /// The name asked for.
        name: &'static str,
        /// Who holds it.
        holder: Pid,
    },
    /// The name could not be registered for another reason.
    #[error(transparent)]
    Register(RegisterError),
    /// The server's actor could not be created.
    #[error(transparent)]
    Spawn(#[from] SpawnError),
    /// The supervisor asked to start a child is not running.
    #[error("smarm: cannot start a child: the supervisor is not running")]
    SupervisorDown,
    /// A supervisor's child did not start (so neither did the supervisor,
    /// when it was starting).
    #[error("smarm: child {id:?} failed to start: {error}")]
    Child {
        /// The child's id.
        id: String,
        /// Why it did not start.
        error: Box<StartError>,
    },
}

impl From<RegisterError> for StartError {
    /// A taken name is [`StartError::NameTaken`]; the rest,
    /// [`StartError::Register`].
    fn from(e: RegisterError) -> Self {
        match e {
            RegisterError::NameTaken { name, holder } => StartError::NameTaken { name, holder },
            other => StartError::Register(other),
        }
    }
}

/// Why a `replace_state` did not replace the state.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ReplaceStateError {
    /// The call to the process failed.
    #[error(transparent)]
    Call(#[from] CallError),
    /// The replacing function panicked; the process kept its state as it
    /// was and goes on.
    #[error("smarm: replace_state: the function panicked ({0}); the state is unchanged")]
    Panicked(String),
}
