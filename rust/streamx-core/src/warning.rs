//! Non-fatal diagnostics from the epoch-order code, returned alongside results so the Python
//! layer can surface them the way mosaicml-streaming does.

/// How mosaicml-streaming reports a diagnostic, so the bindings can do the same.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WarningKind {
    /// Raised with `warnings.warn(...)` (a `UserWarning`).
    User,
    /// Emitted with `logger.warning(...)` on the module's logger.
    Log,
}

/// One diagnostic message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Warning {
    /// How streaming emits it.
    pub kind: WarningKind,
    /// The message text.
    pub message: String,
}

impl Warning {
    /// A `warnings.warn` style warning.
    pub fn user(message: impl Into<String>) -> Self {
        Warning {
            kind: WarningKind::User,
            message: message.into(),
        }
    }

    /// A `logger.warning` style warning.
    pub fn log(message: impl Into<String>) -> Self {
        Warning {
            kind: WarningKind::Log,
            message: message.into(),
        }
    }
}

/// Collected warnings, in the order they were raised.
pub type Warnings = Vec<Warning>;
