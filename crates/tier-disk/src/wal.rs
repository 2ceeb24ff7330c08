//! The write-ahead log: `DIR/wal/<number>.wal`, the only thing a write waits for.
//!
//! The committer appends each batch of changes as one frame (`magic`, payload length,
//! CRC-32 of the payload, CRC-32 of the header, payload) with one `write`, and in sync mode fsyncs it; that is
//! what a client's acknowledgement waits for. The changes then stay in memory (the
//! staged map, `pending.rs`) until the ingest thread (`ingest.rs`) has written the
//! newest state of each key into fjall as sorted tables, and a file whose every change is
//! in fjall is deleted. So a set costs an append to this log instead of an insert into
//! fjall's memtable plus a write to fjall's journal, and a key rewritten many times
//! between ingestions reaches fjall's tables once (Bitcask and RocksDB's WAL in one).
//!
//! In sync mode a file is written full of zeros before it is used (`spare.rs`), so its
//! fsyncs need not write its size; zeros after the last frame are the end of a file.
//!
//! At open, the files are replayed in order. A frame cut short by a crash at the end of
//! a file (the write never completed, so it was never acknowledged in sync mode) is
//! dropped and logged; damage anywhere else refuses the start, as a damaged fjall
//! journal does.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::entry::Entry;
use crate::pending::Op;

/// First four bytes of every frame.
const MAGIC: [u8; 4] = *b"SQW1";
/// Bytes before a frame's payload: magic, payload length, CRC-32 of the payload, CRC-32
/// of those 12 bytes (so a damaged length is damage, not a frame "cut short").
const FRAME_HEADER: usize = 16;
/// Largest payload a frame may claim (a batch is bounded by the queue's 64 MiB).
const MAX_PAYLOAD: usize = 256 << 20;

const PUT: u8 = 1;
const PUT_REPLACED: u8 = 2;
const DELETE: u8 = 3;
const FLUSH: u8 = 4;
const FLUSH_AT: u8 = 5;

/// Size of a log file at which the staged states are ingested (so the file can go).
pub const FILE_LIMIT: u64 = 64 << 20;
/// Size of a prepared file: [`FILE_LIMIT`] and room for the batch that crosses it.
const PREPARED_SIZE: u64 = FILE_LIMIT + (8 << 20);

/// The log's directory inside the data directory.
pub fn dir(data_dir: &Path) -> PathBuf {
    data_dir.join("wal")
}

fn file_path(dir: &Path, no: u64) -> PathBuf {
    dir.join(format!("{no:020}.wal"))
}

/// Append `batch` to `out` as one frame.
pub fn encode_frame(batch: &[(u64, Op)], out: &mut Vec<u8>) {
    let start = out.len();
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&[0; 12]);
    for (seq, op) in batch {
        match op {
            Op::Put(e, replaced) => {
                out.push(if *replaced { PUT_REPLACED } else { PUT });
                out.extend_from_slice(&seq.to_le_bytes());
                out.extend_from_slice(e.bytes());
            }
            Op::Delete(e) => {
                out.push(DELETE);
                out.extend_from_slice(&seq.to_le_bytes());
                out.extend_from_slice(e.bytes());
            }
            Op::Flush => {
                out.push(FLUSH);
                out.extend_from_slice(&seq.to_le_bytes());
            }
            Op::FlushAt(at) => {
                out.push(FLUSH_AT);
                out.extend_from_slice(&seq.to_le_bytes());
                out.extend_from_slice(&at.to_le_bytes());
            }
        }
    }
    let payload = &out[start + FRAME_HEADER..];
    let (len, crc) = (payload.len() as u32, crc32fast::hash(payload));
    out[start + 4..start + 8].copy_from_slice(&len.to_le_bytes());
    out[start + 8..start + 12].copy_from_slice(&crc.to_le_bytes());
    let header_crc = crc32fast::hash(&out[start..start + 12]);
    out[start + 12..start + 16].copy_from_slice(&header_crc.to_le_bytes());
}

/// Decode one frame's payload (its checksum already verified).
fn decode_payload(mut p: &[u8]) -> Result<Vec<(u64, Op)>, String> {
    fn take<'a>(p: &mut &'a [u8], n: usize) -> Result<&'a [u8], String> {
        if p.len() < n {
            return Err("change cut short inside a frame".into());
        }
        let (a, b) = p.split_at(n);
        *p = b;
        Ok(a)
    }
    let u64_of = |b: &[u8]| u64::from_le_bytes(b.try_into().expect("8 bytes"));
    let mut ops = Vec::new();
    while !p.is_empty() {
        let kind = take(&mut p, 1)?[0];
        let seq = u64_of(take(&mut p, 8)?);
        let op = match kind {
            PUT | PUT_REPLACED => Op::Put(Entry::take(&mut p, true)?, kind == PUT_REPLACED),
            DELETE => Op::Delete(Entry::take(&mut p, false)?),
            FLUSH => Op::Flush,
            FLUSH_AT => Op::FlushAt(u64_of(take(&mut p, 8)?) as i64),
            k => return Err(format!("unknown change kind {k}")),
        };
        ops.push((seq, op));
    }
    Ok(ops)
}

/// What reading one file's bytes found.
#[derive(Debug)]
pub struct Scan {
    /// The changes, in order.
    pub ops: Vec<(u64, Op)>,
    /// Length of the intact frames (where the next append goes).
    pub good_len: u64,
    /// A frame cut short at the end (a write a crash interrupted), with its offset.
    pub torn_at: Option<u64>,
}

/// Read a file's frames. Zeros after the last frame are the end of the file (a
/// prepared file's unused part, or space the filesystem allocated for a write that never
/// landed). A damaged frame followed by more data is an error; a damaged or short frame
/// followed by nothing but zeros is a torn write (`torn_at`).
pub fn scan(bytes: &[u8]) -> Result<Scan, String> {
    let mut ops = Vec::new();
    let mut at = 0usize;
    let zeros_from = |from: usize| bytes.get(from..).is_none_or(all_zero);
    while at < bytes.len() {
        let rest = &bytes[at..];
        let torn = |ops| Ok(Scan { ops, good_len: at as u64, torn_at: Some(at as u64) });
        if rest[0] == 0 && zeros_from(at) {
            return Ok(Scan { ops, good_len: at as u64, torn_at: None });
        }
        if rest.len() < FRAME_HEADER {
            return torn(ops);
        }
        let crc = u32::from_le_bytes(rest[8..12].try_into().expect("4 bytes"));
        let bad = |why: &str| Err(format!("damaged frame at byte {at}: {why}"));
        let Some(len) = payload_len(&rest[..FRAME_HEADER]) else {
            // A header partly written, with nothing after it: torn.
            if zeros_from(at + FRAME_HEADER) {
                return torn(ops);
            }
            return bad(if rest[..4] != MAGIC { "no frame marker" } else { "header checksum mismatch" });
        };
        if len > MAX_PAYLOAD {
            return bad("impossible length");
        }
        let end = FRAME_HEADER + len;
        if rest.len() < end {
            return torn(ops);
        }
        let payload = &rest[FRAME_HEADER..end];
        if crc32fast::hash(payload) != crc {
            // A frame whose changes were cut short is followed by nothing but zeros.
            return if zeros_from(at + end) { torn(ops) } else { bad("checksum mismatch") };
        }
        ops.extend(decode_payload(payload).map_err(|e| format!("damaged frame at byte {at}: {e}"))?);
        at += end;
    }
    Ok(Scan { ops, good_len: at as u64, torn_at: None })
}

/// The files of the log, oldest first, with their numbers.
pub fn files(dir: &Path) -> Result<Vec<(u64, PathBuf)>, String> {
    let mut out = Vec::new();
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(format!("cannot list {}: {e}", dir.display())),
    };
    for e in rd {
        let e = e.map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
        let name = e.file_name();
        let Some(no) = name.to_str().and_then(|n| n.strip_suffix(".wal")).and_then(|n| n.parse().ok()) else {
            continue;
        };
        out.push((no, e.path()));
    }
    out.sort();
    Ok(out)
}

/// The payload length a frame header (its first [`FRAME_HEADER`] bytes) gives, if it
/// has the frame marker and its checksum matches.
fn payload_len(h: &[u8]) -> Option<usize> {
    let crc = u32::from_le_bytes(h[12..16].try_into().expect("4 bytes"));
    (h[..4] == MAGIC && crc32fast::hash(&h[..12]) == crc)
        .then(|| u32::from_le_bytes(h[4..8].try_into().expect("4 bytes")) as usize)
}

/// Whether `b` holds nothing but zeros (compared a block at a time: memcmp speed).
fn all_zero(b: &[u8]) -> bool {
    const ZEROS: [u8; 4096] = [0; 4096];
    b.chunks(ZEROS.len()).all(|c| c == &ZEROS[..c.len()])
}

/// A log file's bytes without the zeros at its end (a prepared file is mostly zeros: they
/// are looked at a block at a time from the end, not held in memory), except those that
/// end its last frame (a frame's length says how far it runs).
fn read_frames(path: &Path) -> std::io::Result<Vec<u8>> {
    let f = File::open(path)?;
    let file_len = f.metadata()?.len();
    let mut end = file_len;
    let mut block = vec![0u8; 1 << 20];
    while end > 0 {
        let n = (end - end.saturating_sub(block.len() as u64)) as usize;
        let b = &mut block[..n];
        f.read_exact_at(b, end - n as u64)?;
        if all_zero(b) {
            end -= n as u64;
            continue;
        }
        let i = b.iter().rposition(|&x| x != 0).expect("a non-zero byte");
        end = end - n as u64 + i as u64 + 1;
        break;
    }
    let mut bytes = vec![0u8; end as usize];
    f.read_exact_at(&mut bytes, 0)?;
    // Give the last frame back the zeros it ends with (the rest of the file is zeros).
    let mut at = 0usize;
    while at + FRAME_HEADER <= bytes.len() {
        let Some(len) = payload_len(&bytes[at..at + FRAME_HEADER]) else { break };
        let frame_end = at + FRAME_HEADER + len;
        if frame_end > bytes.len() {
            bytes.resize(frame_end.min(file_len as usize), 0);
            break;
        }
        at = frame_end;
    }
    Ok(bytes)
}

/// What replaying the log at open found.
#[derive(Debug, Default)]
pub struct Replay {
    /// Every change in the log, in order (the caller skips those already in fjall).
    pub ops: Vec<(u64, Op)>,
    /// Torn frames dropped: (file, offset).
    pub torn: Vec<(PathBuf, u64)>,
    /// Number the next file gets.
    pub next_file: u64,
    /// Each file's number and the highest sequence number in it.
    pub files: Vec<(u64, u64)>,
}

/// Read every file of the log, changing nothing (a damaged directory is left as it
/// was). Any damage but a torn tail is an error naming the file.
pub fn replay(dir: &Path) -> Result<Replay, String> {
    let mut r = Replay { next_file: 1, ..Replay::default() };
    for (no, path) in files(dir)? {
        let bytes = read_frames(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let s = scan(&bytes).map_err(|e| format!("{}: {e}", path.display()))?;
        if let Some(at) = s.torn_at {
            r.torn.push((path.clone(), at));
        }
        r.files.push((no, s.ops.iter().map(|(seq, _)| *seq).max().unwrap_or(0)));
        r.ops.extend(s.ops);
        r.next_file = no + 1;
    }
    Ok(r)
}

impl Replay {
    /// Cut the torn tails off their files, so that the next append does not follow
    /// garbage (once the whole directory was found sound).
    pub fn cut_torn_tails(&self) -> Result<(), String> {
        for (path, at) in &self.torn {
            let f = OpenOptions::new().write(true).open(path).map_err(|e| format!("{}: {e}", path.display()))?;
            f.set_len(*at).and_then(|_| f.sync_all()).map_err(|e| format!("{}: {e}", path.display()))?;
        }
        Ok(())
    }
}

/// fdatasync one file of the log.
pub fn sync_file(f: &File) -> Result<(), String> {
    f.sync_data().map_err(|e| format!("write-ahead log fsync: {e}"))
}

/// The file being appended to, and the files before it not yet deletable.
pub struct Wal {
    dir: PathBuf,
    /// Shared with [`Wal::sync_handle`]'s callers, who fsync without holding the log.
    file: Option<Arc<File>>,
    no: u64,
    /// Bytes of frames in the current file (where the next one is written).
    len: u64,
    /// Whether the current file was prepared (written full of zeros ahead of time).
    prepared: bool,
    spares: crate::spare::Spares,
    /// Files before the current one, with the highest sequence number each holds.
    sealed: Vec<(u64, u64)>,
    /// Highest sequence number in the current file (0: none).
    max_seq: u64,
    buf: Vec<u8>,
}

impl Wal {
    /// Start a new file numbered `next` (older files stay until [`Wal::remove_upto`]);
    /// with `prepare` (sync durability) files are prepared ahead of time (`spare.rs`).
    pub fn open(data_dir: &Path, next: u64, older: Vec<(u64, u64)>, prepare: bool) -> Result<Wal, String> {
        let dir = dir(data_dir);
        std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let spares = crate::spare::Spares::new(&dir, PREPARED_SIZE, prepare);
        let mut w = Wal {
            dir,
            file: None,
            no: next,
            len: 0,
            prepared: false,
            spares,
            sealed: older,
            max_seq: 0,
            buf: Vec::new(),
        };
        w.start_file()?;
        Ok(w)
    }

    /// Why log files are not prepared ahead of time (None: they are).
    pub fn not_prepared(&self) -> Option<&str> {
        self.spares.off()
    }

    fn start_file(&mut self) -> Result<(), String> {
        let path = file_path(&self.dir, self.no);
        let (f, prepared) = match self.spares.take(&path) {
            Some(f) => (f, true),
            None => {
                let f = OpenOptions::new()
                    .create(true)
                    .truncate(true)
                    .write(true)
                    .open(&path)
                    .map_err(|e| format!("cannot create {}: {e}", path.display()))?;
                (f, false)
            }
        };
        // The new name must survive a crash before anything in it is acknowledged.
        File::open(&self.dir).and_then(|d| d.sync_all()).map_err(|e| format!("{}: {e}", self.dir.display()))?;
        self.file = Some(Arc::new(f));
        self.len = 0;
        self.prepared = prepared;
        Ok(())
    }

    /// Bytes in the current file.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the current file is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Append a batch as one frame (one `write`; the OS has it when this returns).
    pub fn append(&mut self, batch: &[(u64, Op)]) -> Result<(), String> {
        self.buf.clear();
        encode_frame(batch, &mut self.buf);
        let f: &File = self.file.as_deref().ok_or("write-ahead log closed after a failure")?;
        f.write_all_at(&self.buf, self.len).map_err(|e| format!("write-ahead log write: {e}"))?;
        self.len += self.buf.len() as u64;
        if let Some((last, _)) = batch.last() {
            self.max_seq = self.max_seq.max(*last);
        }
        Ok(())
    }

    /// fdatasync the current file.
    pub fn sync(&self) -> Result<(), String> {
        sync_file(self.sync_handle()?.as_ref())
    }

    /// The current file, to fsync without holding the log (appends go on meanwhile; a
    /// rotation fsyncs the file it seals itself).
    pub fn sync_handle(&self) -> Result<Arc<File>, String> {
        self.file.clone().ok_or_else(|| "write-ahead log closed after a failure".to_string())
    }

    /// After a failed write: the current file may end in a partial frame. Cut it back to
    /// its intact frames if possible and continue in a new file (replay treats a partial
    /// frame at the end of a file as a torn write, so nothing is lost either way).
    pub fn restart(&mut self) -> Result<(), String> {
        if let Some(f) = self.file.take() {
            let _ = f.set_len(self.len);
        }
        self.seal_current();
        self.start_file()
    }

    /// fsync and seal the current file, start the next one.
    pub fn rotate(&mut self) -> Result<(), String> {
        self.sync()?;
        if let Some(f) = self.file.take().filter(|_| self.prepared) {
            // The unused zeros go (not needed for replay; frees the space).
            let _ = f.set_len(self.len);
        }
        self.seal_current();
        self.start_file()
    }

    /// At a stop: no further file is prepared (one that is ready stays for the next
    /// start), and the current one loses its unused zeros (the next start reads only its
    /// frames).
    pub fn finish(&mut self) {
        self.spares.stop();
        if let Some(f) = self.file.as_deref().filter(|_| self.prepared) {
            let _ = f.set_len(self.len);
            self.prepared = false;
        }
    }

    /// Move on to a prepared file if the current one is a plain one (the first file
    /// after a start, or after a rotation that found none ready) and one is ready now.
    /// True if it did.
    pub fn use_prepared(&mut self) -> Result<bool, String> {
        if self.prepared || !self.spares.ready() {
            return Ok(false);
        }
        self.rotate().map(|_| true)
    }

    fn seal_current(&mut self) {
        self.sealed.push((self.no, self.max_seq));
        self.no += 1;
        self.max_seq = 0;
    }

    /// Delete the sealed files whose every change has sequence number <= `seq` (they
    /// are in fjall now). Errors are returned; the files are then tried again next time.
    pub fn remove_upto(&mut self, seq: u64) -> Result<(), String> {
        while let Some(&(no, max)) = self.sealed.first() {
            if max > seq {
                break;
            }
            let path = file_path(&self.dir, no);
            match std::fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(format!("cannot delete {}: {e}", path.display())),
            }
            self.sealed.remove(0);
        }
        Ok(())
    }

    /// Bytes of the log's files on disk (of the current one, its frames: a prepared
    /// file's unused zeros and the next prepared file are not counted).
    pub fn disk_bytes(&self) -> u64 {
        let sealed = |(no, p): &(u64, PathBuf)| match *no == self.no {
            true => None,
            false => std::fs::metadata(p).ok().map(|m| m.len()),
        };
        files(&self.dir).map(|fs| fs.iter().filter_map(sealed).sum::<u64>()).unwrap_or(0) + self.len
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Record;
    use std::io::Write;

    fn rec(v: &str, seq: u64) -> Record<&[u8]> {
        Record { flags: 3, exptime: 0, cas: seq, stored: 0, seq, bits: 0, value: v.as_bytes() }
    }

    fn batch() -> Vec<(u64, Op)> {
        vec![
            (1, Op::Put(Entry::put(b"a", &rec("one", 1)), false)),
            (2, Op::Put(Entry::put(b"a", &rec("two", 2)), true)),
            (3, Op::Delete(Entry::delete(b"b"))),
            (4, Op::FlushAt(1_900_000_000)),
            (5, Op::Flush),
        ]
    }

    fn same(a: &[(u64, Op)], b: &[(u64, Op)]) -> bool {
        format!("{a:?}") == format!("{b:?}")
    }

    #[test]
    fn frames_round_trip() {
        let mut out = Vec::new();
        encode_frame(&batch(), &mut out);
        encode_frame(&batch()[..1], &mut out);
        let s = scan(&out).expect("intact");
        assert!(s.torn_at.is_none());
        assert_eq!(s.good_len, out.len() as u64);
        let mut want = batch();
        want.extend(batch().into_iter().take(1));
        assert!(same(&s.ops, &want));
    }

    /// The bytes of a frame's changes stay as the first log format wrote them: kind,
    /// sequence number, key length and key, then (a put) the record's length and record.
    #[test]
    fn change_layout_is_stable() {
        let mut out = Vec::new();
        encode_frame(&batch()[1..3], &mut out);
        let mut want = vec![PUT_REPLACED];
        want.extend_from_slice(&2u64.to_le_bytes());
        want.extend_from_slice(&[1, 0, b'a']);
        let r = rec("two", 2).encode();
        want.extend_from_slice(&(r.len() as u32).to_le_bytes());
        want.extend_from_slice(&r);
        want.push(DELETE);
        want.extend_from_slice(&3u64.to_le_bytes());
        want.extend_from_slice(&[1, 0, b'b']);
        assert_eq!(&out[FRAME_HEADER..], &want[..]);
    }

    /// Every cut of the last frame is a torn write: the frames before it survive.
    #[test]
    fn a_cut_last_frame_is_torn_not_damage() {
        let mut out = Vec::new();
        encode_frame(&batch()[..2], &mut out);
        let first = out.len();
        encode_frame(&batch(), &mut out);
        for cut in first + 1..out.len() {
            let s = scan(&out[..cut]).expect("torn, not damaged");
            assert_eq!(s.torn_at, Some(first as u64), "cut at {cut}");
            assert_eq!(s.ops.len(), 2);
        }
        // Zeros after the last frame (a prepared file's rest, or space allocated for a
        // write that never landed) are the end of the file.
        let mut z = out[..first].to_vec();
        z.extend_from_slice(&[0; 100]);
        let s = scan(&z).expect("clean end");
        assert_eq!((s.torn_at, s.good_len, s.ops.len()), (None, first as u64, 2));
        // In a prepared file a cut frame is followed by zeros: every cut is torn.
        for cut in first + 1..out.len() {
            let mut z = out[..cut].to_vec();
            z.resize(out.len() + 4096, 0);
            if z[..out.len()] == out[..] {
                continue; // the cut-off bytes were zeros: the frame is whole
            }
            let s = scan(&z).expect("torn, not damaged");
            assert_eq!(s.torn_at, Some(first as u64), "cut at {cut}, then zeros");
            assert_eq!(s.ops.len(), 2);
        }
        // A frame whose bytes landed only in part (zeros in the middle) is torn too.
        let mut z = out.clone();
        z[first + FRAME_HEADER + 3..].fill(0);
        z.resize(out.len() + 4096, 0);
        assert_eq!(scan(&z).expect("torn").torn_at, Some(first as u64));
    }

    /// Appends to a prepared (zero-filled) file replay as they would from a plain one.
    #[test]
    fn a_prepared_file_replays_its_frames_and_ends_at_the_zeros() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut w = Wal::open(dir.path(), 1, Vec::new(), false).expect("open");
        let path = file_path(&super::dir(dir.path()), 1);
        std::fs::write(&path, vec![0u8; 1 << 20]).expect("zero-fill");
        w.file = Some(Arc::new(OpenOptions::new().write(true).open(&path).expect("open")));
        w.prepared = true;
        w.append(&batch()[..2]).expect("append");
        w.append(&batch()[2..]).expect("append");
        w.sync().expect("sync");
        let r = replay(&super::dir(dir.path())).expect("replay");
        assert!(r.torn.is_empty(), "{:?}", r.torn);
        assert!(same(&r.ops, &batch()));
        assert_eq!(std::fs::metadata(&path).expect("metadata").len(), 1 << 20, "written in place");
        // A byte of damage far into the zeros is damage, not the end of the file.
        let mut f = OpenOptions::new().write(true).open(&path).expect("open");
        f.write_all_at(b"x", 900_000).expect("write");
        let e = replay(&super::dir(dir.path())).expect_err("damage after the zeros");
        assert!(e.contains("damaged frame"), "{e}");
        f.write_all_at(b"\0", 900_000).expect("write");
        f.flush().expect("flush");
        // Sealing cuts the unused zeros off.
        w.rotate().expect("rotate");
        let mut want = Vec::new();
        encode_frame(&batch()[..2], &mut want);
        encode_frame(&batch()[2..], &mut want);
        assert_eq!(std::fs::read(&path).expect("read"), want);
    }

    /// A flipped byte anywhere but in the last frame is damage, never skipped.
    #[test]
    fn damage_before_the_last_frame_is_an_error() {
        let mut out = Vec::new();
        encode_frame(&batch(), &mut out);
        let first = out.len();
        encode_frame(&batch()[..1], &mut out);
        for i in 0..first {
            let mut d = out.clone();
            d[i] ^= 0x40;
            match scan(&d) {
                Err(e) => assert!(e.contains("damaged frame at byte 0"), "{e}"),
                Ok(s) => panic!("byte {i} flipped, scan gave {} changes", s.ops.len()),
            }
        }
    }

    /// Random bytes never panic the scanner (a fuzz-style property check).
    #[test]
    fn random_bytes_never_panic() {
        let mut x: u64 = 0x9e3779b97f4a7c15;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut good = Vec::new();
        encode_frame(&batch(), &mut good);
        for _ in 0..2000 {
            let mut d = good.clone();
            let n = (next() % 4) as usize + 1;
            for _ in 0..n {
                let i = (next() as usize) % d.len();
                d[i] = next() as u8;
            }
            let cut = (next() as usize) % (d.len() + 1);
            let _ = scan(&d[..cut]);
            let junk: Vec<u8> = (0..(next() % 64)).map(|_| next() as u8).collect();
            let _ = scan(&junk);
        }
    }

    #[test]
    fn files_are_replayed_in_order_and_removed_once_ingested() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut w = Wal::open(dir.path(), 1, Vec::new(), false).expect("open");
        w.append(&batch()[..2]).expect("append");
        w.rotate().expect("rotate");
        w.append(&batch()[2..]).expect("append");
        w.sync().expect("sync");
        let r = replay(&super::dir(dir.path())).expect("replay");
        assert!(same(&r.ops, &batch()));
        assert_eq!(r.next_file, 3);
        w.remove_upto(1).expect("remove");
        assert_eq!(files(&super::dir(dir.path())).expect("files").len(), 2, "file 1 holds seq 2");
        w.remove_upto(2).expect("remove");
        assert_eq!(files(&super::dir(dir.path())).expect("files").len(), 1);
    }

    /// A torn tail is cut off the file at replay, so frames appended after a restart
    /// are not read as damage the next time.
    #[test]
    fn a_torn_tail_is_cut_off_at_replay() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut w = Wal::open(dir.path(), 1, Vec::new(), false).expect("open");
        w.append(&batch()[..2]).expect("append");
        drop(w);
        let path = file_path(&super::dir(dir.path()), 1);
        let mut f = OpenOptions::new().append(true).open(&path).expect("open");
        f.write_all(b"SQW1\x10\0\0\0garbage").expect("write");
        let r = replay(&super::dir(dir.path())).expect("torn tail is not damage");
        assert_eq!(r.torn.len(), 1);
        r.cut_torn_tails().expect("cut");
        assert_eq!(r.ops.len(), 2);
        let mut w = Wal::open(dir.path(), r.next_file, Vec::new(), false).expect("reopen");
        w.append(&batch()[2..]).expect("append");
        let r = replay(&super::dir(dir.path())).expect("replay again");
        assert!(r.torn.is_empty());
        assert!(same(&r.ops, &batch()));
    }
}
