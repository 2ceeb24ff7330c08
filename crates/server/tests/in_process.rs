//! In-process tests: a whole server started with `Server::start` inside the test process,
//! talked to over real sockets. They cover connection handling, routing (memory keys and
//! container keys on one connection) and the composers of each protocol; the byte-for-byte
//! comparison with memcached lives in `tests/differential` (see TESTING.md).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

use sqlcached::config::{Action, Config};
use sqlcached::server::{Handle, Server};

/// A server on a free loopback port, with `extra` flags.
fn start(extra: &[&str]) -> Handle {
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port().to_string();
    let mut args: Vec<String> = ["-l", "127.0.0.1", "-p", &port, "-U", "0", "-t", "2"].map(String::from).to_vec();
    args.extend(extra.iter().map(|s| s.to_string()));
    let cfg = match Config::from_args(args) {
        Ok(Action::Run(c)) => *c,
        _ => panic!("bad test flags"),
    };
    Server::start(cfg).unwrap_or_else(|e| panic!("start: {e}"))
}

struct Client {
    r: BufReader<TcpStream>,
    w: TcpStream,
}

impl Client {
    fn new(h: &Handle) -> Client {
        let s = TcpStream::connect(h.tcp_addrs()[0]).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        Client { r: BufReader::new(s.try_clone().unwrap()), w: s }
    }

    fn send(&mut self, b: &[u8]) {
        self.w.write_all(b).unwrap();
    }

    fn line(&mut self) -> String {
        let mut l = String::new();
        self.r.read_line(&mut l).unwrap();
        l.trim_end_matches("\r\n").to_string()
    }

    fn exact(&mut self, n: usize) -> Vec<u8> {
        let mut v = vec![0; n];
        self.r.read_exact(&mut v).unwrap();
        v
    }
}

#[test]
fn text_and_meta_replies() {
    let h = start(&[]);
    let mut c = Client::new(&h);
    c.send(b"set a 5 0 2\r\nhi\r\nget a b\r\n");
    assert_eq!(c.line(), "STORED");
    assert_eq!(c.line(), "VALUE a 5 2");
    assert_eq!(c.line(), "hi");
    assert_eq!(c.line(), "END");
    c.send(b"ms m 3 T0 F7\r\nabc\r\nmg m v f s\r\nmg missing v\r\nmn\r\n");
    assert_eq!(c.line(), "HD");
    assert_eq!(c.line(), "VA 3 f7 s3");
    assert_eq!(c.line(), "abc");
    assert_eq!(c.line(), "EN");
    assert_eq!(c.line(), "MN");
    c.send(b"incr a 1\r\nbogus\r\n");
    assert_eq!(c.line(), "CLIENT_ERROR cannot increment or decrement non-numeric value");
    assert_eq!(c.line(), "ERROR");
    h.stop();
}

#[test]
fn binary_replies_keep_the_opaque() {
    let h = start(&[]);
    let mut c = Client::new(&h);
    let req = |op: u8, key: &[u8], extras: &[u8], value: &[u8], opaque: u32| {
        let mut v = vec![0x80, op];
        v.extend_from_slice(&(key.len() as u16).to_be_bytes());
        v.push(extras.len() as u8);
        v.extend_from_slice(&[0, 0, 0]);
        v.extend_from_slice(&((extras.len() + key.len() + value.len()) as u32).to_be_bytes());
        v.extend_from_slice(&opaque.to_be_bytes());
        v.extend_from_slice(&[0; 8]);
        v.extend_from_slice(extras);
        v.extend_from_slice(key);
        v.extend_from_slice(value);
        v
    };
    c.send(&req(0x01, b"k", &[0, 0, 0, 9, 0, 0, 0, 0], b"val", 7));
    c.send(&req(0x00, b"k", &[], &[], 8));
    let head = c.exact(24);
    assert_eq!((head[0], head[1], &head[6..8], &head[12..16]), (0x81, 0x01, &[0u8, 0][..], &7u32.to_be_bytes()[..]));
    let head = c.exact(24);
    assert_eq!((head[1], u32::from_be_bytes(head[12..16].try_into().unwrap())), (0x00, 8));
    let body = c.exact(u32::from_be_bytes(head[8..12].try_into().unwrap()) as usize);
    assert_eq!(&body[..4], &9u32.to_be_bytes());
    assert_eq!(&body[4..], b"val");
    h.stop();
}

#[test]
fn memory_and_container_keys_on_one_connection() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("c.db");
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute_batch("CREATE TABLE kv (k TEXT PRIMARY KEY, v TEXT); INSERT INTO kv VALUES ('AA', 'from sql');")
        .unwrap();
    let toml = dir.path().join("c.toml");
    std::fs::write(
        &toml,
        format!(
            "[backend]\nkind = \"sqlite\"\npath = {:?}\nplugin_tables = \"off\"\n\n[[container]]\nname = \"kv\"\n\
             table = \"kv\"\nkey_column = \"k\"\nvalue_columns = \"v\"\n",
            db.to_str().unwrap()
        ),
    )
    .unwrap();
    let h = start(&["--containers", toml.to_str().unwrap()]);
    let mut c = Client::new(&h);
    c.send(b"set plain 0 0 1\r\np\r\nget @@kv.AA plain @@nope.x\r\n");
    assert_eq!(c.line(), "STORED");
    assert_eq!(c.line(), "CLIENT_ERROR unknown container 'nope'");
    c.send(b"get @@kv.AA plain\r\n");
    assert_eq!(c.line(), "VALUE @@kv.AA 0 8");
    assert_eq!(c.line(), "from sql");
    assert_eq!(c.line(), "VALUE plain 0 1");
    assert_eq!(c.line(), "p");
    assert_eq!(c.line(), "END");
    c.send(b"set @@kv.BB 0 0 3\r\nnew\r\n");
    assert_eq!(c.line(), "STORED");
    let v: String = rusqlite::Connection::open(&db)
        .unwrap()
        .query_row("SELECT v FROM kv WHERE k = 'BB'", [], |r| r.get(0))
        .unwrap();
    assert_eq!(v, "new");
    h.stop();
}

#[test]
fn stop_closes_connections_and_stops_accepting() {
    let h = start(&[]);
    let addr = h.tcp_addrs()[0];
    let mut c = Client::new(&h);
    c.send(b"version\r\n");
    assert!(c.line().starts_with("VERSION "));
    h.stop();
    let mut buf = [0u8; 16];
    assert_eq!(c.r.read(&mut buf).unwrap_or(0), 0, "an idle connection is closed by the stop");
    let refused = TcpStream::connect(addr).map(|mut s| {
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let _ = s.write_all(b"version\r\n");
        s.read(&mut buf).unwrap_or(0)
    });
    assert!(matches!(refused, Err(_) | Ok(0)), "no new connection is served after stop");
}
