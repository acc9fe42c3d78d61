//! One command connection to lttng-relayd: requests sent whole, replies
//! read to their exact size with a time limit, every failure naming the
//! relay, the command and what was expected.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use super::proto::{self, Cmd};
use crate::Error;

/// How long a reply may take: lttng-relayd answers at once, so a longer
/// silence is a relay that hangs (a reply cut by a dead peer is seen at
/// once, as the connection closing).
pub const REPLY_TIMEOUT: Duration = Duration::from_secs(10);

pub struct Relay {
    sock: TcpStream,
    /// `net://HOST:PORT`, for messages.
    pub name: String,
    pub minor: u32,
}

impl Relay {
    /// Connects and negotiates the version (the smaller minor version of
    /// both peers; the same major version).
    pub fn connect(host: &str, port: u16) -> Result<Relay, Error> {
        let name = format!("net://{host}:{port}");
        let io = |err: std::io::Error| Error::Connect {
            addr: name.clone(),
            err,
        };
        let addr = (host, port)
            .to_socket_addrs()
            .map_err(io)?
            .next()
            .ok_or_else(|| {
                io(std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    "no address for this host",
                ))
            })?;
        let sock = TcpStream::connect_timeout(&addr, REPLY_TIMEOUT).map_err(io)?;
        let _ = sock.set_nodelay(true);
        sock.set_read_timeout(Some(REPLY_TIMEOUT)).map_err(io)?;
        sock.set_write_timeout(Some(REPLY_TIMEOUT)).map_err(io)?;
        let mut r = Relay {
            sock,
            name,
            minor: proto::MINOR,
        };
        r.send(Cmd::Connect, &proto::connect_request())?;
        let b = r.recv(proto::CONNECT_LEN, Cmd::Connect, "reply")?;
        let c = proto::connected(&b).map_err(|e| r.bad(e))?;
        r.minor = c.minor.min(proto::MINOR);
        Ok(r)
    }

    /// An error about this relay.
    pub fn err(&self, msg: impl Into<String>) -> Error {
        Error::Live {
            relay: self.name.clone(),
            msg: msg.into(),
        }
    }

    pub fn bad(&self, e: proto::Bad) -> Error {
        self.err(e.0)
    }

    pub fn send(&mut self, cmd: Cmd, req: &[u8]) -> Result<(), Error> {
        self.sock.write_all(req).map_err(|e| {
            self.err(format!(
                "sending {}: {e} (the relay closed the connection?)",
                cmd.name()
            ))
        })
    }

    /// Exactly `n` bytes of the reply to `cmd` (`what`: which part).
    pub fn recv(&mut self, n: usize, cmd: Cmd, what: &str) -> Result<Vec<u8>, Error> {
        let mut buf = vec![0u8; n];
        let mut got = 0;
        while got < n {
            match self.sock.read(&mut buf[got..]) {
                Ok(0) => {
                    return Err(self.err(format!(
                        "{} {what}: the relay closed the connection after {got} of the {n} bytes expected",
                        cmd.name()
                    )))
                }
                Ok(k) => got += k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    return Err(self.err(format!(
                        "{} {what}: no reply within {} s ({got} of the {n} bytes expected arrived)",
                        cmd.name(),
                        REPLY_TIMEOUT.as_secs()
                    )))
                }
                Err(e) => {
                    return Err(self.err(format!(
                        "{} {what}: {e} after {got} of the {n} bytes expected",
                        cmd.name()
                    )))
                }
            }
        }
        Ok(buf)
    }

    /// LIST_SESSIONS.
    pub fn list_sessions(&mut self) -> Result<Vec<proto::SessionInfo>, Error> {
        self.send(Cmd::ListSessions, &proto::request(Cmd::ListSessions, &[]))?;
        let b = self.recv(4, Cmd::ListSessions, "reply")?;
        let n = proto::count(&b, "LIST_SESSIONS reply").map_err(|e| self.bad(e))?;
        let mut v = Vec::new();
        for i in 0..n {
            let b = self.recv(
                proto::SESSION_LEN,
                Cmd::ListSessions,
                &format!("session record {} of {n}", i + 1),
            )?;
            v.push(proto::session(&b).map_err(|e| self.bad(e))?);
        }
        Ok(v)
    }

    /// `n` stream records after the reply to `cmd`.
    pub fn streams(&mut self, n: u32, cmd: Cmd) -> Result<Vec<proto::StreamInfo>, Error> {
        let mut v = Vec::new();
        for i in 0..n {
            let b = self.recv(
                proto::STREAM_LEN,
                cmd,
                &format!("stream record {} of {n}", i + 1),
            )?;
            v.push(proto::stream(&b).map_err(|e| self.bad(e))?);
        }
        Ok(v)
    }
}
