// Command e001 is seed 001's "game" app (bench/seeds/e001_game.py runs it): each transaction
// (A) reads a player row by its integer primary key, (B) updates that row's stats and stores
// it back, (C) looks up the player's profile in a second table by the email read in (A).
//
// Modes (-mode), all with the same transaction:
//
//	db          plain SQL on MariaDB (-dsn)
//	cacheaside  the seed's memcached code: A and C read the cache (-mc) first, on a miss read
//	            MariaDB and set the cache; B updates MariaDB and sets the new row in the cache
//	containers  no SQL at all: get/set @@players.<id>, get @@profiles.<email> on sqlcached (-mc)
//	qc          plain SQL, -dsn pointing at sqlcached's MySQL query-cache port
//
// Before measuring it can -preload the cache-aside keys of rows 1..n (pipelined `set
// noreply` from one SELECT per table) and -warm the first K profiles through the app's read
// path (-dur 0: only that). Then -c clients run uniform random ids in 1..n for -warmup, then
// -dur measured.
// Output: one JSON line per phase, `PRELOAD {...}`, `WARM {...}`, `RESULT {...}` (tps, p50/p99
// per transaction, p50 of the update, and the deltas of the cache's `stats` and of MariaDB's
// buffer pool counters and of the CPU time of -pids over the measured window).
package main

import (
	"bufio"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
	_ "github.com/go-sql-driver/mysql"
)

const (
	selPlayer  = "SELECT name,email,level,score,gold,stats FROM players WHERE id=?"
	updPlayer  = "UPDATE players SET level=?,score=?,gold=? WHERE id=?"
	selProfile = "SELECT player_id,nick,country,bio FROM profiles WHERE email=?"
)

var (
	mode    = flag.String("mode", "db", "db | cacheaside | containers | qc")
	dsn     = flag.String("dsn", "", "the app's SQL DSN (go-sql-driver format)")
	dbdsn   = flag.String("dbdsn", "", "MariaDB itself (SHOW GLOBAL STATUS, preload reads); default -dsn")
	mcAddr  = flag.String("mc", "", "memcached-protocol address (cacheaside, containers)")
	stAddr  = flag.String("stats", "", "memcached-protocol address whose `stats` to diff (default -mc)")
	n       = flag.Int("n", 1000, "ids 1..n")
	clients = flag.Int("c", 8, "concurrent clients")
	warmup  = flag.Duration("warmup", 3*time.Second, "unmeasured run before measuring")
	dur     = flag.Duration("dur", 8*time.Second, "measured run (0: only -preload / -warm, no workload)")
	preload = flag.Bool("preload", false, "bulk-set the cache-aside keys of rows 1..n into -mc first")
	warmK   = flag.Int("warm", 0, "read the first K profiles through the app's read path first (qc, containers)")
	seed    = flag.Int64("seed", 1, "random seed")
	pids    = flag.String("pids", "", "name=pid,... whose CPU time over the measured window to report")
)

// player is one row of `players` (minus its id).
type player struct {
	name, email        string
	level, score, gold int64
	stats              string
}

// encode joins a player as the container's value: name|email|level|score|gold|stats.
func (p *player) encode() []byte {
	return []byte(fmt.Sprintf("%s|%s|%d|%d|%d|%s", p.name, p.email, p.level, p.score, p.gold, p.stats))
}

// decodePlayer parses encode()'s format.
func decodePlayer(b []byte) (*player, error) {
	f := strings.SplitN(string(b), "|", 6)
	if len(f) != 6 {
		return nil, fmt.Errorf("bad player value %.60q", b)
	}
	p := &player{name: f[0], email: f[1], stats: f[5]}
	var err error
	if p.level, err = strconv.ParseInt(f[2], 10, 64); err != nil {
		return nil, err
	}
	if p.score, err = strconv.ParseInt(f[3], 10, 64); err != nil {
		return nil, err
	}
	if p.gold, err = strconv.ParseInt(f[4], 10, 64); err != nil {
		return nil, err
	}
	return p, nil
}

// app holds the connections of one run.
type app struct {
	db *sql.DB
	mc *memcache.Client
}

// readPlayerSQL is step A in SQL.
func (a *app) readPlayerSQL(id int) (*player, error) {
	p := &player{}
	err := a.db.QueryRow(selPlayer, id).Scan(&p.name, &p.email, &p.level, &p.score, &p.gold, &p.stats)
	return p, err
}

// readProfileSQL is step C in SQL; returns the profile joined with '|'.
func (a *app) readProfileSQL(email string) ([]byte, error) {
	var pid int64
	var nick, country, bio string
	if err := a.db.QueryRow(selProfile, email).Scan(&pid, &nick, &country, &bio); err != nil {
		return nil, err
	}
	return []byte(fmt.Sprintf("%d|%s|%s|%s", pid, nick, country, bio)), nil
}

// readPlayer is step A as the mode does it.
func (a *app) readPlayer(id int) (*player, error) {
	switch *mode {
	case "cacheaside":
		key := "p:" + strconv.Itoa(id)
		if it, err := a.mc.Get(key); err == nil {
			return decodePlayer(it.Value)
		} else if err != memcache.ErrCacheMiss {
			return nil, err
		}
		p, err := a.readPlayerSQL(id)
		if err != nil {
			return nil, err
		}
		return p, a.mc.Set(&memcache.Item{Key: key, Value: p.encode()})
	case "containers":
		it, err := a.mc.Get("@@players." + strconv.Itoa(id))
		if err != nil {
			return nil, fmt.Errorf("get @@players.%d: %w", id, err)
		}
		return decodePlayer(it.Value)
	default:
		return a.readPlayerSQL(id)
	}
}

// writePlayer is step B as the mode does it.
func (a *app) writePlayer(id int, p *player) error {
	switch *mode {
	case "containers":
		return a.mc.Set(&memcache.Item{Key: "@@players." + strconv.Itoa(id), Value: p.encode()})
	case "cacheaside":
		if _, err := a.db.Exec(updPlayer, p.level, p.score, p.gold, id); err != nil {
			return err
		}
		return a.mc.Set(&memcache.Item{Key: "p:" + strconv.Itoa(id), Value: p.encode()})
	default:
		_, err := a.db.Exec(updPlayer, p.level, p.score, p.gold, id)
		return err
	}
}

// readProfile is step C as the mode does it.
func (a *app) readProfile(email string) ([]byte, error) {
	switch *mode {
	case "cacheaside":
		key := "e:" + email
		if it, err := a.mc.Get(key); err == nil {
			return it.Value, nil
		} else if err != memcache.ErrCacheMiss {
			return nil, err
		}
		v, err := a.readProfileSQL(email)
		if err != nil {
			return nil, err
		}
		return v, a.mc.Set(&memcache.Item{Key: key, Value: v})
	case "containers":
		it, err := a.mc.Get("@@profiles." + email)
		if err != nil {
			return nil, fmt.Errorf("get @@profiles.%s: %w", email, err)
		}
		return it.Value, nil
	default:
		return a.readProfileSQL(email)
	}
}

// txn runs one A+B+C transaction; returns how long B took.
func (a *app) txn(id int) (time.Duration, error) {
	p, err := a.readPlayer(id)
	if err != nil {
		return 0, err
	}
	p.score += 1 + int64(id%3)
	p.gold += int64(id%7) + 1
	p.level = p.score / 50
	t := time.Now()
	if err := a.writePlayer(id, p); err != nil {
		return 0, err
	}
	upd := time.Since(t)
	v, err := a.readProfile(p.email)
	if err != nil {
		return 0, err
	}
	if len(v) < 10 {
		return 0, fmt.Errorf("short profile %q for %s", v, p.email)
	}
	return upd, nil
}

// email is the address of player id (as loaded by e001_game.py: sorts like the id).
func email(id int) string { return fmt.Sprintf("u%09d@game.example", id) }

// memcachedStats reads `stats` from addr as name -> number.
func memcachedStats(addr string) map[string]float64 {
	out := map[string]float64{}
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return out
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "stats\r\n")
	r := bufio.NewReader(c)
	for {
		line, err := r.ReadString('\n')
		if err != nil || strings.HasPrefix(line, "END") {
			break
		}
		f := strings.Fields(line)
		if len(f) == 3 && f[0] == "STAT" {
			if v, err := strconv.ParseFloat(f[2], 64); err == nil {
				out[f[1]] = v
			}
		}
	}
	return out
}

// innodbStats reads MariaDB's global counters that tell disk reads and writes.
func innodbStats(db *sql.DB) map[string]float64 {
	out := map[string]float64{}
	rows, err := db.Query("SHOW GLOBAL STATUS WHERE Variable_name IN ('Innodb_buffer_pool_reads'," +
		"'Innodb_buffer_pool_read_requests','Innodb_data_fsyncs','Innodb_rows_read','Com_select'," +
		"'Com_update','Com_insert','Com_stmt_execute','Com_commit','Com_begin','Handler_read_key')")
	if err != nil {
		return out
	}
	defer rows.Close()
	for rows.Next() {
		var k, v string
		if rows.Scan(&k, &v) == nil {
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				out[k] = f
			}
		}
	}
	return out
}

// cpuTimes is the CPU time (user + system, seconds) of each -pids process and of this one ("client").
func cpuTimes() map[string]float64 {
	out := map[string]float64{}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		out["client"] = float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
	}
	for _, kv := range strings.Split(*pids, ",") {
		name, pid, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		b, err := os.ReadFile("/proc/" + pid + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) > 12 {
			u, _ := strconv.ParseFloat(f[11], 64)
			k, _ := strconv.ParseFloat(f[12], 64)
			out[name] = (u + k) / 100 // USER_HZ is 100 on Linux
		}
	}
	return out
}

// delta is after - before for the counters that moved.
func delta(before, after map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// emit prints one `TAG {json}` line.
func emit(tag string, v interface{}) {
	b, _ := json.Marshal(v)
	fmt.Printf("%s %s\n", tag, b)
}

// die prints the error and exits 1.
func die(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "e001: "+format+"\n", args...)
	os.Exit(1)
}

// doPreload bulk-sets the cache-aside values of rows 1..n into -mc (pipelined noreply sets
// over two connections, each ended by a `version` round trip); returns the item count.
func doPreload(dbd *sql.DB) int {
	var conns []net.Conn
	var ws []*bufio.Writer
	for i := 0; i < 2; i++ {
		c, err := net.Dial("tcp", *mcAddr)
		if err != nil {
			die("preload: %v", err)
		}
		conns = append(conns, c)
		ws = append(ws, bufio.NewWriterSize(c, 256<<10))
	}
	// drain replies (errors only: noreply) so the server never blocks on its output
	errs := make(chan int, len(conns))
	for _, c := range conns {
		go func(c net.Conn) {
			r := bufio.NewReader(c)
			bad := 0
			for {
				line, err := r.ReadString('\n')
				if err != nil {
					break
				}
				if strings.HasPrefix(line, "VERSION") {
					break
				}
				bad++
				if bad == 1 {
					fmt.Fprintf(os.Stderr, "e001: preload reply %q\n", line)
				}
			}
			errs <- bad
		}(c)
	}
	items := 0
	put := func(key string, val []byte) {
		w := ws[items%len(ws)]
		fmt.Fprintf(w, "set %s 0 0 %d noreply\r\n", key, len(val))
		w.Write(val)
		w.WriteString("\r\n")
		items++
	}
	rows, err := dbd.Query("SELECT id,name,email,level,score,gold,stats FROM players WHERE id<=?", *n)
	if err != nil {
		die("preload: %v", err)
	}
	for rows.Next() {
		var id int
		p := &player{}
		if err := rows.Scan(&id, &p.name, &p.email, &p.level, &p.score, &p.gold, &p.stats); err != nil {
			die("preload: %v", err)
		}
		put("p:"+strconv.Itoa(id), p.encode())
	}
	rows.Close()
	rows, err = dbd.Query("SELECT email,player_id,nick,country,bio FROM profiles WHERE email<=?", email(*n))
	if err != nil {
		die("preload: %v", err)
	}
	for rows.Next() {
		var em, nick, country, bio string
		var pid int64
		if err := rows.Scan(&em, &pid, &nick, &country, &bio); err != nil {
			die("preload: %v", err)
		}
		put("e:"+em, []byte(fmt.Sprintf("%d|%s|%s|%s", pid, nick, country, bio)))
	}
	rows.Close()
	for _, w := range ws {
		w.WriteString("version\r\n")
		if err := w.Flush(); err != nil {
			die("preload: %v", err)
		}
	}
	bad := 0
	for range conns {
		bad += <-errs
	}
	for _, c := range conns {
		c.Close()
	}
	if bad > 0 {
		die("preload: %d error replies", bad)
	}
	return items
}

// doWarm reads the profiles of ids 1..k through the mode's read path (containers: multi-gets
// of 32 keys; qc: SELECTs from 2*c connections); returns the reads done.
func doWarm(a *app, k int) int {
	var next int64
	var wg sync.WaitGroup
	var errOnce sync.Once
	workers := 2 * *clients
	batch := 1
	if *mode == "containers" {
		batch = 32
	}
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				lo := int(atomic.AddInt64(&next, int64(batch))) - batch + 1
				if lo > k {
					return
				}
				hi := lo + batch - 1
				if hi > k {
					hi = k
				}
				var err error
				if *mode == "containers" {
					keys := make([]string, 0, batch)
					for id := lo; id <= hi; id++ {
						keys = append(keys, "@@profiles."+email(id))
					}
					_, err = a.mc.GetMulti(keys)
				} else {
					_, err = a.readProfile(email(lo))
				}
				if err != nil {
					errOnce.Do(func() { fmt.Fprintf(os.Stderr, "e001: warm: %v\n", err) })
				}
			}
		}()
	}
	wg.Wait()
	return k
}

// percentile of sorted xs (0 if empty).
func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	i := int(p * float64(len(xs)-1))
	return xs[i]
}

// main parses the flags, preloads / warms if asked, runs the clients and prints RESULT.
func main() {
	flag.Parse()
	if *dsn == "" && *mode != "containers" {
		die("-dsn is required")
	}
	if *dbdsn == "" {
		*dbdsn = *dsn
	}
	if *stAddr == "" {
		*stAddr = *mcAddr
	}
	a := &app{}
	if *dsn != "" {
		db, err := sql.Open("mysql", *dsn)
		if err != nil {
			die("%v", err)
		}
		db.SetMaxOpenConns(2 * *clients)
		db.SetMaxIdleConns(2 * *clients)
		a.db = db
	}
	dbd, err := sql.Open("mysql", *dbdsn)
	if err != nil {
		die("%v", err)
	}
	dbd.SetMaxOpenConns(2)
	if *mcAddr != "" {
		a.mc = memcache.New(*mcAddr)
		a.mc.MaxIdleConns = 2 * *clients
		a.mc.Timeout = 10 * time.Second
	}

	if *preload {
		t := time.Now()
		items := doPreload(dbd)
		emit("PRELOAD", map[string]interface{}{"items": items, "s": time.Since(t).Seconds()})
	}
	if *warmK > 0 {
		t := time.Now()
		reads := doWarm(a, *warmK)
		emit("WARM", map[string]interface{}{"reads": reads, "s": time.Since(t).Seconds()})
	}

	if *dur <= 0 {
		return // -dur 0: only the preload / warm pass
	}
	start := time.Now()
	measureFrom := start.Add(*warmup)
	end := measureFrom.Add(*dur)
	var wg sync.WaitGroup
	lat := make([][]float64, *clients)
	upd := make([][]float64, *clients)
	var errors int64
	var firstErr atomic.Value
	for c := 0; c < *clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			r := rand.New(rand.NewSource(*seed*1000 + int64(c)))
			for {
				t := time.Now()
				if !t.Before(end) {
					return
				}
				u, err := a.txn(1 + r.Intn(*n))
				if err != nil {
					atomic.AddInt64(&errors, 1)
					firstErr.CompareAndSwap(nil, err.Error())
					time.Sleep(time.Millisecond)
					continue
				}
				if done := time.Now(); !t.Before(measureFrom) && done.Before(end) {
					lat[c] = append(lat[c], float64(done.Sub(t).Microseconds())/1000)
					upd[c] = append(upd[c], float64(u.Microseconds())/1000)
				}
			}
		}(c)
	}
	time.Sleep(time.Until(measureFrom))
	cpu0 := cpuTimes()
	st0, in0 := map[string]float64{}, innodbStats(dbd)
	if *stAddr != "" {
		st0 = memcachedStats(*stAddr)
	}
	errs0 := atomic.LoadInt64(&errors)
	time.Sleep(time.Until(end))
	cpu1 := cpuTimes()
	st1, in1 := map[string]float64{}, innodbStats(dbd)
	if *stAddr != "" {
		st1 = memcachedStats(*stAddr)
	}
	errs1 := atomic.LoadInt64(&errors)
	wg.Wait()

	var all, ups []float64
	for c := range lat {
		all = append(all, lat[c]...)
		ups = append(ups, upd[c]...)
	}
	sort.Float64s(all)
	sort.Float64s(ups)
	fe, _ := firstErr.Load().(string)
	emit("RESULT", map[string]interface{}{
		"mode": *mode, "n": *n, "clients": *clients, "dur_s": dur.Seconds(),
		"txns": len(all), "tps": float64(len(all)) / dur.Seconds(),
		"p50_ms": percentile(all, 0.50), "p99_ms": percentile(all, 0.99),
		"upd_p50_ms": percentile(ups, 0.50), "upd_p99_ms": percentile(ups, 0.99),
		"errors": errs1 - errs0, "errors_total": atomic.LoadInt64(&errors), "first_error": fe,
		"cache": delta(st0, st1), "innodb": delta(in0, in1), "cpu_s": delta(cpu0, cpu1),
	})
}
