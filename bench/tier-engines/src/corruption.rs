//! Small fault-injection checks (20k items): torn tails, truncated files,
//! flipped bytes. Prints what each engine does; asserts nothing.

use crate::engines::{redb_file, FjallEngine, Kind, DATA};
use crate::{fresh_dir, key, self_exe};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

const N: u64 = 20_000;

fn fill_child(kind: &str, dir: &Path) {
    let out = std::process::Command::new(self_exe())
        .args(["fill-child", kind, dir.to_str().unwrap(), &N.to_string()])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("filled"), "{}", String::from_utf8_lossy(&out.stderr));
}

/// Writes keys 0..n in durable batches of 100, then abort()s (no clean close).
pub fn fill_child_main(kind: Kind, dir: &Path, n: u64) {
    let e = crate::engines::open(kind, dir).unwrap();
    let mut rng = crate::Rng::new(5);
    let mut seq: u64 = 1;
    for b in 0..n / 100 {
        let batch: Vec<_> = (0..100)
            .map(|j| {
                let mut v = crate::make_val(100, &mut rng);
                v[20..28].copy_from_slice(
                    &{
                        seq += 1;
                        seq
                    }
                    .to_le_bytes(),
                );
                crate::engines::Put { key: key(b * 100 + j), val: v }
            })
            .collect();
        e.write_batch(&batch, true, crate::engines::Idx::Eager);
    }
    println!("filled");
    use std::io::Write;
    std::io::stdout().flush().unwrap();
    std::process::abort();
}

fn files_with_ext(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().map(|x| x == ext).unwrap_or(false))
        .collect();
    v.sort_by_key(|p| p.file_stem().and_then(|s| s.to_str()).and_then(|s| s.parse::<u64>().ok()).unwrap_or(0));
    v
}

/// Journal files are preallocated (zero-filled); return the end of real data.
fn data_end(p: &Path) -> u64 {
    let b = std::fs::read(p).unwrap();
    b.iter().rposition(|&x| x != 0).map(|i| i as u64 + 1).unwrap_or(0)
}

fn zero_range(p: &Path, from: u64, to: u64) {
    let mut b = std::fs::read(p).unwrap();
    for x in &mut b[from as usize..to as usize] {
        *x = 0;
    }
    std::fs::write(p, b).unwrap();
}

const SPECIAL_KEY: &[u8] = b"special";
const PATTERN: &[u8] = b"SPECIALVALUE-0123456789-SPECIALVALUE-0123456789";

fn special_put() -> crate::engines::Put {
    let mut rng = crate::Rng::new(1);
    let mut v = crate::make_val(0, &mut rng);
    v[20..28].copy_from_slice(&u64::MAX.to_le_bytes());
    v.extend_from_slice(PATTERN);
    crate::engines::Put { key: SPECIAL_KEY.to_vec(), val: v }
}

fn special_verdict(r: Result<Option<Vec<u8>>, String>) -> String {
    match r {
        Ok(Some(v)) if v.ends_with(PATTERN) => "returned the correct value".into(),
        Ok(Some(_)) => "returned a CORRUPTED value silently".into(),
        Ok(None) => "returned not-found".into(),
        Err(e) => format!("returned an error ({})", e.chars().take(60).collect::<String>()),
    }
}

fn truncate_by(p: &Path, by: u64) {
    let f = std::fs::OpenOptions::new().write(true).open(p).unwrap();
    let len = f.metadata().unwrap().len();
    f.set_len(len.saturating_sub(by)).unwrap();
}

fn flip_at(p: &Path, off: u64) {
    let mut b = std::fs::read(p).unwrap();
    b[off as usize] ^= 0x5a;
    std::fs::write(p, b).unwrap();
}

/// Flip one byte inside every occurrence of `pat` in the file; returns count.
fn flip_pattern(p: &Path, pat: &[u8]) -> usize {
    let mut b = std::fs::read(p).unwrap();
    let mut n = 0;
    let mut i = 0;
    while i + pat.len() <= b.len() {
        if &b[i..i + pat.len()] == pat {
            b[i + pat.len() - 1] ^= 0x01; // "...10000" -> "...10001"-ish
            n += 1;
            i += pat.len();
        } else {
            i += 1;
        }
    }
    std::fs::write(p, b).unwrap();
    n
}

#[derive(Default, Debug)]
struct Tally {
    found: u64,
    missing: u64,
    err: u64,
    panic: u64,
    first_err: Option<String>,
}

fn tally<F: Fn(&[u8]) -> Result<bool, String>>(f: F) -> Tally {
    let mut t = Tally::default();
    for i in 0..N {
        let k = key(i);
        match catch_unwind(AssertUnwindSafe(|| f(&k))) {
            Ok(Ok(true)) => t.found += 1,
            Ok(Ok(false)) => t.missing += 1,
            Ok(Err(e)) => {
                t.err += 1;
                t.first_err.get_or_insert(e);
            }
            Err(_) => t.panic += 1,
        }
    }
    t
}

fn fmt_tally(t: &Tally) -> String {
    let mut s = format!("{} found, {} not found, {} errors, {} panics", t.found, t.missing, t.err, t.panic);
    if let Some(e) = &t.first_err {
        s += &format!(" (first error: {})", e.chars().take(60).collect::<String>());
    }
    s
}

fn fjall_check(dir: &Path, marked: bool) -> String {
    match catch_unwind(AssertUnwindSafe(|| FjallEngine::open(dir))) {
        Err(_) => "open PANICKED".into(),
        Ok(Err(e)) => format!("open refused: {e}"),
        Ok(Ok(e)) => {
            let data = e.data();
            let t = tally(|k| data.get(k).map(|v| v.is_some()).map_err(|x| format!("{x:?}")));
            let sp =
                special_verdict(data.get(SPECIAL_KEY).map(|o| o.map(|v| v.to_vec())).map_err(|x| format!("{x:?}")));
            let sp = if marked { format!("; the marked item {sp}") } else { String::new() };
            format!("open ok; gets of {N} written keys: {}{sp}", fmt_tally(&t))
        }
    }
}

fn redb_check(dir: &Path, integrity: bool, marked: bool) -> String {
    let r = catch_unwind(AssertUnwindSafe(|| {
        redb::Builder::new().set_check_integrity_on_open(integrity).create(redb_file(dir))
    }));
    match r {
        Err(_) => "open PANICKED".into(),
        Ok(Err(e)) => format!("open refused: {e}"),
        Ok(Ok(db)) => {
            use redb::ReadableDatabase;
            let get = |k: &[u8]| -> Result<Option<Vec<u8>>, String> {
                let rtx = db.begin_read().map_err(|e| e.to_string())?;
                let tb = rtx.open_table(DATA).map_err(|e| e.to_string())?;
                let r = tb.get(k).map_err(|e| e.to_string())?.map(|g| g.value().to_vec());
                Ok(r)
            };
            let t = tally(|k| get(k).map(|o| o.is_some()));
            let sp = match catch_unwind(AssertUnwindSafe(|| get(SPECIAL_KEY))) {
                Ok(r) => special_verdict(r),
                Err(_) => "PANICKED".into(),
            };
            let sp = if marked { format!("; the marked item {sp}") } else { String::new() };
            format!("open ok; gets of {N} written keys: {}{sp}", fmt_tally(&t))
        }
    }
}

pub fn run(base: &Path) {
    // silence panic messages from catch_unwind'ed engine code
    let prev = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    println!("\n## Fault injection ({N} items written in durable batches of 100 by a child that abort()s)\n");

    // ---- fjall ----
    let d = fresh_dir(base, "fault-fjall-torn");
    fill_child("fjall", &d);
    let last = files_with_ext(&d, "jnl").last().unwrap().clone();
    let end = data_end(&last);
    zero_range(&last, end - 10, end);
    println!(
        "- fjall, journal tail torn (last 10 written bytes zeroed; the journal file is preallocated): {}",
        fjall_check(&d, false)
    );

    for delta in [0u64, 37, 75] {
        let d = fresh_dir(base, "fault-fjall-midjnl");
        fill_child("fjall", &d);
        let last = files_with_ext(&d, "jnl").last().unwrap().clone();
        flip_at(&last, data_end(&last) / 2 + delta);
        println!(
            "- fjall, one byte flipped in the middle of the journal (offset end/2+{delta}): {}",
            fjall_check(&d, false)
        );
    }

    let d = fresh_dir(base, "fault-fjall-sst");
    {
        use crate::engines::Engine;
        let e = FjallEngine::open(&d).unwrap();
        crate::load(&e, N, crate::engines::Idx::Eager, 1);
        e.write_batch(&[special_put()], true, crate::engines::Idx::Off);
        e.shutdown(); // memtables -> SSTs
    }
    // empty the (fully flushed) journal so reads must come from the SSTs
    for j in files_with_ext(&d, "jnl") {
        std::fs::write(&j, b"").unwrap();
    }
    let mut flipped = 0;
    let mut stack = vec![d.join("keyspaces")];
    while let Some(x) = stack.pop() {
        for e in std::fs::read_dir(&x).unwrap().flatten() {
            if e.metadata().unwrap().is_dir() {
                stack.push(e.path())
            } else {
                flipped += flip_pattern(&e.path(), PATTERN)
            }
        }
    }
    println!(
        "- fjall, a byte flipped in the marked item's value inside an SST block ({flipped} copies): {}",
        fjall_check(&d, true)
    );

    // ---- redb ----
    let d = fresh_dir(base, "fault-redb-trunc-clean");
    {
        let e = crate::engines::RedbEngine::open(&d, false).unwrap();
        crate::load(&e, N, crate::engines::Idx::Eager, 1);
    }
    truncate_by(&redb_file(&d), 64 << 10);
    println!("- redb, file truncated by 64 KiB after clean close: {}", redb_check(&d, false, false));

    let d = fresh_dir(base, "fault-redb-trunc-crash");
    fill_child("redb", &d);
    truncate_by(&redb_file(&d), 64 << 10);
    println!("- redb, file truncated by 64 KiB after crash: {}", redb_check(&d, false, false));

    let d = fresh_dir(base, "fault-redb-flip");
    {
        use crate::engines::Engine;
        let e = crate::engines::RedbEngine::open(&d, false).unwrap();
        crate::load(&e, N, crate::engines::Idx::Eager, 1);
        e.write_batch(&[special_put()], true, crate::engines::Idx::Off);
    }
    let n = flip_pattern(&redb_file(&d), PATTERN);
    println!(
        "- redb, a byte flipped in the marked item's value ({n} copies), plain open: {}",
        redb_check(&d, false, true)
    );
    println!("  - same file, open with set_check_integrity_on_open(true): {}", redb_check(&d, true, true));

    let d = fresh_dir(base, "fault-redb-flip-crash");
    fill_child("redb", &d);
    let n = flip_pattern(&redb_file(&d), b"key:000000010000");
    println!(
        "- redb, a byte flipped in key:000000010000 ({n} copies) after a crash (open runs full repair): {}",
        redb_check(&d, false, false)
    );

    for n in [
        "fault-fjall-torn",
        "fault-fjall-midjnl",
        "fault-fjall-sst",
        "fault-redb-trunc-clean",
        "fault-redb-trunc-crash",
        "fault-redb-flip",
        "fault-redb-flip-crash",
    ] {
        let _ = std::fs::remove_dir_all(base.join(n));
    }
    std::panic::set_hook(prev);
}
