//! Files that the caches keep on disk (compiled kernels, tuned schedules), written so that no
//! reader ever sees part of a file and no two writers share one: each file is written whole under a
//! name no other writer uses, then renamed into place (a rename within a directory is atomic), and
//! a file that is read, modified and written is updated under a lock.
//!
//! Names come from a 128-bit hash of the entry's full key, and every entry also holds that key,
//! checked when read: the hash only names the file. FNV-1a rather than a cryptographic hash: a
//! forged or accidental collision can only make a lookup miss (the key differs), never return
//! another entry, and 128 bits make accidental ones negligible.

use std::hash::BuildHasher;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

const FNV128_OFFSET: u128 = 0x6c62272e07bb014262b821756295c58d;
const FNV128_PRIME: u128 = 0x0000000001000000000000000000013b;

/// FNV-1a, 128 bits: stable across Rust versions and platforms, as names on disk must be.
pub fn fnv1a_128(bytes: &[u8]) -> u128 {
    fnv_continue(FNV128_OFFSET, bytes)
}

fn fnv_continue(mut h: u128, bytes: &[u8]) -> u128 {
    for b in bytes {
        h ^= *b as u128;
        h = h.wrapping_mul(FNV128_PRIME);
    }
    h
}

/// The hash of a sequence of byte strings, each preceded by its length, so that different
/// sequences never encode to the same bytes (`["ab", "c"]` and `["a", "bc"]` differ).
pub fn hash128(parts: &[&[u8]]) -> u128 {
    parts.iter().fold(FNV128_OFFSET, |h, p| {
        fnv_continue(fnv_continue(h, &(p.len() as u64).to_le_bytes()), p)
    })
}

/// A name for a temporary file beside `target`, unique to this write: the process, the thread, a
/// counter of this process and random bits (the random part keeps two machines that share the
/// directory, with equal process ids, apart).
pub(crate) fn temp_path(target: &Path) -> PathBuf {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let seq = SEQ.fetch_add(1, Ordering::Relaxed);
    let thread: String = format!("{:?}", std::thread::current().id())
        .chars()
        .filter(char::is_ascii_digit)
        .collect();
    // RandomState is seeded randomly once per process (and varied per thread).
    let random = std::collections::hash_map::RandomState::new().hash_one(seq);
    let name = target
        .file_name()
        .map_or_else(|| "file".into(), |n| n.to_string_lossy());
    target.with_file_name(format!(
        ".{name}.{}-{thread}-{seq}-{random:016x}.tmp",
        std::process::id()
    ))
}

/// Writes `bytes` to `path`: whole, under a unique temporary name, then renamed over `path`.
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = temp_path(path);
    let written = (|| {
        // create_new: a name that exists already is someone else's, never to be overwritten.
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)?;
        f.write_all(bytes)?;
        drop(f);
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// Replaces the text of `path` with `update(old text)` ("" when missing or not UTF-8), with no
/// update lost to a concurrent one: the read, the update and the atomic write happen under an
/// exclusive advisory lock on `path.lock`, held by one thread of one process at a time. Readers
/// need no lock (they see the old file or the new one).
pub(crate) fn update_locked(
    path: &Path,
    update: impl FnOnce(&str) -> String,
) -> std::io::Result<()> {
    // flock(2) locks belong to an open file, so two threads' opens exclude each other on a local
    // disk; but on NFS Linux emulates them with per-process record locks, which a second thread
    // of the same process would get at once. Hence a lock for this process's threads as well.
    static THREADS: Mutex<()> = Mutex::new(());
    let _threads = THREADS.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut lock_name = path.as_os_str().to_owned();
    lock_name.push(".lock");
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(PathBuf::from(lock_name))?;
    // Where the file system has no locks, the update still never corrupts the file (the write is
    // atomic); a concurrent update may then be lost, which a cache survives.
    let _ = lock.lock();
    let old = match std::fs::read(path) {
        Ok(bytes) => String::from_utf8(bytes).unwrap_or_default(),
        Err(e) if e.kind() == ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e),
    };
    let new = update(&old);
    write_atomically(path, new.as_bytes())
    // The lock is released when `lock` is closed, after the rename.
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_is_fnv1a_128_and_pinned() {
        // Test vectors of the FNV reference: a changed hash would orphan every file on disk.
        assert_eq!(fnv1a_128(b""), FNV128_OFFSET);
        assert_eq!(fnv1a_128(b"a"), 0xd228cb696f1a8caf78912b704e4a8964);
        assert_eq!(fnv1a_128(b"foobar"), 0x343e1662793c64bf6f0d3597ba446f18);
        assert_ne!(hash128(&[b"ab", b"c"]), hash128(&[b"a", b"bc"]));
        assert_ne!(hash128(&[b"", b"x"]), hash128(&[b"x", b""]));
        assert_ne!(hash128(&[b"x"]), hash128(&[b"x", b""]));
    }

    #[test]
    fn temporary_names_are_unique_across_threads() {
        let target = Path::new("/some/dir/file.cubin");
        let names: Vec<PathBuf> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8)
                .map(|_| s.spawn(|| (0..200).map(|_| temp_path(target)).collect::<Vec<_>>()))
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap())
                .collect()
        });
        let distinct: std::collections::HashSet<&PathBuf> = names.iter().collect();
        assert_eq!(distinct.len(), names.len());
        assert!(names.iter().all(|n| n.parent() == target.parent()));
    }

    #[test]
    fn atomic_writes_replace_whole_files() {
        let dir = std::env::temp_dir().join(format!("bigfuse-store-{}", std::process::id()));
        let f = dir.join("sub").join("x.txt");
        write_atomically(&f, b"first").unwrap();
        write_atomically(&f, b"second").unwrap();
        assert_eq!(std::fs::read(&f).unwrap(), b"second");
        update_locked(&f, |old| format!("{old}+")).unwrap();
        assert_eq!(std::fs::read(&f).unwrap(), b"second+");
        // No temporary file is left behind.
        let left: Vec<_> = std::fs::read_dir(dir.join("sub"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".tmp"))
            .collect();
        assert!(left.is_empty(), "{left:?}");
        let _ = std::fs::remove_dir_all(dir);
    }
}
