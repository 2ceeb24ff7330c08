"""Server-side prepared statements on a PyMySQL connection, byte by byte (PyMySQL has none):
COM_STMT_PREPARE / EXECUTE / SEND_LONG_DATA / RESET / CLOSE, so tests control exactly what a
client like libmariadb sends, e.g. parameter types only with the first execution."""
import struct

COM_STMT_PREPARE, COM_STMT_EXECUTE, COM_STMT_SEND_LONG_DATA, COM_STMT_CLOSE, COM_STMT_RESET = 0x16, 0x17, 0x18, 0x19, 0x1A
TYPE_LONGLONG, TYPE_VAR_STRING = 0x08, 0xFD


class ServerError(Exception):
    """An ERR packet: args = (code, message)."""


def _packet(conn):
    """The next packet's payload (bytes); raises ServerError on ERR."""
    p = conn._read_packet(packet_type=_Raw)
    return p.data


class _Raw:
    """Packet wrapper for PyMySQL's _read_packet that keeps ERR packets as data."""

    def __init__(self, data, encoding):
        self.data = data

    def is_error_packet(self):
        return False  # checked by _check, which raises ServerError


def _check(data):
    if data[:1] == b"\xff":
        code = struct.unpack_from("<H", data, 1)[0]
        raise ServerError(code, data[9:].decode(errors="replace"))
    return data


def _is_eof(data):
    return data[:1] == b"\xfe" and len(data) < 9


def _lenenc(data, pos):
    """(value, new pos) of a length-encoded integer."""
    b = data[pos]
    if b < 0xFB:
        return b, pos + 1
    if b == 0xFC:
        return struct.unpack_from("<H", data, pos + 1)[0], pos + 3
    if b == 0xFD:
        return int.from_bytes(data[pos + 1:pos + 4], "little"), pos + 4
    return struct.unpack_from("<Q", data, pos + 1)[0], pos + 9


# Binary-row sizes of the (signed) integer types: TINY, SHORT, LONG, LONGLONG, INT24, YEAR.
_INTS = {0x01: (1, "<b"), 0x02: (2, "<h"), 0x03: (4, "<i"), 0x08: (8, "<q"), 0x09: (4, "<i"), 0x0D: (2, "<h")}


def _column_type(data):
    """The type code of a ColumnDefinition41 payload (after its six length-encoded strings,
    the fixed block: length, charset, column length, type)."""
    pos = 0
    for _ in range(6):
        n, pos = _lenenc(data, pos)
        pos += n
    return data[pos + 1 + 2 + 4]


def prepare(conn, sql):
    """COM_STMT_PREPARE: (statement id, number of parameters)."""
    conn._execute_command(COM_STMT_PREPARE, sql.encode())
    ok = _check(_packet(conn))
    stmt_id, ncols, nparams = struct.unpack_from("<IHH", ok, 1)
    for n in (nparams, ncols):
        if n:
            for _ in range(n):
                _packet(conn)
            assert _is_eof(_packet(conn))
    return stmt_id, nparams


def send_long_data(conn, stmt_id, param, data: bytes):
    """COM_STMT_SEND_LONG_DATA (no reply)."""
    conn._execute_command(COM_STMT_SEND_LONG_DATA, struct.pack("<IH", stmt_id, param) + data)


def close(conn, stmt_id):
    """COM_STMT_CLOSE (no reply)."""
    conn._execute_command(COM_STMT_CLOSE, struct.pack("<I", stmt_id))


def reset(conn, stmt_id):
    """COM_STMT_RESET: returns the OK packet."""
    conn._execute_command(COM_STMT_RESET, struct.pack("<I", stmt_id))
    return _check(_packet(conn))


def execute(conn, stmt_id, params, send_types=True, long_data=()):
    """COM_STMT_EXECUTE with int/str `params` (indexes in long_data are sent before, as
    SEND_LONG_DATA, and left out here). send_types=False sends new-params-bound = 0, as
    clients do after the first execution. Returns the rows, each a tuple of bytes/None (ints
    for integer columns, read as signed), or the affected row count for an OK."""
    body = struct.pack("<IBI", stmt_id, 0, 1)
    if params:
        body += bytes((len(params) + 7) // 8)
        body += b"\x01" if send_types else b"\x00"
        if send_types:
            for p in params:
                body += struct.pack("<H", TYPE_LONGLONG if isinstance(p, int) else TYPE_VAR_STRING)
        for i, p in enumerate(params):
            if i in long_data:
                continue
            if isinstance(p, int):
                body += struct.pack("<q", p)
            else:
                raw = p.encode()
                assert len(raw) < 251
                body += bytes([len(raw)]) + raw
    conn._execute_command(COM_STMT_EXECUTE, body)
    first = _check(_packet(conn))
    if first[:1] == b"\x00":
        return _lenenc(first, 1)[0]
    ncols, _ = _lenenc(first, 0)
    types = [_column_type(_packet(conn)) for _ in range(ncols)]
    assert _is_eof(_packet(conn))
    rows = []
    while True:
        data = _check(_packet(conn))
        if _is_eof(data):
            return rows
        nb = (ncols + 7 + 2) // 8
        bitmap, pos, row = data[1:1 + nb], 1 + nb, []
        for c in range(ncols):
            if bitmap[(c + 2) // 8] & (1 << ((c + 2) % 8)):
                row.append(None)
                continue
            if types[c] in _INTS:
                size, fmt = _INTS[types[c]]
                row.append(struct.unpack_from(fmt, data, pos)[0])
                pos += size
                continue
            n, pos = _lenenc(data, pos)
            row.append(data[pos:pos + n])
            pos += n
        rows.append(tuple(row))
