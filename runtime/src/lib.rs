//! codemode's sandbox runtime (work in progress).
mod clock;
mod outcome;
mod tool;

pub use clock::TimeoutPause;
pub use outcome::*;
pub use tool::*;
