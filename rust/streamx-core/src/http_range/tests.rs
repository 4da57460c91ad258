//! Ranged GETs against a one-connection server thread that answers with scripted bytes.

use super::*;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::thread::JoinHandle;
use std::time::Duration;

const REQUEST: &[u8] = b"GET /b/k HTTP/1.1\r\nHost: h\r\nRange: bytes=10-19\r\n\r\n";

/// A connected client socket (non-blocking) and the server thread, which reads the
/// request, writes `answer` in the given pieces, then keeps or drops the connection.
fn serve(pieces: Vec<Vec<u8>>, keep_open: Duration) -> (TcpStream, JoinHandle<Vec<u8>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    client.set_nonblocking(true).unwrap();
    let server = std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        let mut request = vec![0u8; REQUEST.len()];
        conn.read_exact(&mut request).unwrap();
        for piece in pieces {
            conn.write_all(&piece).unwrap();
            std::thread::sleep(Duration::from_millis(5));
        }
        std::thread::sleep(keep_open);
        request
    });
    (client, server)
}

fn get(client: &TcpStream, file: &std::fs::File, expected: Option<u64>, ms: u64) -> RangeOutcome {
    paged_get(client, file, expected, ms).0
}

/// As [`get`], with the declined answer's page.
fn paged_get(
    client: &TcpStream,
    file: &std::fs::File,
    expected: Option<u64>,
    ms: u64,
) -> (RangeOutcome, Option<DeclinedPage>) {
    let get = RangeGet {
        request: REQUEST,
        offset: 10,
        length: 10,
        expected_total: expected,
        deadline: Instant::now() + Duration::from_millis(ms),
    };
    ranged_get(client.as_raw_fd(), file.as_raw_fd(), &get).unwrap()
}

fn contents(mut file: &std::fs::File) -> Vec<u8> {
    let mut got = Vec::new();
    file.read_to_end(&mut got).unwrap();
    got
}

const OK_HEAD: &[u8] =
    b"HTTP/1.1 206 Partial Content\r\nContent-Length: 10\r\nContent-Range: bytes 10-19/100\r\n\r\n";

#[test]
fn a_matching_206_lands_at_its_offset_and_the_connection_stays_usable() {
    let (client, server) = serve(
        vec![
            OK_HEAD[..20].to_vec(),
            OK_HEAD[20..].to_vec(),
            b"0123456789".to_vec(),
        ],
        Duration::from_millis(200),
    );
    let file = tempfile::tempfile().unwrap();
    let outcome = get(&client, &file, Some(100), 2000);
    assert_eq!(
        outcome,
        RangeOutcome::Moved {
            end: BodyEnd::Complete,
            total: Some(100),
            reusable: true
        }
    );
    assert_eq!(server.join().unwrap(), REQUEST);
    let got = contents(&file);
    assert_eq!(&got[10..], b"0123456789");
    assert!(got[..10].iter().all(|&b| b == 0));
}

#[test]
fn a_body_in_the_heads_read_is_written_and_bytes_past_it_end_reuse() {
    let mut answer = OK_HEAD.to_vec();
    answer.extend_from_slice(b"0123456789EXTRA");
    let (client, _server) = serve(vec![answer], Duration::from_millis(200));
    let file = tempfile::tempfile().unwrap();
    let outcome = get(&client, &file, None, 2000);
    assert_eq!(
        outcome,
        RangeOutcome::Moved {
            end: BodyEnd::Complete,
            total: Some(100),
            reusable: false
        }
    );
    assert_eq!(&contents(&file)[10..], b"0123456789");
}

#[test]
fn answers_other_than_the_exact_range_are_declined() {
    let cases: [(&[u8], u16); 8] = [
        (b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n", 200),
        (b"HTTP/1.1 404 Not Found\r\nContent-Length: 3\r\n\r\nno!", 404),
        (b"HTTP/1.1 206 P\r\nContent-Range: bytes 0-9/100\r\n\r\n", 206),
        (b"HTTP/1.1 206 P\r\nContent-Range: bytes 10-19/99\r\n\r\n", 206),
        (b"HTTP/1.1 206 P\r\nContent-Range: bytes 10-19/100\r\nContent-Length: 11\r\n\r\n", 206),
        (b"HTTP/1.1 206 P\r\nContent-Range: bytes 10-19/100\r\nTransfer-Encoding: chunked\r\n\r\n", 206),
        (b"HTTP/1.1 206 P\r\nContent-Length: 10\r\n\r\n", 206),
        (b"HTTP/1.1 206 P\r\nContent-Range: bytes 10-19/100\r\nContent-Length: 10\r\nContent-Length: 11\r\n\r\n", 206),
    ];
    for (answer, status) in cases {
        let (client, _server) = serve(vec![answer.to_vec()], Duration::from_millis(100));
        let file = tempfile::tempfile().unwrap();
        assert_eq!(
            get(&client, &file, Some(100), 2000),
            RangeOutcome::Declined { status },
            "{}",
            String::from_utf8_lossy(answer)
        );
        assert!(contents(&file).is_empty());
    }
}

#[test]
fn a_declined_errors_short_page_is_read_and_the_connection_serves_on() {
    let head = b"HTTP/1.1 503 Slow Down\r\nRetry-After: 1\r\nContent-Length: 5\r\n\r\nab";
    let (client, _server) = serve(
        vec![head.to_vec(), b"cde".to_vec()],
        Duration::from_millis(200),
    );
    let file = tempfile::tempfile().unwrap();
    let (outcome, page) = paged_get(&client, &file, Some(100), 2000);
    assert_eq!(outcome, RangeOutcome::Declined { status: 503 });
    let fields = [("Retry-After", "1"), ("Content-Length", "5")];
    assert_eq!(
        page,
        Some(DeclinedPage {
            fields: fields.map(|(k, v)| (k.to_owned(), v.to_owned())).to_vec(),
            body: b"abcde".to_vec(),
            reusable: true,
        })
    );
    assert!(contents(&file).is_empty());
}

#[test]
fn a_long_or_chunked_page_is_dropped_and_a_followed_one_ends_reuse() {
    let long = format!(
        "HTTP/1.1 503 S\r\nContent-Length: {}\r\n\r\n",
        MOST_PAGE_BYTES + 1
    );
    let chunked = b"HTTP/1.1 503 S\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nabcde\r\n0\r\n\r\n";
    for answer in [long.as_bytes(), &chunked[..]] {
        let (client, _server) = serve(vec![answer.to_vec()], Duration::from_millis(200));
        let file = tempfile::tempfile().unwrap();
        let got = paged_get(&client, &file, None, 2000);
        assert_eq!(got, (RangeOutcome::Declined { status: 503 }, None));
    }
    for answer in [
        &b"HTTP/1.1 404 N\r\nContent-Length: 3\r\n\r\nno!EXTRA"[..],
        &b"HTTP/1.1 404 N\r\nConnection: close\r\nContent-Length: 3\r\n\r\nno!"[..],
    ] {
        let (client, _server) = serve(vec![answer.to_vec()], Duration::from_millis(200));
        let file = tempfile::tempfile().unwrap();
        let (_, page) = paged_get(&client, &file, None, 2000);
        let page = page.expect("a short page is read");
        assert_eq!((page.body.as_slice(), page.reusable), (&b"no!"[..], false));
    }
}

/// The fields of a page cut short, its body dropped and its connection not reused.
fn cut_short(keep_open: Duration, ms: u64) -> Option<DeclinedPage> {
    let answer = b"HTTP/1.1 503 S\r\nRetry-After: 3\r\nContent-Length: 5\r\n\r\nab";
    let (client, _server) = serve(vec![answer.to_vec()], keep_open);
    let file = tempfile::tempfile().unwrap();
    let (outcome, page) = paged_get(&client, &file, None, ms);
    assert_eq!(outcome, RangeOutcome::Declined { status: 503 });
    page
}

#[test]
fn a_page_cut_short_keeps_its_fields_and_a_stalled_one_is_given_up_before_the_deadline() {
    let fields = [("Retry-After", "3"), ("Content-Length", "5")];
    let expected = Some(DeclinedPage {
        fields: fields.map(|(k, v)| (k.to_owned(), v.to_owned())).to_vec(),
        body: Vec::new(),
        reusable: false,
    });
    // The connection closed, then a page that stalls past the deadline.
    assert_eq!(cut_short(Duration::ZERO, 2000), expected);
    assert_eq!(cut_short(Duration::from_millis(800), 300), expected);
    // A page that stalls while the deadline is far: given up after PAGE_WAIT.
    let began = Instant::now();
    assert_eq!(cut_short(Duration::from_secs(60), 60_000), expected);
    let held = began.elapsed();
    assert!(held < Duration::from_secs(30), "held {held:?}");
}

#[test]
fn an_unknown_total_is_accepted_and_connection_close_ends_reuse() {
    let answer =
        b"HTTP/1.1 206 P\r\nConnection: close\r\nContent-Range: bytes 10-19/*\r\n\r\n0123456789";
    let (client, _server) = serve(vec![answer.to_vec()], Duration::from_millis(100));
    let file = tempfile::tempfile().unwrap();
    assert_eq!(
        get(&client, &file, Some(100), 2000),
        RangeOutcome::Moved {
            end: BodyEnd::Complete,
            total: None,
            reusable: false
        }
    );
}

#[test]
fn a_connection_closed_before_any_answer_is_stale() {
    let (client, _server) = serve(vec![], Duration::ZERO);
    let file = tempfile::tempfile().unwrap();
    assert_eq!(get(&client, &file, None, 2000), RangeOutcome::Stale);
}

#[test]
fn a_short_body_and_a_stalled_one_report_their_counts() {
    let mut short = OK_HEAD.to_vec();
    short.extend_from_slice(b"0123");
    let (client, _server) = serve(vec![short.clone()], Duration::ZERO);
    let file = tempfile::tempfile().unwrap();
    assert!(matches!(
        get(&client, &file, None, 2000),
        RangeOutcome::Moved {
            end: BodyEnd::Closed(4),
            reusable: false,
            ..
        }
    ));
    let (client, server) = serve(vec![short], Duration::from_millis(800));
    let started = Instant::now();
    assert!(matches!(
        get(&client, &file, None, 300),
        RangeOutcome::Moved {
            end: BodyEnd::TimedOut(4),
            reusable: false,
            ..
        }
    ));
    assert!(started.elapsed() < Duration::from_millis(700));
    server.join().unwrap();
}

#[test]
fn a_head_that_never_completes_times_out_and_a_closed_one_fails() {
    let (client, server) = serve(vec![OK_HEAD[..30].to_vec()], Duration::from_millis(800));
    let file = tempfile::tempfile().unwrap();
    assert_eq!(get(&client, &file, None, 300), RangeOutcome::TimedOut);
    server.join().unwrap();
    let (client, _server) = serve(vec![OK_HEAD[..30].to_vec()], Duration::ZERO);
    let get = RangeGet {
        request: REQUEST,
        offset: 10,
        length: 10,
        expected_total: None,
        deadline: Instant::now() + Duration::from_secs(2),
    };
    let err = ranged_get(client.as_raw_fd(), file.as_raw_fd(), &get).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
}

#[test]
fn an_endless_or_malformed_head_is_refused() {
    let mut endless = b"HTTP/1.1 206 P\r\n".to_vec();
    while endless.len() <= MAX_HEAD_BYTES {
        endless.extend_from_slice(b"X-Filler: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n");
    }
    for (answer, kind) in [
        (endless, io::ErrorKind::InvalidData),
        (
            b"NOT HTTP AT ALL\r\n\r\n".to_vec(),
            io::ErrorKind::InvalidData,
        ),
    ] {
        let (client, _server) = serve(vec![answer], Duration::from_millis(200));
        let file = tempfile::tempfile().unwrap();
        let get = RangeGet {
            request: REQUEST,
            offset: 10,
            length: 10,
            expected_total: None,
            deadline: Instant::now() + Duration::from_secs(2),
        };
        let err = ranged_get(client.as_raw_fd(), file.as_raw_fd(), &get).unwrap_err();
        assert_eq!(err.kind(), kind);
    }
}

/// `OK_HEAD` with filler fields up to `fields` header fields in all.
fn head_with_fields(fields: usize) -> Vec<u8> {
    let mut head = OK_HEAD[..OK_HEAD.len() - 2].to_vec();
    for i in 2..fields {
        head.extend_from_slice(format!("x-amz-meta-k{i}: v\r\n").as_bytes());
    }
    head.extend_from_slice(b"\r\n");
    head
}

#[test]
fn a_head_of_many_fields_is_read_up_to_the_bound() {
    let head = parse_head(&head_with_fields(MAX_HEADERS)).unwrap().unwrap();
    assert_eq!(
        (head.status, head.content_range.as_deref()),
        (206, Some("bytes 10-19/100"))
    );
    let Err(err) = parse_head(&head_with_fields(MAX_HEADERS + 1)) else {
        panic!("a head of {} fields was read", MAX_HEADERS + 1);
    };
    assert_eq!(err.kind(), io::ErrorKind::InvalidData);
    assert_eq!(
        err.to_string(),
        format!("malformed answer head: more than {MAX_HEADERS} header fields")
    );
}
