//! Asking a human: one [`Ask`] — an approval request, a step of a `hitl_request` question, or an
//! upstream server's own form — put through one [`Asker`] trait, answered by a [`Reply`].
//!
//! The policy layer asks about a call it may not decide alone ([`Ask::approval`], its form
//! [`approval_question`], the answer read back by [`approval_of`]); the host implements
//! [`Asker`] for each channel a human can be reached on (the MCP client, the terminal, the HTTP
//! approval API) and for the decorators that stack on them.
//!
//! Glossary: an ask is *parked* with its eval (saved to the store, the eval's memory freed); an
//! answer given meanwhile is *taken* when the eval *resumes* and asks again under the same id
//! ([`Asker::taken_while_parked`]).

mod asker;
mod form;

pub use asker::{Answer, Ask, AskKind, Asker, NoAsker, Question, Reply};
