//! Giving memory back to the system after a burst. glibc's allocator keeps
//! what a thread freed in that thread's arena for reuse and returns it to
//! the system only when the top of the heap is free, so the transient
//! memory of a large answer served on a worker thread would stay counted
//! in the server's RSS long after. Asking it to trim (`malloc_trim`)
//! releases the free pages of every arena.

/// Returns the allocator's free memory to the system, where it can (glibc).
pub(crate) fn give_back() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks the allocator's own free lists.
    unsafe {
        libc::malloc_trim(0);
    }
}
