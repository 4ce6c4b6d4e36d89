//! [`ErrorChain`]: an error with the errors that caused it, on one line, for logs and for the
//! messages that must carry an error as text (a port error that holds a `String`).

use std::error::Error;
use std::fmt;

/// Displays an error and each of its sources, `outer: cause: root cause`, so that what caused
/// it is not lost where only the text travels on.
pub(crate) struct ErrorChain<'a>(pub &'a (dyn Error + 'static));

impl fmt::Display for ErrorChain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)?;
        let mut source = self.0.source();
        while let Some(cause) = source {
            write!(f, ": {cause}")?;
            source = cause.source();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("outer")]
    struct Outer(#[source] std::io::Error);

    #[test]
    fn every_cause_is_shown_in_order() {
        let error = Outer(std::io::Error::other("root"));
        assert_eq!(ErrorChain(&error).to_string(), "outer: root");
        let plain = std::io::Error::other("alone");
        assert_eq!(ErrorChain(&plain).to_string(), "alone");
    }
}
