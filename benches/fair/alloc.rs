//! The allocator every side runs on: the system's, or mimalloc with `FAIR_ALLOC=mimalloc`.

use std::sync::atomic::{AtomicU8, Ordering};

/// The allocator chosen once for the whole process (see [`chosen`]).
pub struct Chosen;

/// 0: not read yet, 1: the system's, 2: mimalloc.
static CHOSEN: AtomicU8 = AtomicU8::new(0);

/// The allocator chosen for the process, read from the environment at the first allocation
/// without allocating.
fn chosen() -> &'static dyn std::alloc::GlobalAlloc {
    let mut choice = CHOSEN.load(Ordering::Relaxed);
    if choice == 0 {
        // SAFETY: getenv with a NUL-terminated name; no thread of this program changes the
        // environment.
        let value = unsafe { libc::getenv(c"FAIR_ALLOC".as_ptr()) };
        let mimalloc = !value.is_null() && unsafe { std::ffi::CStr::from_ptr(value) } == c"mimalloc";
        choice = if mimalloc { 2 } else { 1 };
        CHOSEN.store(choice, Ordering::Relaxed);
    }
    if choice == 2 {
        &mimalloc::MiMalloc
    } else {
        &std::alloc::System
    }
}

/// The allocator's name, for the tables' headers.
pub fn name() -> &'static str {
    let _ = chosen();
    if CHOSEN.load(Ordering::Relaxed) == 2 {
        "mimalloc"
    } else {
        "system (glibc)"
    }
}

// SAFETY: every call goes to the one allocator chosen once for the whole process.
unsafe impl std::alloc::GlobalAlloc for Chosen {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        unsafe { chosen().alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        unsafe { chosen().dealloc(ptr, layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
        unsafe { chosen().alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        unsafe { chosen().realloc(ptr, layout, new_size) }
    }
}
