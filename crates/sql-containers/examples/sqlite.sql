-- The tables of examples/sqlite.toml (crates/sql-containers/README.md):
--   sqlite3 data/containers.db < crates/sql-containers/examples/sqlite.sql
CREATE TABLE IF NOT EXISTS kv (k TEXT PRIMARY KEY, v BLOB, flags INTEGER, cas INTEGER, exp INTEGER);
CREATE TABLE IF NOT EXISTS users (id INTEGER PRIMARY KEY, name TEXT, email TEXT);
INSERT OR IGNORE INTO users (id, name, email) VALUES (42, 'Ann', 'ann@example.org');
