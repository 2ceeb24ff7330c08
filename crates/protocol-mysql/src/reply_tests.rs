use super::*;
use crate::{SERVER_STATUS_AUTOCOMMIT, SERVER_STATUS_IN_TRANS};

const COLDEF: &[u8] = b"\x03def\x00\x01t\x01t\x01a\x01a\x0c\x3f\x00\x0b\x00\x00\x00\x03\x00\x00\x00\x00\x00";

fn eof(status: u16, warnings: u16) -> Vec<u8> {
    let mut p = vec![0xfe];
    p.extend_from_slice(&warnings.to_le_bytes());
    p.extend_from_slice(&status.to_le_bytes());
    p
}

fn ok(header: u8, status: u16, warnings: u16) -> Vec<u8> {
    let mut p = vec![header, 0, 0];
    p.extend_from_slice(&status.to_le_bytes());
    p.extend_from_slice(&warnings.to_le_bytes());
    p
}

fn run(r: &mut Reply, packets: &[&[u8]]) -> Vec<Step> {
    packets.iter().map(|p| r.feed(p)).collect()
}

#[test]
fn text_result_with_eof() {
    let mut r = Reply::new(Expect::Results, 0);
    let steps = run(&mut r, &[b"\x01", COLDEF, &eof(2, 0), b"\x011", b"\x012", &eof(2, 0)]);
    assert_eq!(steps.last(), Some(&Step::Done));
    assert!(steps[..5].iter().all(|s| *s == Step::More));
    assert_eq!(r.status, Some(SERVER_STATUS_AUTOCOMMIT));
    assert!(r.storable());
}

#[test]
fn deprecate_eof_result() {
    let mut r = Reply::new(Expect::Results, CLIENT_DEPRECATE_EOF);
    let steps = run(&mut r, &[b"\x02", COLDEF, COLDEF, b"\x03abc\xfb", &ok(0xfe, 3, 0)]);
    assert_eq!(steps, [Step::More, Step::More, Step::More, Step::More, Step::Done]);
    assert_eq!(r.status, Some(SERVER_STATUS_AUTOCOMMIT | SERVER_STATUS_IN_TRANS));
    assert!(r.storable());
}

#[test]
fn multi_results_error_and_warnings() {
    let mut r = Reply::new(Expect::Results, 0);
    let more = ok(0, SERVER_MORE_RESULTS_EXISTS | 2, 0);
    let steps = run(&mut r, &[&more, b"\x01", COLDEF, &eof(2, 0), &eof(2, 0)]);
    assert_eq!(steps.last(), Some(&Step::Done));
    assert!(r.multi && !r.storable());

    let mut r = Reply::new(Expect::Results, 0);
    assert_eq!(r.feed(b"\xff\x15\x04#28000denied"), Step::Done);
    assert!(r.error && !r.storable());

    let mut r = Reply::new(Expect::Results, 0);
    run(&mut r, &[b"\x01", COLDEF, &eof(2, 0), &eof(2, 1)]);
    assert!(r.done() && !r.storable());
}

#[test]
fn error_in_rows_ends_reply() {
    let mut r = Reply::new(Expect::Results, CLIENT_DEPRECATE_EOF);
    let steps = run(&mut r, &[b"\x01", COLDEF, b"\x011", b"\xff\x10\x04#HY000boom"]);
    assert_eq!(steps.last(), Some(&Step::Done));
    assert!(r.error);
}

#[test]
fn local_infile() {
    let mut r = Reply::new(Expect::Results, 0);
    assert_eq!(r.feed(b"\xfb/tmp/x.csv"), Step::Infile);
    assert_eq!(r.feed(&ok(0, 2, 0)), Step::Done);
    assert!(r.infile && !r.storable());
}

#[test]
fn prepare_ok() {
    let mut head = vec![0, 7, 0, 0, 0, 1, 0, 2, 0, 0, 0, 0];
    let mut r = Reply::new(Expect::Prepare, 0);
    let steps = run(&mut r, &[&head, COLDEF, COLDEF, &eof(2, 0), COLDEF, &eof(2, 0)]);
    assert_eq!(steps, [Step::More, Step::More, Step::More, Step::More, Step::More, Step::Done]);
    assert_eq!(r.prepared, Some((7, 2)));

    let mut r = Reply::new(Expect::Prepare, CLIENT_DEPRECATE_EOF);
    let steps = run(&mut r, &[&head, COLDEF, COLDEF, COLDEF]);
    assert_eq!(steps.last(), Some(&Step::Done));

    head[5] = 0; // no columns, two params
    let mut r = Reply::new(Expect::Prepare, 0);
    assert_eq!(run(&mut r, &[&head, COLDEF, COLDEF, &eof(2, 0)]).last(), Some(&Step::Done));
    head[7] = 0; // nothing follows
    let mut r = Reply::new(Expect::Prepare, 0);
    assert_eq!(r.feed(&head), Step::Done);
}

#[test]
fn cursor_and_fetch() {
    let mut r = Reply::new(Expect::Results, 0);
    let steps = run(&mut r, &[b"\x01", COLDEF, &eof(SERVER_STATUS_CURSOR_EXISTS | 2, 0)]);
    assert_eq!(steps.last(), Some(&Step::Done));
    assert!(r.cursor && !r.storable());

    let mut r = Reply::new(Expect::Rows, 0);
    assert_eq!(run(&mut r, &[b"\x00\x00\x01", &eof(2, 0)]).last(), Some(&Step::Done));
}

#[test]
fn split_row_is_not_classified() {
    let mut r = Reply::new(Expect::Results, 0);
    let big = vec![0x01; MAX_PACKET_PAYLOAD];
    let steps = run(&mut r, &[b"\x01", COLDEF, &eof(2, 0), &big, &eof(2, 0), &eof(2, 0)]);
    // The first short 0xfe packet continues the split row; the second ends the rows.
    assert_eq!(&steps[3..], [Step::More, Step::More, Step::Done]);
}

#[test]
fn single_and_field_list() {
    let mut r = Reply::new(Expect::Single, 0);
    assert_eq!(r.feed(&ok(0, 2, 0)), Step::Done);
    let mut r = Reply::new(Expect::FieldList, 0);
    assert_eq!(run(&mut r, &[COLDEF, COLDEF, &eof(2, 0)]).last(), Some(&Step::Done));
}

#[test]
fn status_of_packets() {
    assert_eq!(status_of(&eof(0x22, 3), false), (0x22, 3));
    assert_eq!(status_of(&ok(0xfe, 0x22, 3), true), (0x22, 3));
    assert_eq!(status_of(&[0, 0xfc, 1, 2, 0, 0x40, 0, 0, 0], false), (0x40, 0));
    assert_eq!(status_of(&[0], false), (0, 0));
}
