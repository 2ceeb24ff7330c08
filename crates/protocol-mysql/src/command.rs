//! Commands (client → server): the first payload of every command phase exchange.
//!
//! [`Command::parse`] takes the negotiated capabilities because COM_QUERY carries query
//! attributes and COM_CHANGE_USER's fields depend on them. COM_STMT_EXECUTE parameters
//! depend on connection state (the statement's parameter count and previously bound
//! types), so [`StmtExecute`] keeps them raw and [`StmtExecute::params`] decodes them.

use crate::error::Error;
use crate::flags::{CLIENT_CONNECT_ATTRS, CLIENT_PLUGIN_AUTH, CLIENT_QUERY_ATTRIBUTES, CLIENT_SECURE_CONNECTION};
use crate::handshake_response::{write_connect_attrs, write_nul_str};
use crate::lenenc::{write_lenenc_int, write_lenenc_str};
use crate::reader::Reader;
use crate::value::{
    is_null, null_bitmap_len, parse_binary_value, write_binary_value, write_null_bitmap, FieldType, Value,
};

/// `COM_SLEEP` (internal).
pub const COM_SLEEP: u8 = 0x00;
/// `COM_QUIT`: close the connection.
pub const COM_QUIT: u8 = 0x01;
/// `COM_INIT_DB`: change the default schema.
pub const COM_INIT_DB: u8 = 0x02;
/// `COM_QUERY`: a text-protocol query.
pub const COM_QUERY: u8 = 0x03;
/// `COM_FIELD_LIST`: column definitions of a table (deprecated).
pub const COM_FIELD_LIST: u8 = 0x04;
/// `COM_CREATE_DB` (removed).
pub const COM_CREATE_DB: u8 = 0x05;
/// `COM_DROP_DB` (removed).
pub const COM_DROP_DB: u8 = 0x06;
/// `COM_REFRESH` (deprecated): flush tables, logs, ...
pub const COM_REFRESH: u8 = 0x07;
/// `COM_SHUTDOWN` (deprecated).
pub const COM_SHUTDOWN: u8 = 0x08;
/// `COM_STATISTICS`: a human-readable status string.
pub const COM_STATISTICS: u8 = 0x09;
/// `COM_PROCESS_INFO` (deprecated).
pub const COM_PROCESS_INFO: u8 = 0x0a;
/// `COM_CONNECT` (internal).
pub const COM_CONNECT: u8 = 0x0b;
/// `COM_PROCESS_KILL` (deprecated): kill a connection.
pub const COM_PROCESS_KILL: u8 = 0x0c;
/// `COM_DEBUG`: dump debug info to the server log.
pub const COM_DEBUG: u8 = 0x0d;
/// `COM_PING`: is the server alive.
pub const COM_PING: u8 = 0x0e;
/// `COM_TIME` (internal).
pub const COM_TIME: u8 = 0x0f;
/// `COM_DELAYED_INSERT` (internal).
pub const COM_DELAYED_INSERT: u8 = 0x10;
/// `COM_CHANGE_USER`: re-authenticate and reset the session.
pub const COM_CHANGE_USER: u8 = 0x11;
/// `COM_BINLOG_DUMP`: replication.
pub const COM_BINLOG_DUMP: u8 = 0x12;
/// `COM_TABLE_DUMP` (internal).
pub const COM_TABLE_DUMP: u8 = 0x13;
/// `COM_CONNECT_OUT` (internal).
pub const COM_CONNECT_OUT: u8 = 0x14;
/// `COM_REGISTER_SLAVE`: replication.
pub const COM_REGISTER_SLAVE: u8 = 0x15;
/// `COM_STMT_PREPARE`: prepare a statement.
pub const COM_STMT_PREPARE: u8 = 0x16;
/// `COM_STMT_EXECUTE`: execute a prepared statement.
pub const COM_STMT_EXECUTE: u8 = 0x17;
/// `COM_STMT_SEND_LONG_DATA`: stream a parameter value (no reply).
pub const COM_STMT_SEND_LONG_DATA: u8 = 0x18;
/// `COM_STMT_CLOSE`: deallocate a prepared statement (no reply).
pub const COM_STMT_CLOSE: u8 = 0x19;
/// `COM_STMT_RESET`: reset long data and cursor of a statement.
pub const COM_STMT_RESET: u8 = 0x1a;
/// `COM_SET_OPTION`: multi-statements on or off.
pub const COM_SET_OPTION: u8 = 0x1b;
/// `COM_STMT_FETCH`: rows from a cursor.
pub const COM_STMT_FETCH: u8 = 0x1c;
/// `COM_DAEMON` (internal).
pub const COM_DAEMON: u8 = 0x1d;
/// `COM_BINLOG_DUMP_GTID`: replication.
pub const COM_BINLOG_DUMP_GTID: u8 = 0x1e;
/// `COM_RESET_CONNECTION`: reset the session without re-authenticating.
pub const COM_RESET_CONNECTION: u8 = 0x1f;
/// `COM_CLONE` (MySQL 8.0 clone plugin).
pub const COM_CLONE: u8 = 0x20;
/// `COM_STMT_BULK_EXECUTE` (MariaDB).
pub const COM_STMT_BULK_EXECUTE: u8 = 0xfa;

/// COM_SET_OPTION value: multi-statements on.
pub const MYSQL_OPTION_MULTI_STATEMENTS_ON: u16 = 0;
/// COM_SET_OPTION value: multi-statements off.
pub const MYSQL_OPTION_MULTI_STATEMENTS_OFF: u16 = 1;

/// COM_STMT_EXECUTE flag: no cursor.
pub const CURSOR_TYPE_NO_CURSOR: u8 = 0;
/// COM_STMT_EXECUTE flag: read-only cursor.
pub const CURSOR_TYPE_READ_ONLY: u8 = 1;
/// COM_STMT_EXECUTE flag: cursor for update.
pub const CURSOR_TYPE_FOR_UPDATE: u8 = 2;
/// COM_STMT_EXECUTE flag: scrollable cursor.
pub const CURSOR_TYPE_SCROLLABLE: u8 = 4;
/// COM_STMT_EXECUTE flag: a parameter count follows (with `CLIENT_QUERY_ATTRIBUTES`).
pub const PARAMETER_COUNT_AVAILABLE: u8 = 8;

/// A command, borrowed from the payload.
#[derive(Clone, Debug, PartialEq)]
pub enum Command<'a> {
    /// `COM_QUIT`.
    Quit,
    /// `COM_INIT_DB` with the schema name.
    InitDb(&'a [u8]),
    /// `COM_QUERY`.
    Query(Query<'a>),
    /// `COM_FIELD_LIST`.
    FieldList {
        /// The table.
        table: &'a [u8],
        /// The column name wildcard (may be empty).
        wildcard: &'a [u8],
    },
    /// `COM_STATISTICS`.
    Statistics,
    /// `COM_PROCESS_KILL` with the connection id.
    ProcessKill(u32),
    /// `COM_DEBUG`.
    Debug,
    /// `COM_PING`.
    Ping,
    /// `COM_CHANGE_USER`.
    ChangeUser(ChangeUser<'a>),
    /// `COM_STMT_PREPARE` with the statement text.
    StmtPrepare(&'a [u8]),
    /// `COM_STMT_EXECUTE`.
    StmtExecute(StmtExecute<'a>),
    /// `COM_STMT_SEND_LONG_DATA`.
    StmtSendLongData {
        /// The statement id.
        stmt_id: u32,
        /// The parameter index.
        param_id: u16,
        /// The chunk of data.
        data: &'a [u8],
    },
    /// `COM_STMT_CLOSE` with the statement id.
    StmtClose(u32),
    /// `COM_STMT_RESET` with the statement id.
    StmtReset(u32),
    /// `COM_SET_OPTION` with the option (`MYSQL_OPTION_*`).
    SetOption(u16),
    /// `COM_STMT_FETCH`.
    StmtFetch {
        /// The statement id.
        stmt_id: u32,
        /// How many rows to fetch.
        rows: u32,
    },
    /// `COM_RESET_CONNECTION`.
    ResetConnection,
    /// Any other command (replication, deprecated, unknown): the code and the body.
    Other {
        /// The command byte.
        code: u8,
        /// The payload after the command byte.
        body: &'a [u8],
    },
}

impl<'a> Command<'a> {
    /// Parses a command payload. Unknown command bytes are [`Command::Other`]; trailing
    /// bytes after fixed-size bodies are ignored, as servers do.
    pub fn parse(payload: &'a [u8], capabilities: u32) -> Result<Self, Error> {
        let mut r = Reader::new(payload);
        let code = r.u8("command byte")?;
        Ok(match code {
            COM_QUIT => Command::Quit,
            COM_INIT_DB => Command::InitDb(r.rest()),
            COM_QUERY => Command::Query(Query::parse_body(r.rest(), capabilities)?),
            COM_FIELD_LIST => {
                let table = r.nul_str("table name")?;
                Command::FieldList { table, wildcard: r.rest() }
            }
            COM_STATISTICS => Command::Statistics,
            COM_PROCESS_KILL => Command::ProcessKill(r.u32("connection id")?),
            COM_DEBUG => Command::Debug,
            COM_PING => Command::Ping,
            COM_CHANGE_USER => Command::ChangeUser(ChangeUser::parse_body(r.rest(), capabilities)?),
            COM_STMT_PREPARE => Command::StmtPrepare(r.rest()),
            COM_STMT_EXECUTE => Command::StmtExecute(StmtExecute {
                stmt_id: r.u32("statement id")?,
                flags: r.u8("execute flags")?,
                iteration_count: r.u32("iteration count")?,
                params: r.rest(),
            }),
            COM_STMT_SEND_LONG_DATA => Command::StmtSendLongData {
                stmt_id: r.u32("statement id")?,
                param_id: r.u16("parameter id")?,
                data: r.rest(),
            },
            COM_STMT_CLOSE => Command::StmtClose(r.u32("statement id")?),
            COM_STMT_RESET => Command::StmtReset(r.u32("statement id")?),
            COM_SET_OPTION => Command::SetOption(r.u16("option")?),
            COM_STMT_FETCH => Command::StmtFetch { stmt_id: r.u32("statement id")?, rows: r.u32("row count")? },
            COM_RESET_CONNECTION => Command::ResetConnection,
            _ => Command::Other { code, body: r.rest() },
        })
    }

    /// The command byte.
    pub fn code(&self) -> u8 {
        match self {
            Command::Quit => COM_QUIT,
            Command::InitDb(_) => COM_INIT_DB,
            Command::Query(_) => COM_QUERY,
            Command::FieldList { .. } => COM_FIELD_LIST,
            Command::Statistics => COM_STATISTICS,
            Command::ProcessKill(_) => COM_PROCESS_KILL,
            Command::Debug => COM_DEBUG,
            Command::Ping => COM_PING,
            Command::ChangeUser(_) => COM_CHANGE_USER,
            Command::StmtPrepare(_) => COM_STMT_PREPARE,
            Command::StmtExecute(_) => COM_STMT_EXECUTE,
            Command::StmtSendLongData { .. } => COM_STMT_SEND_LONG_DATA,
            Command::StmtClose(_) => COM_STMT_CLOSE,
            Command::StmtReset(_) => COM_STMT_RESET,
            Command::SetOption(_) => COM_SET_OPTION,
            Command::StmtFetch { .. } => COM_STMT_FETCH,
            Command::ResetConnection => COM_RESET_CONNECTION,
            Command::Other { code, .. } => *code,
        }
    }

    /// Appends the payload (no packet header).
    pub fn write(&self, out: &mut Vec<u8>, capabilities: u32) {
        out.push(self.code());
        match self {
            Command::Quit | Command::Statistics | Command::Debug | Command::Ping | Command::ResetConnection => {}
            Command::InitDb(s) | Command::StmtPrepare(s) => out.extend_from_slice(s),
            Command::Query(q) => q.write_body(out, capabilities),
            Command::FieldList { table, wildcard } => {
                write_nul_str(out, table);
                out.extend_from_slice(wildcard);
            }
            Command::ProcessKill(id) | Command::StmtClose(id) | Command::StmtReset(id) => {
                out.extend_from_slice(&id.to_le_bytes())
            }
            Command::ChangeUser(c) => c.write_body(out, capabilities),
            Command::StmtExecute(e) => {
                out.extend_from_slice(&e.stmt_id.to_le_bytes());
                out.push(e.flags);
                out.extend_from_slice(&e.iteration_count.to_le_bytes());
                out.extend_from_slice(e.params);
            }
            Command::StmtSendLongData { stmt_id, param_id, data } => {
                out.extend_from_slice(&stmt_id.to_le_bytes());
                out.extend_from_slice(&param_id.to_le_bytes());
                out.extend_from_slice(data);
            }
            Command::SetOption(o) => out.extend_from_slice(&o.to_le_bytes()),
            Command::StmtFetch { stmt_id, rows } => {
                out.extend_from_slice(&stmt_id.to_le_bytes());
                out.extend_from_slice(&rows.to_le_bytes());
            }
            Command::Other { body, .. } => out.extend_from_slice(body),
        }
    }
}

/// A typed, named parameter: a query attribute or a COM_STMT_EXECUTE parameter.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BoundParam<'a> {
    /// The type sent with the value.
    pub ty: FieldType,
    /// The name (query attributes; empty for plain statement parameters).
    pub name: &'a [u8],
    /// The value ([`Value::Null`] for NULL).
    pub value: Value<'a>,
}

/// COM_QUERY's body: optional query attributes, then the query text.
#[derive(Clone, Debug, PartialEq)]
pub struct Query<'a> {
    /// Query attributes (only with `CLIENT_QUERY_ATTRIBUTES`). When composing, each value
    /// must fit its type (see [`write_binary_value`]), or the packet is malformed.
    pub attributes: Vec<BoundParam<'a>>,
    /// The SQL text.
    pub query: &'a [u8],
}

impl<'a> Query<'a> {
    fn parse_body(body: &'a [u8], capabilities: u32) -> Result<Self, Error> {
        if capabilities & CLIENT_QUERY_ATTRIBUTES == 0 {
            return Ok(Query { attributes: Vec::new(), query: body });
        }
        let mut r = Reader::new(body);
        let count = r.lenenc_int("parameter count")?;
        let _set_count = r.lenenc_int("parameter set count")?; // always 1
        let mut attributes = Vec::new();
        if count > 0 {
            let n = bounded_count(count, r.remaining())?;
            let bitmap = r.bytes(null_bitmap_len(n, 0), "null bitmap")?;
            if r.u8("new params bound flag")? != 1 {
                return Err(Error::Invalid("query attributes without types"));
            }
            let mut heads = Vec::with_capacity(n);
            for _ in 0..n {
                let ty = FieldType::from_bytes(r.array("parameter type")?);
                heads.push((ty, r.lenenc_str("parameter name")?));
            }
            for (i, (ty, name)) in heads.into_iter().enumerate() {
                let value = read_value(&mut r, ty, bitmap, i)?;
                attributes.push(BoundParam { ty, name, value });
            }
        }
        Ok(Query { attributes, query: r.rest() })
    }

    /// Writes the body after the command byte.
    fn write_body(&self, out: &mut Vec<u8>, capabilities: u32) {
        if capabilities & CLIENT_QUERY_ATTRIBUTES != 0 {
            write_lenenc_int(out, self.attributes.len() as u64);
            write_lenenc_int(out, 1);
            if !self.attributes.is_empty() {
                write_params(out, &self.attributes, true, true);
            }
        }
        out.extend_from_slice(self.query);
    }
}

/// Reads the value of parameter `i` (NULL if its bitmap bit is set).
fn read_value<'a>(r: &mut Reader<'a>, ty: FieldType, bitmap: &[u8], i: usize) -> Result<Value<'a>, Error> {
    if is_null(bitmap, i, 0) {
        return Ok(Value::Null);
    }
    let rest = r.rest();
    let (value, used) = parse_binary_value(ty, rest)?;
    *r = Reader::new(&rest[used..]);
    Ok(value)
}

/// A count read from the wire, capped by what the remaining bytes can describe (every
/// parameter needs at least one bitmap bit), so that it never drives a huge allocation.
fn bounded_count(count: u64, remaining: usize) -> Result<usize, Error> {
    usize::try_from(count).ok().filter(|&n| n / 8 <= remaining).ok_or(Error::Truncated("parameters"))
}

/// Writes null bitmap, new-params-bound flag, [types (+ names)], values.
fn write_params(out: &mut Vec<u8>, params: &[BoundParam<'_>], send_types: bool, names: bool) {
    let values: Vec<Value<'_>> = params.iter().map(|p| p.value).collect();
    write_null_bitmap(out, &values, 0);
    out.push(u8::from(send_types));
    if send_types {
        for p in params {
            out.extend_from_slice(&p.ty.to_bytes());
            if names {
                write_lenenc_str(out, p.name);
            }
        }
    }
    for p in params {
        // A value that does not fit its type writes nothing: `StmtExecute::write_with_params`
        // validates first; a `Query` with such an attribute composes a malformed packet.
        let mark = out.len();
        if write_binary_value(out, p.ty, &p.value).is_err() {
            out.truncate(mark);
        }
    }
}

/// COM_STMT_EXECUTE, with its parameters still raw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StmtExecute<'a> {
    /// The statement id from COM_STMT_PREPARE_OK.
    pub stmt_id: u32,
    /// Cursor type (`CURSOR_TYPE_*`) and `PARAMETER_COUNT_AVAILABLE`.
    pub flags: u8,
    /// Iteration count (always 1).
    pub iteration_count: u32,
    /// The raw parameter block (parameter count, null bitmap, types, values).
    pub params: &'a [u8],
}

/// Decoded COM_STMT_EXECUTE parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct ExecuteParams<'a> {
    /// Whether the types were sent (new-params-bound flag); otherwise they came from
    /// the previous execution.
    pub new_params_bound: bool,
    /// The parameters in order.
    pub params: Vec<BoundParam<'a>>,
}

impl ExecuteParams<'_> {
    /// The parameter types, to pass as `previous_types` for the next execution.
    pub fn types(&self) -> Vec<FieldType> {
        self.params.iter().map(|p| p.ty).collect()
    }
}

impl<'a> StmtExecute<'a> {
    /// Decodes the parameters of a statement with `num_params` parameters (from
    /// COM_STMT_PREPARE_OK). `previous_types` are the types bound by the previous
    /// execution, used when the client does not resend them.
    ///
    /// With `CLIENT_QUERY_ATTRIBUTES` and `PARAMETER_COUNT_AVAILABLE`, the count on the
    /// wire (parameters plus query attributes) replaces `num_params`, and every parameter
    /// has a name.
    pub fn params(
        &self,
        num_params: usize,
        capabilities: u32,
        previous_types: &[FieldType],
    ) -> Result<ExecuteParams<'a>, Error> {
        let mut r = Reader::new(self.params);
        let attrs = capabilities & CLIENT_QUERY_ATTRIBUTES != 0;
        let n = if attrs && self.flags & PARAMETER_COUNT_AVAILABLE != 0 {
            bounded_count(r.lenenc_int("parameter count")?, r.remaining())?
        } else {
            num_params
        };
        let mut out = ExecuteParams { new_params_bound: false, params: Vec::new() };
        if n == 0 {
            return Ok(out);
        }
        let bitmap = r.bytes(null_bitmap_len(n, 0), "null bitmap")?;
        out.new_params_bound = r.u8("new params bound flag")? == 1;
        let mut heads = Vec::with_capacity(n.min(r.remaining() / 2 + 1));
        if out.new_params_bound {
            for _ in 0..n {
                let ty = FieldType::from_bytes(r.array("parameter type")?);
                let name = if attrs { r.lenenc_str("parameter name")? } else { &[][..] };
                heads.push((ty, name));
            }
        } else {
            if previous_types.len() != n {
                return Err(Error::Invalid("parameter types (none sent and none bound before)"));
            }
            heads.extend(previous_types.iter().map(|&t| (t, &[][..])));
        }
        for (i, (ty, name)) in heads.into_iter().enumerate() {
            let value = read_value(&mut r, ty, bitmap, i)?;
            out.params.push(BoundParam { ty, name, value });
        }
        Ok(out)
    }

    /// Appends a whole COM_STMT_EXECUTE payload (command byte included) for `params`.
    ///
    /// `send_types` sets the new-params-bound flag (types, and with
    /// `CLIENT_QUERY_ATTRIBUTES` names, are written). With `CLIENT_QUERY_ATTRIBUTES` and
    /// `PARAMETER_COUNT_AVAILABLE` in `flags`, the parameter count is written first.
    /// Values must match their types ([`write_binary_value`]); mismatches are an error.
    pub fn write_with_params(
        out: &mut Vec<u8>,
        capabilities: u32,
        stmt_id: u32,
        flags: u8,
        params: &[BoundParam<'_>],
        send_types: bool,
    ) -> Result<(), Error> {
        for p in params {
            write_binary_value(&mut Vec::new(), p.ty, &p.value)?;
        }
        out.push(COM_STMT_EXECUTE);
        out.extend_from_slice(&stmt_id.to_le_bytes());
        out.push(flags);
        out.extend_from_slice(&1u32.to_le_bytes());
        let attrs = capabilities & CLIENT_QUERY_ATTRIBUTES != 0;
        if attrs && flags & PARAMETER_COUNT_AVAILABLE != 0 {
            write_lenenc_int(out, params.len() as u64);
        }
        if !params.is_empty() {
            write_params(out, params, send_types, attrs);
        }
        Ok(())
    }
}

/// COM_CHANGE_USER's body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChangeUser<'a> {
    /// The user name.
    pub user: &'a [u8],
    /// The auth response (1-byte length with `CLIENT_SECURE_CONNECTION`, else NUL-terminated).
    pub auth_response: &'a [u8],
    /// The schema (may be empty).
    pub database: &'a [u8],
    /// The collation id (2 bytes), when present.
    pub charset: Option<u16>,
    /// The auth plugin name, with `CLIENT_PLUGIN_AUTH` when present.
    pub auth_plugin_name: Option<&'a [u8]>,
    /// Connection attributes, with `CLIENT_CONNECT_ATTRS` when present.
    pub connect_attrs: Vec<(&'a [u8], &'a [u8])>,
}

impl<'a> ChangeUser<'a> {
    fn parse_body(body: &'a [u8], capabilities: u32) -> Result<Self, Error> {
        let mut r = Reader::new(body);
        let user = r.nul_str("user name")?;
        let auth_response = if capabilities & CLIENT_SECURE_CONNECTION != 0 {
            let n = r.u8("auth response length")?;
            r.bytes(usize::from(n), "auth response")?
        } else {
            r.nul_str("auth response")?
        };
        let mut c = ChangeUser {
            user,
            auth_response,
            database: r.nul_str_or_eof(),
            charset: None,
            auth_plugin_name: None,
            connect_attrs: Vec::new(),
        };
        if !r.is_empty() {
            c.charset = Some(r.u16("character set")?);
        }
        if capabilities & CLIENT_PLUGIN_AUTH != 0 && !r.is_empty() {
            c.auth_plugin_name = Some(r.nul_str_or_eof());
        }
        if capabilities & CLIENT_CONNECT_ATTRS != 0 && !r.is_empty() {
            let mut a = Reader::new(r.lenenc_str("connect attributes")?);
            while !a.is_empty() {
                let k = a.lenenc_str("connect attribute key")?;
                c.connect_attrs.push((k, a.lenenc_str("connect attribute value")?));
            }
        }
        Ok(c)
    }

    fn write_body(&self, out: &mut Vec<u8>, capabilities: u32) {
        write_nul_str(out, self.user);
        if capabilities & CLIENT_SECURE_CONNECTION != 0 {
            let n = self.auth_response.len().min(255);
            out.push(n as u8);
            out.extend_from_slice(&self.auth_response[..n]);
        } else {
            write_nul_str(out, self.auth_response);
        }
        write_nul_str(out, self.database);
        let plugin = self.auth_plugin_name.filter(|_| capabilities & CLIENT_PLUGIN_AUTH != 0);
        let attrs = capabilities & CLIENT_CONNECT_ATTRS != 0 && !self.connect_attrs.is_empty();
        if self.charset.is_some() || plugin.is_some() || attrs {
            out.extend_from_slice(&self.charset.unwrap_or(0).to_le_bytes());
        }
        if capabilities & CLIENT_PLUGIN_AUTH != 0 && (plugin.is_some() || attrs) {
            write_nul_str(out, plugin.unwrap_or_default());
        }
        if attrs {
            write_connect_attrs(out, &self.connect_attrs);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flags::*;
    use crate::value::{ColumnType, DateTime, Time};

    const CAPS: u32 = CLIENT_PROTOCOL_41 | CLIENT_SECURE_CONNECTION | CLIENT_PLUGIN_AUTH | CLIENT_CONNECT_ATTRS;

    fn round_trip(cmd: Command<'_>, caps: u32) -> Vec<u8> {
        let mut out = Vec::new();
        cmd.write(&mut out, caps);
        assert_eq!(Command::parse(&out, caps).unwrap(), cmd);
        for cut in 0..out.len() {
            let _ = Command::parse(&out[..cut], caps);
        }
        out
    }

    #[test]
    fn simple_commands() {
        assert_eq!(round_trip(Command::Quit, CAPS), [COM_QUIT]);
        assert_eq!(round_trip(Command::Ping, CAPS), [COM_PING]);
        assert_eq!(round_trip(Command::Statistics, CAPS), [COM_STATISTICS]);
        assert_eq!(round_trip(Command::ResetConnection, CAPS), [COM_RESET_CONNECTION]);
        assert_eq!(round_trip(Command::InitDb(b"shop"), CAPS), b"\x02shop");
        assert_eq!(round_trip(Command::StmtPrepare(b"SELECT ?"), CAPS), b"\x16SELECT ?");
        assert_eq!(round_trip(Command::StmtClose(7), CAPS), [COM_STMT_CLOSE, 7, 0, 0, 0]);
        assert_eq!(round_trip(Command::StmtReset(7), CAPS), [COM_STMT_RESET, 7, 0, 0, 0]);
        assert_eq!(round_trip(Command::SetOption(MYSQL_OPTION_MULTI_STATEMENTS_OFF), CAPS), [COM_SET_OPTION, 1, 0]);
        round_trip(Command::FieldList { table: b"users", wildcard: b"na%" }, CAPS);
        round_trip(Command::StmtSendLongData { stmt_id: 1, param_id: 2, data: b"chunk" }, CAPS);
        round_trip(Command::StmtFetch { stmt_id: 1, rows: 100 }, CAPS);
        round_trip(Command::ProcessKill(99), CAPS);
        round_trip(Command::Other { code: 0x99, body: b"whatever" }, CAPS);
        round_trip(Command::Other { code: COM_BINLOG_DUMP, body: b"" }, CAPS);
        assert!(matches!(Command::parse(&[], CAPS), Err(Error::Truncated(_))));
        assert!(matches!(Command::parse(&[COM_STMT_CLOSE, 1], CAPS), Err(Error::Truncated(_))));
    }

    #[test]
    fn query_plain_and_with_attributes() {
        let q = Command::Query(Query { attributes: Vec::new(), query: b"SELECT 1" });
        assert_eq!(round_trip(q, CAPS), b"\x03SELECT 1");
        let caps = CAPS | CLIENT_QUERY_ATTRIBUTES;
        // No attributes: count 0, set count 1.
        let q = Command::Query(Query { attributes: Vec::new(), query: b"SELECT 1" });
        assert_eq!(round_trip(q, caps), b"\x03\x00\x01SELECT 1");
        let attrs = vec![
            BoundParam { ty: FieldType::new(ColumnType::VarString), name: b"trace_id", value: Value::Bytes(b"abc") },
            BoundParam { ty: FieldType::new(ColumnType::Null), name: b"nothing", value: Value::Null },
            BoundParam { ty: FieldType::unsigned(ColumnType::LongLong), name: b"n", value: Value::UInt(5) },
        ];
        let out = round_trip(Command::Query(Query { attributes: attrs, query: b"SELECT ?" }), caps);
        assert_eq!(&out[1..5], &[3, 1, 0b010, 1]); // counts, null bitmap, bound flag
    }

    #[test]
    fn stmt_execute_all_types() {
        let dt = DateTime { year: 2024, month: 5, day: 17, hour: 10, minute: 11, second: 12, micros: 13 };
        let t = Time { negative: false, days: 1, hours: 2, minutes: 3, seconds: 4, micros: 0 };
        let params = [
            BoundParam { ty: FieldType::new(ColumnType::Tiny), name: b"", value: Value::Int(-1) },
            BoundParam { ty: FieldType::new(ColumnType::Short), name: b"", value: Value::Int(300) },
            BoundParam { ty: FieldType::new(ColumnType::Long), name: b"", value: Value::Null },
            BoundParam { ty: FieldType::unsigned(ColumnType::LongLong), name: b"", value: Value::UInt(u64::MAX) },
            BoundParam { ty: FieldType::new(ColumnType::Float), name: b"", value: Value::Float(0.5) },
            BoundParam { ty: FieldType::new(ColumnType::Double), name: b"", value: Value::Double(1e300) },
            BoundParam { ty: FieldType::new(ColumnType::NewDecimal), name: b"", value: Value::Bytes(b"3.14") },
            BoundParam { ty: FieldType::new(ColumnType::Blob), name: b"", value: Value::Bytes(&[0; 70000]) },
            BoundParam {
                ty: FieldType::new(ColumnType::Date),
                name: b"",
                value: Value::DateTime(DateTime { hour: 0, minute: 0, second: 0, micros: 0, ..dt }),
            },
            BoundParam { ty: FieldType::new(ColumnType::DateTime), name: b"", value: Value::DateTime(dt) },
            BoundParam {
                ty: FieldType::new(ColumnType::Timestamp),
                name: b"",
                value: Value::DateTime(DateTime { micros: 0, ..dt }),
            },
            BoundParam { ty: FieldType::new(ColumnType::Time), name: b"", value: Value::Time(t) },
        ];
        let mut out = Vec::new();
        StmtExecute::write_with_params(&mut out, CAPS, 42, CURSOR_TYPE_NO_CURSOR, &params, true).unwrap();
        let Command::StmtExecute(e) = Command::parse(&out, CAPS).unwrap() else { panic!() };
        assert_eq!((e.stmt_id, e.flags, e.iteration_count), (42, 0, 1));
        let decoded = e.params(params.len(), CAPS, &[]).unwrap();
        assert!(decoded.new_params_bound);
        assert_eq!(decoded.params, params);
        // Re-execution without types: the previous types are used.
        let mut again = Vec::new();
        StmtExecute::write_with_params(&mut again, CAPS, 42, 0, &params, false).unwrap();
        let Command::StmtExecute(e2) = Command::parse(&again, CAPS).unwrap() else { panic!() };
        assert!(e2.params(params.len(), CAPS, &[]).is_err());
        let d2 = e2.params(params.len(), CAPS, &decoded.types()).unwrap();
        assert!(!d2.new_params_bound);
        assert_eq!(d2.params, params);
        // Truncations never panic.
        for cut in 0..out.len().min(200) {
            if let Ok(Command::StmtExecute(e)) = Command::parse(&out[..cut], CAPS) {
                assert!(e.params(params.len(), CAPS, &[]).is_err());
            }
        }
        // No parameters: nothing after the iteration count.
        let mut none = Vec::new();
        StmtExecute::write_with_params(&mut none, CAPS, 1, 0, &[], true).unwrap();
        assert_eq!(none.len(), 10);
        // Mismatched value: error, nothing written.
        let bad = [BoundParam { ty: FieldType::new(ColumnType::Long), name: b"", value: Value::Bytes(b"x") }];
        let mut o = Vec::new();
        assert!(StmtExecute::write_with_params(&mut o, CAPS, 1, 0, &bad, true).is_err());
        assert!(o.is_empty());
    }

    #[test]
    fn stmt_execute_with_query_attributes() {
        let caps = CAPS | CLIENT_QUERY_ATTRIBUTES;
        let params = [
            BoundParam { ty: FieldType::new(ColumnType::Long), name: b"", value: Value::Int(1) },
            BoundParam { ty: FieldType::new(ColumnType::VarString), name: b"attr", value: Value::Bytes(b"v") },
        ];
        let mut out = Vec::new();
        StmtExecute::write_with_params(&mut out, caps, 3, PARAMETER_COUNT_AVAILABLE, &params, true).unwrap();
        let Command::StmtExecute(e) = Command::parse(&out, caps).unwrap() else { panic!() };
        // The statement has 1 parameter; the count on the wire (2) wins.
        assert_eq!(e.params(1, caps, &[]).unwrap().params, params);
    }

    #[test]
    fn change_user() {
        let c = ChangeUser {
            user: b"bob",
            auth_response: &[1, 2, 3, 0, 5],
            database: b"db",
            charset: Some(45),
            auth_plugin_name: Some(b"mysql_native_password"),
            connect_attrs: vec![(b"k", b"v")],
        };
        round_trip(Command::ChangeUser(c.clone()), CAPS);
        // Minimal old form: user, NUL-terminated password, database.
        let old =
            ChangeUser { auth_response: b"pw", charset: None, auth_plugin_name: None, connect_attrs: Vec::new(), ..c };
        let out = round_trip(Command::ChangeUser(old), CLIENT_PROTOCOL_41);
        assert_eq!(out, b"\x11bob\0pw\0db\0");
    }

    #[test]
    fn huge_counts_do_not_allocate() {
        let caps = CAPS | CLIENT_QUERY_ATTRIBUTES;
        let payload = [COM_QUERY, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 1];
        assert!(Command::parse(&payload, caps).is_err());
        let e = StmtExecute { stmt_id: 1, flags: 0, iteration_count: 1, params: &[0, 1] };
        assert!(e.params(usize::MAX, CAPS, &[]).is_err());
    }
}
