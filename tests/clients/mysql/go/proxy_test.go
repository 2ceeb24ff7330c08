// The unchanged Go driver github.com/go-sql-driver/mysql through the sqlcached MySQL proxy.
//
// Run by tests/querycache/test_client_go.py with PROXY_ADDR (the proxy), DIRECT_ADDR (the
// MariaDB behind it), MYSQL_USER, MYSQL_PASSWORD and MYSQL_DB (a database with a table
// t(id INT PRIMARY KEY, v VARCHAR(64), n INT) holding rows 1..100). Every test compares what the
// proxy returns with what MariaDB returns directly. interpolateParams=false (the default) makes
// the driver use server-side prepared statements (COM_STMT_PREPARE/EXECUTE/CLOSE) for every
// query with arguments.
package proxytest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

func env(t *testing.T, name string) string {
	v := os.Getenv(name)
	if v == "" {
		t.Skipf("%s is not set (run through tests/querycache/test_client_go.py)", name)
	}
	return v
}

// open connects to addr with the test account; extra is appended to the DSN's parameters.
func open(t *testing.T, addr, password, extra string) *sql.DB {
	dsn := fmt.Sprintf("%s:%s@tcp(%s)/%s?interpolateParams=false&timeout=10s&readTimeout=60s&writeTimeout=60s%s",
		env(t, "MYSQL_USER"), password, addr, env(t, "MYSQL_DB"), extra)
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatalf("open %s: %v", addr, err)
	}
	db.SetConnMaxLifetime(time.Minute)
	t.Cleanup(func() { db.Close() })
	return db
}

func proxy(t *testing.T, extra string) *sql.DB {
	return open(t, env(t, "PROXY_ADDR"), env(t, "MYSQL_PASSWORD"), extra)
}

func direct(t *testing.T, extra string) *sql.DB {
	return open(t, env(t, "DIRECT_ADDR"), env(t, "MYSQL_PASSWORD"), extra)
}

func one(t *testing.T, db *sql.DB, query string, args ...any) string {
	t.Helper()
	var s sql.NullString
	if err := db.QueryRow(query, args...).Scan(&s); err != nil {
		t.Fatalf("%s %v: %v", query, args, err)
	}
	if !s.Valid {
		return "NULL"
	}
	return s.String
}

func exec(t *testing.T, db *sql.DB, query string, args ...any) sql.Result {
	t.Helper()
	res, err := db.Exec(query, args...)
	if err != nil {
		t.Fatalf("%s %v: %v", query, args, err)
	}
	return res
}

func TestPingAndAuth(t *testing.T) {
	db := proxy(t, "")
	if err := db.Ping(); err != nil {
		t.Fatalf("ping through the proxy: %v", err)
	}
	if got := one(t, db, "SELECT CURRENT_USER()"); !strings.HasPrefix(got, env(t, "MYSQL_USER")+"@") {
		t.Fatalf("CURRENT_USER() = %q", got)
	}
}

func TestWrongPassword(t *testing.T) {
	for name, addr := range map[string]string{"proxy": env(t, "PROXY_ADDR"), "direct": env(t, "DIRECT_ADDR")} {
		db := open(t, addr, "not-the-password", "")
		err := db.Ping()
		var me *mysql.MySQLError
		if !errors.As(err, &me) || me.Number != 1045 {
			t.Fatalf("%s: wrong password gave %v, want MySQL error 1045", name, err)
		}
	}
}

func TestPreparedSelectCachedTwice(t *testing.T) {
	p, d := proxy(t, ""), direct(t, "")
	stmt, err := p.Prepare("SELECT v, n FROM t WHERE id = ?")
	if err != nil {
		t.Fatalf("prepare: %v", err)
	}
	defer stmt.Close()
	for round := 0; round < 3; round++ {
		for _, id := range []int{1, 2, 3, 42} {
			var v string
			var n int
			if err := stmt.QueryRow(id).Scan(&v, &n); err != nil {
				t.Fatalf("execute id=%d: %v", id, err)
			}
			want := one(t, d, "SELECT CONCAT(v, '/', n) FROM t WHERE id = ?", id)
			if got := fmt.Sprintf("%s/%d", v, n); got != want {
				t.Fatalf("round %d id=%d: proxy %q, direct %q", round, id, got, want)
			}
		}
	}
}

func TestPreparedTypes(t *testing.T) {
	p, d := proxy(t, ""), direct(t, "")
	q := "SELECT ?, ? + 1, CAST(? AS DECIMAL(10,3)), CAST(? AS DATETIME(6)), ?, HEX(?), ? IS NULL"
	args := []any{"héllo", int64(-9007199254740993), 3.25, "2024-02-29 12:34:56.789012", []byte{0, 1, 2, 255}, []byte("\x00x"), nil}
	row := func(db *sql.DB) []string {
		rows, err := db.Query(q, args...)
		if err != nil {
			t.Fatalf("query: %v", err)
		}
		defer rows.Close()
		cols, _ := rows.Columns()
		vals := make([]sql.RawBytes, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if !rows.Next() {
			t.Fatalf("no row: %v", rows.Err())
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatalf("scan: %v", err)
		}
		out := make([]string, len(vals))
		for i, v := range vals {
			out[i] = fmt.Sprintf("%q", []byte(v))
		}
		return out
	}
	got, want := row(p), row(d)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("proxy %v\ndirect %v", got, want)
	}
}

func TestPreparedWritesVisible(t *testing.T) {
	p := proxy(t, "")
	exec(t, p, "DELETE FROM t WHERE id >= 1000")
	ins, err := p.Prepare("INSERT INTO t (id, v, n) VALUES (?, ?, ?)")
	if err != nil {
		t.Fatalf("prepare insert: %v", err)
	}
	defer ins.Close()
	sel, err := p.Prepare("SELECT v FROM t WHERE id = ?")
	if err != nil {
		t.Fatalf("prepare select: %v", err)
	}
	defer sel.Close()
	upd, err := p.Prepare("UPDATE t SET v = ? WHERE id = ?")
	if err != nil {
		t.Fatalf("prepare update: %v", err)
	}
	defer upd.Close()
	for i := 0; i < 20; i++ {
		id := 1000 + i
		if _, err := ins.Exec(id, fmt.Sprintf("go-%d", i), i); err != nil {
			t.Fatalf("insert %d: %v", id, err)
		}
		for j := 0; j < 3; j++ {
			var v string
			if err := sel.QueryRow(id).Scan(&v); err != nil {
				t.Fatalf("select %d: %v", id, err)
			}
			want := fmt.Sprintf("go-%d", i)
			if j > 0 {
				want = fmt.Sprintf("go-%d-upd%d", i, j-1)
			}
			if v != want {
				t.Fatalf("id %d after write %d: got %q, want %q", id, j, v, want)
			}
			if _, err := upd.Exec(fmt.Sprintf("go-%d-upd%d", i, j), id); err != nil {
				t.Fatalf("update %d: %v", id, err)
			}
		}
	}
	if got := one(t, p, "SELECT COUNT(*) FROM t WHERE id >= ?", 1000); got != "20" {
		t.Fatalf("count after inserts = %s", got)
	}
	exec(t, p, "DELETE FROM t WHERE id >= ?", 1000)
	if got := one(t, p, "SELECT COUNT(*) FROM t WHERE id >= ?", 1000); got != "0" {
		t.Fatalf("count after delete = %s", got)
	}
}

func TestTransaction(t *testing.T) {
	p := proxy(t, "")
	before := one(t, p, "SELECT v FROM t WHERE id = ?", 7)
	_ = one(t, p, "SELECT v FROM t WHERE id = ?", 7) // cached now (or soon)
	tx, err := p.Begin()
	if err != nil {
		t.Fatalf("begin: %v", err)
	}
	if _, err := tx.Exec("UPDATE t SET v = ? WHERE id = ?", "in-tx", 7); err != nil {
		t.Fatalf("update in tx: %v", err)
	}
	var v string
	if err := tx.QueryRow("SELECT v FROM t WHERE id = ?", 7).Scan(&v); err != nil || v != "in-tx" {
		t.Fatalf("read own write in tx: %q %v", v, err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatalf("rollback: %v", err)
	}
	if got := one(t, p, "SELECT v FROM t WHERE id = ?", 7); got != before {
		t.Fatalf("after rollback: %q, want %q", got, before)
	}
	tx, err = p.Begin()
	if err != nil {
		t.Fatalf("begin: %v", err)
	}
	if _, err := tx.Exec("UPDATE t SET v = ? WHERE id = ?", "committed", 7); err != nil {
		t.Fatalf("update in tx: %v", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatalf("commit: %v", err)
	}
	if got := one(t, p, "SELECT v FROM t WHERE id = ?", 7); got != "committed" {
		t.Fatalf("after commit: %q", got)
	}
	exec(t, p, "UPDATE t SET v = ? WHERE id = ?", before, 7)
}

func TestErrorPassthrough(t *testing.T) {
	p, d := proxy(t, ""), direct(t, "")
	for _, q := range []string{"SELEC 1", "SELECT * FROM no_such_table", "SELECT no_such_col FROM t"} {
		_, perr := p.Exec(q)
		_, derr := d.Exec(q)
		var pm, dm *mysql.MySQLError
		if !errors.As(perr, &pm) || !errors.As(derr, &dm) {
			t.Fatalf("%s: proxy %v, direct %v", q, perr, derr)
		}
		if pm.Number != dm.Number || pm.Message != dm.Message || pm.SQLState != dm.SQLState {
			t.Fatalf("%s: proxy %d %s %q, direct %d %s %q", q, pm.Number, pm.SQLState, pm.Message,
				dm.Number, dm.SQLState, dm.Message)
		}
	}
	// the connection stays usable after errors
	if got := one(t, p, "SELECT v FROM t WHERE id = ?", 1); got == "" {
		t.Fatalf("empty after errors")
	}
}

func TestMultiStatements(t *testing.T) {
	p := proxy(t, "&multiStatements=true")
	rows, err := p.Query("SELECT 1; SELECT v FROM t WHERE id = 2; SELECT 3, 4")
	if err != nil {
		t.Fatalf("multi: %v", err)
	}
	defer rows.Close()
	var sets [][]string
	for {
		var set []string
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]sql.RawBytes, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatalf("scan: %v", err)
			}
			for _, v := range vals {
				set = append(set, string(v))
			}
		}
		sets = append(sets, set)
		if !rows.NextResultSet() {
			break
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("rows: %v", err)
	}
	want := fmt.Sprint([][]string{{"1"}, {one(t, direct(t, ""), "SELECT v FROM t WHERE id = 2")}, {"3", "4"}})
	if fmt.Sprint(sets) != want {
		t.Fatalf("result sets %v, want %s", sets, want)
	}
}

func TestBigRow(t *testing.T) {
	p, d := proxy(t, "&maxAllowedPacket=0"), direct(t, "&maxAllowedPacket=0")
	exec(t, d, "CREATE TABLE IF NOT EXISTS go_big (id INT PRIMARY KEY, b LONGBLOB)")
	big := bytes.Repeat([]byte("0123456789abcdef"), (17<<20)/16+3) // > 16 MiB: split packets
	exec(t, p, "REPLACE INTO go_big VALUES (?, ?)", 1, big)
	for _, db := range []*sql.DB{p, p, d} {
		var b []byte
		if err := db.QueryRow("SELECT b FROM go_big WHERE id = ?", 1).Scan(&b); err != nil {
			t.Fatalf("select big: %v", err)
		}
		if sha256.Sum256(b) != sha256.Sum256(big) {
			t.Fatalf("big row: %d bytes back, want %d", len(b), len(big))
		}
	}
	if got := one(t, p, "SELECT LENGTH(b) FROM go_big WHERE id = 1"); got != fmt.Sprint(len(big)) {
		t.Fatalf("LENGTH = %s", got)
	}
}

func TestInitDB(t *testing.T) {
	p := proxy(t, "")
	conn, err := p.Conn(context.Background())
	if err != nil {
		t.Fatalf("conn: %v", err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(context.Background(), "USE information_schema"); err != nil {
		t.Fatalf("use: %v", err)
	}
	var db string
	if err := conn.QueryRowContext(context.Background(), "SELECT DATABASE()").Scan(&db); err != nil || db != "information_schema" {
		t.Fatalf("DATABASE() = %q %v", db, err)
	}
}

// TestPoolAfterWaitTimeout: a pooled connection that sat idle past the backend's
// wait_timeout is closed by MariaDB. Directly, the driver's liveness check sees the closed
// socket and the pool quietly opens a new one; through the proxy the same must happen (the
// proxy closes the client when its backend goes), instead of the next BEGIN failing with
// ERROR 1158 "Lost connection to MySQL backend".
func TestPoolAfterWaitTimeout(t *testing.T) {
	for _, db := range []*sql.DB{direct(t, "&wait_timeout=1"), proxy(t, "&wait_timeout=1")} {
		db.SetMaxOpenConns(1)
		db.SetMaxIdleConns(1)
		if got := one(t, db, "SELECT v FROM t WHERE id = 3"); got == "" {
			t.Fatalf("empty read")
		}
		time.Sleep(2500 * time.Millisecond)
		tx, err := db.Begin()
		if err != nil {
			t.Fatalf("BEGIN after the backend closed the idle connection: %v", err)
		}
		var v string
		if err := tx.QueryRow("SELECT v FROM t WHERE id = 3").Scan(&v); err != nil {
			t.Fatalf("read in the new transaction: %v", err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatalf("COMMIT: %v", err)
		}
	}
}

// TestTLSCustom: tls=custom with the test CA (TLS_CA): the proxy terminates TLS, verifies
// as the driver asks (server name localhost), and answers as MariaDB does directly.
func TestTLSCustom(t *testing.T) {
	caFile := env(t, "TLS_CA")
	pem, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatalf("read %s: %v", caFile, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatalf("no certificate in %s", caFile)
	}
	if err := mysql.RegisterTLSConfig("custom", &tls.Config{RootCAs: pool, ServerName: "localhost", MinVersion: tls.VersionTLS12}); err != nil {
		t.Fatal(err)
	}
	db := proxy(t, "&tls=custom")
	want := one(t, direct(t, ""), "SELECT v FROM t WHERE id = ?", 9)
	for i := 0; i < 3; i++ {
		if got := one(t, db, "SELECT v FROM t WHERE id = ?", 9); got != want {
			t.Fatalf("over TLS: %q, directly: %q", got, want)
		}
	}
	if got := one(t, db, "SELECT v FROM t WHERE id = 10"); got != one(t, direct(t, ""), "SELECT v FROM t WHERE id = 10") {
		t.Fatalf("text query over TLS: %q", got)
	}
	// A client that trusts nothing the proxy shows must refuse it.
	if err := mysql.RegisterTLSConfig("strangers", &tls.Config{RootCAs: x509.NewCertPool(), ServerName: "localhost"}); err != nil {
		t.Fatal(err)
	}
	if err := proxy(t, "&tls=strangers").Ping(); err == nil {
		t.Fatalf("a client without the CA accepted the proxy's certificate")
	}
}
