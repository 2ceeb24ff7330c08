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

/// The I/O front ends to test: epoll always, io_uring where this kernel allows it.
fn front_ends() -> Vec<&'static str> {
    let mut v = vec!["off"];
    let cfg = match Config::from_args(["-p", "0", "-U", "0", "--io-uring", "on"].map(String::from)) {
        Ok(Action::Run(c)) => *c,
        _ => panic!("bad test flags"),
    };
    match Server::start(cfg) {
        Ok(h) => {
            h.stop();
            v.push("on");
        }
        Err(e) => eprintln!("io_uring front end not tested here: {e}"),
    }
    v
}

/// Both front ends run the same requests the same way: a pipeline longer than `-R`, a value
/// far larger than one provided buffer, binary after text on another connection, `quit`.
#[test]
fn both_front_ends_serve_pipelines_large_values_and_quit() {
    for mode in front_ends() {
        let h = start(&["--io-uring", mode, "-R", "2"]);
        let mut c = Client::new(&h);
        c.send(b"stats settings\r\n");
        let want = if mode == "on" { "STAT io_frontend io_uring" } else { "STAT io_frontend epoll" };
        let mut seen = false;
        loop {
            let l = c.line();
            seen |= l == want;
            if l == "END" {
                break;
            }
        }
        assert!(seen, "{mode}: stats settings has no {want}");
        let big = vec![b'v'; 300_000];
        let mut req = format!("set big 0 0 {}\r\n", big.len()).into_bytes();
        req.extend_from_slice(&big);
        req.extend_from_slice(b"\r\n");
        for i in 0..50 {
            req.extend_from_slice(format!("set k{i} 0 0 1\r\n{}\r\nget k{i}\r\n", i % 10).as_bytes());
        }
        req.extend_from_slice(b"get big\r\n");
        c.send(&req);
        assert_eq!(c.line(), "STORED", "{mode}");
        for i in 0..50 {
            assert_eq!(c.line(), "STORED", "{mode}");
            assert_eq!(c.line(), format!("VALUE k{i} 0 1"), "{mode}");
            assert_eq!(c.line(), format!("{}", i % 10), "{mode}");
            assert_eq!(c.line(), "END", "{mode}");
        }
        assert_eq!(c.line(), format!("VALUE big 0 {}", big.len()), "{mode}");
        assert_eq!(c.exact(big.len() + 2)[..big.len()], big[..], "{mode}");
        assert_eq!(c.line(), "END", "{mode}");
        // Binary on a connection of its own: a GETK of k3 (opaque 9), then NOOP.
        let mut b = Client::new(&h);
        let mut get = vec![0x80, 0x0c, 0, 2, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, 0];
        get.extend_from_slice(b"k3");
        get.extend_from_slice(&[0x80, 0x0a, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        b.send(&get);
        let head = b.exact(24);
        assert_eq!((head[0], head[1], head[15]), (0x81, 0x0c, 9), "{mode}");
        let body = b.exact(u32::from_be_bytes(head[8..12].try_into().unwrap()) as usize);
        assert_eq!(&body[4..], b"k33", "{mode}: flags, key, value");
        assert_eq!(b.exact(24)[1], 0x0a, "{mode}: the NOOP's reply");
        c.send(b"get k1\r\nquit\r\nget k2\r\n");
        assert_eq!(c.line(), "VALUE k1 0 1", "{mode}");
        assert_eq!(c.line(), "1", "{mode}");
        assert_eq!(c.line(), "END", "{mode}");
        let mut rest = Vec::new();
        assert_eq!(c.r.read_to_end(&mut rest).unwrap_or(0), 0, "{mode}: closed after quit, nothing after it");
        h.stop();
    }
}

/// A client that sends much and reads nothing for a while gets every reply once it reads:
/// the server stops reading it meanwhile (its replies are bounded), it does not drop any.
#[test]
fn both_front_ends_hold_back_a_client_that_does_not_read() {
    for mode in front_ends() {
        let h = start(&["--io-uring", mode]);
        let mut c = Client::new(&h);
        c.send(&[b"set v 0 0 1000\r\n".as_slice(), &[b'x'; 1000], b"\r\n"].concat());
        assert_eq!(c.line(), "STORED");
        let n = 20_000;
        let mut w = c.w.try_clone().unwrap();
        let writer = std::thread::spawn(move || {
            w.write_all(&b"get v\r\n".repeat(n)).unwrap();
        });
        std::thread::sleep(Duration::from_millis(500));
        let mut got = 0;
        let mut buf = vec![0u8; 1 << 16];
        let want = n * (b"VALUE v 0 1000\r\n".len() + 1002 + 5);
        while got < want {
            let r = c.r.read(&mut buf).unwrap();
            assert!(r > 0, "{mode}: closed after {got} of {want} bytes");
            got += r;
        }
        assert_eq!(got, want, "{mode}");
        writer.join().unwrap();
        h.stop();
    }
}

/// `-o idle_timeout`: an idle connection is closed by either front end, a busy one is not.
#[test]
fn both_front_ends_close_idle_connections() {
    for mode in front_ends() {
        let h = start(&["--io-uring", mode, "-o", "idle_timeout=1"]);
        let mut idle = Client::new(&h);
        let mut busy = Client::new(&h);
        let t = std::time::Instant::now();
        while t.elapsed() < Duration::from_millis(2500) {
            busy.send(b"version\r\n");
            assert!(busy.line().starts_with("VERSION "), "{mode}");
            std::thread::sleep(Duration::from_millis(200));
        }
        let mut buf = [0u8; 8];
        assert_eq!(idle.r.read(&mut buf).unwrap_or(0), 0, "{mode}: the idle connection was closed");
        h.stop();
    }
}
