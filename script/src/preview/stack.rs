//! How deep a script's parse may recurse, and where: on the calling thread up to
//! [`ON_THIS_THREAD_BYTES`], else on a parse thread with a [`PREVIEW_STACK_BYTES`] stack.

/// Stack of the preview thread: room for `MAX_PREVIEW_CODE_BYTES` nesting levels, twice over.
pub(crate) const PREVIEW_STACK_BYTES: usize = 256 << 20;

/// Scripts of at most this many bytes are parsed on the calling thread. A nesting level takes
/// at least one byte, so their parse recurses at most this deep: at ~2 KiB of stack a level
/// (unoptimised), 512 KiB, within a thread's default 2 MiB. Longer ones are handed to a parse
/// thread ([`threads`](super::threads): kept, so that no eval starts a thread of its own).
pub(crate) const ON_THIS_THREAD_BYTES: usize = 256;
