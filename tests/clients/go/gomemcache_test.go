// Compatibility tests: the unchanged github.com/bradfitz/gomemcache client
// (ASCII protocol) against the server at $MEMCACHED_ADDR (host:port).
//
// Every test uses its own key prefix, so tests that sleep (expiry, touch)
// run in parallel. TestFlushAll is not parallel, and Go runs all
// non-parallel top-level tests before releasing the parallel ones, so a
// flush never hits another test's keys.
package gomemcache_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
)

var addr string

func TestMain(m *testing.M) {
	addr = os.Getenv("MEMCACHED_ADDR")
	if addr == "" {
		fmt.Fprintln(os.Stderr, "MEMCACHED_ADDR (host:port of the server under test) is not set")
		os.Exit(2)
	}
	os.Exit(m.Run())
}

// client returns a fresh client for the server under test. The timeout is
// raised from the 500ms default only so a busy 2-core CI box does not flake.
func client(t *testing.T) *memcache.Client {
	t.Helper()
	c := memcache.New(addr)
	c.Timeout = 5 * time.Second
	t.Cleanup(func() { c.Close() })
	return c
}

func mustSet(t *testing.T, c *memcache.Client, key, val string) {
	t.Helper()
	if err := c.Set(&memcache.Item{Key: key, Value: []byte(val)}); err != nil {
		t.Fatalf("Set(%q): %v", key, err)
	}
}

func mustGet(t *testing.T, c *memcache.Client, key string) *memcache.Item {
	t.Helper()
	it, err := c.Get(key)
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	return it
}

func wantValue(t *testing.T, c *memcache.Client, key, want string) {
	t.Helper()
	it := mustGet(t, c, key)
	if string(it.Value) != want {
		t.Fatalf("Get(%q) = %q, want %q", key, it.Value, want)
	}
}

func wantMiss(t *testing.T, c *memcache.Client, key string) {
	t.Helper()
	it, err := c.Get(key)
	if !errors.Is(err, memcache.ErrCacheMiss) {
		t.Fatalf("Get(%q) = (%v, %v), want ErrCacheMiss", key, it, err)
	}
}

func wantErr(t *testing.T, what string, got, want error) {
	t.Helper()
	if !errors.Is(got, want) {
		t.Fatalf("%s: err = %v, want %v", what, got, want)
	}
}

func TestPing(t *testing.T) {
	t.Parallel()
	if err := client(t).Ping(); err != nil {
		t.Fatalf("Ping: %v", err)
	}
}

func TestSetGet(t *testing.T) {
	t.Parallel()
	c := client(t)
	k := "sg:key"
	if err := c.Set(&memcache.Item{Key: k, Value: []byte("hello"), Flags: 0xdeadbeef}); err != nil {
		t.Fatalf("Set: %v", err)
	}
	it := mustGet(t, c, k)
	if string(it.Value) != "hello" || it.Flags != 0xdeadbeef || it.Key != k {
		t.Fatalf("Get = %+v", it)
	}
	if it.CasID == 0 {
		t.Fatalf("Get (gets) returned CasID 0")
	}

	// Overwrite, max flags.
	if err := c.Set(&memcache.Item{Key: k, Value: []byte("world"), Flags: math.MaxUint32}); err != nil {
		t.Fatalf("Set overwrite: %v", err)
	}
	it = mustGet(t, c, k)
	if string(it.Value) != "world" || it.Flags != math.MaxUint32 {
		t.Fatalf("Get after overwrite = %+v", it)
	}

	// Empty value.
	mustSet(t, c, "sg:empty", "")
	it = mustGet(t, c, "sg:empty")
	if len(it.Value) != 0 {
		t.Fatalf("empty value came back as %q", it.Value)
	}

	// Binary value with CR, LF, NUL, high bytes, and an embedded "\r\nEND\r\n".
	bin := []byte("a\r\nb\x00c\xff\xfe\r\nEND\r\nVALUE x 0 1\r\n")
	if err := c.Set(&memcache.Item{Key: "sg:bin", Value: bin}); err != nil {
		t.Fatalf("Set bin: %v", err)
	}
	if it = mustGet(t, c, "sg:bin"); !bytes.Equal(it.Value, bin) {
		t.Fatalf("binary value = %q, want %q", it.Value, bin)
	}

	// Longest legal key (250 bytes) and UTF-8 / punctuation keys.
	long := strings.Repeat("k", 250)
	mustSet(t, c, long, "long")
	wantValue(t, c, long, "long")
	for _, k := range []string{"sg:ключ", "sg:日本語", "sg:a/b?c=d&e#f", "sg:{}[]|\\^~`'\""} {
		mustSet(t, c, k, "v-"+k)
		wantValue(t, c, k, "v-"+k)
	}

	wantMiss(t, c, "sg:never-set")
}

func TestGetMulti(t *testing.T) {
	t.Parallel()
	c := client(t)
	var keys []string
	for i := 0; i < 100; i++ {
		k := fmt.Sprintf("gm:%d", i)
		keys = append(keys, k)
		if i%3 != 0 { // every third key is missing
			if err := c.Set(&memcache.Item{Key: k, Value: []byte("v" + strconv.Itoa(i)), Flags: uint32(i)}); err != nil {
				t.Fatalf("Set %s: %v", k, err)
			}
		}
	}
	m, err := c.GetMulti(keys)
	if err != nil {
		t.Fatalf("GetMulti: %v", err)
	}
	for i, k := range keys {
		it, ok := m[k]
		if i%3 == 0 {
			if ok {
				t.Errorf("GetMulti returned missing key %s = %q", k, it.Value)
			}
			continue
		}
		if !ok {
			t.Errorf("GetMulti lacks %s", k)
			continue
		}
		if string(it.Value) != "v"+strconv.Itoa(i) || it.Flags != uint32(i) || it.CasID == 0 {
			t.Errorf("GetMulti[%s] = %+v", k, it)
		}
	}
	if len(m) != 66 {
		t.Errorf("GetMulti returned %d items, want 66", len(m))
	}

	// All misses: empty, non-nil map.
	m, err = c.GetMulti([]string{"gm:none1", "gm:none2"})
	if err != nil || m == nil || len(m) != 0 {
		t.Fatalf("GetMulti(misses) = %v, %v", m, err)
	}
}

func TestAddReplace(t *testing.T) {
	t.Parallel()
	c := client(t)
	k := "ar:key"
	if err := c.Add(&memcache.Item{Key: k, Value: []byte("first")}); err != nil {
		t.Fatalf("Add new: %v", err)
	}
	wantErr(t, "Add existing", c.Add(&memcache.Item{Key: k, Value: []byte("second")}), memcache.ErrNotStored)
	wantValue(t, c, k, "first")

	if err := c.Replace(&memcache.Item{Key: k, Value: []byte("replaced"), Flags: 7}); err != nil {
		t.Fatalf("Replace existing: %v", err)
	}
	it := mustGet(t, c, k)
	if string(it.Value) != "replaced" || it.Flags != 7 {
		t.Fatalf("after Replace: %+v", it)
	}
	wantErr(t, "Replace missing", c.Replace(&memcache.Item{Key: "ar:missing", Value: []byte("x")}), memcache.ErrNotStored)
	wantMiss(t, c, "ar:missing")

	// Add succeeds again once the key is deleted.
	if err := c.Delete(k); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if err := c.Add(&memcache.Item{Key: k, Value: []byte("again")}); err != nil {
		t.Fatalf("Add after delete: %v", err)
	}
	wantValue(t, c, k, "again")
}

func TestAppendPrepend(t *testing.T) {
	t.Parallel()
	c := client(t)
	k := "ap:key"
	if err := c.Set(&memcache.Item{Key: k, Value: []byte("mid"), Flags: 42}); err != nil {
		t.Fatalf("Set: %v", err)
	}
	if err := c.Append(&memcache.Item{Key: k, Value: []byte(">>")}); err != nil {
		t.Fatalf("Append: %v", err)
	}
	if err := c.Prepend(&memcache.Item{Key: k, Value: []byte("<<"), Flags: 99}); err != nil {
		t.Fatalf("Prepend: %v", err)
	}
	it := mustGet(t, c, k)
	if string(it.Value) != "<<mid>>" {
		t.Fatalf("after append/prepend = %q", it.Value)
	}
	if it.Flags != 42 {
		t.Fatalf("append/prepend changed flags to %d, want 42 (flags of the new data are ignored)", it.Flags)
	}
	wantErr(t, "Append missing", c.Append(&memcache.Item{Key: "ap:missing", Value: []byte("x")}), memcache.ErrNotStored)
	wantErr(t, "Prepend missing", c.Prepend(&memcache.Item{Key: "ap:missing", Value: []byte("x")}), memcache.ErrNotStored)
	wantMiss(t, c, "ap:missing")

	// Append changes the CAS id.
	before := mustGet(t, c, k).CasID
	if err := c.Append(&memcache.Item{Key: k, Value: []byte("!")}); err != nil {
		t.Fatalf("Append: %v", err)
	}
	if after := mustGet(t, c, k).CasID; after == before {
		t.Fatalf("Append did not change the CAS id (%d)", after)
	}
}

func TestCompareAndSwap(t *testing.T) {
	t.Parallel()
	c := client(t)
	k := "cas:key"
	mustSet(t, c, k, "v1")
	it := mustGet(t, c, k)
	cas1 := it.CasID

	// Successful CAS.
	it.Value = []byte("v2")
	if err := c.CompareAndSwap(it); err != nil {
		t.Fatalf("CompareAndSwap with fresh CasID: %v", err)
	}
	wantValue(t, c, k, "v2")
	it2 := mustGet(t, c, k)
	if it2.CasID == cas1 {
		t.Fatalf("CAS id unchanged after a successful CAS (%d)", cas1)
	}

	// Stale CAS id -> ErrCASConflict; value untouched.
	stale := &memcache.Item{Key: k, Value: []byte("v3"), CasID: cas1}
	wantErr(t, "CompareAndSwap with stale CasID", c.CompareAndSwap(stale), memcache.ErrCASConflict)
	wantValue(t, c, k, "v2")

	// Another writer wins the race -> conflict for the loser.
	a := mustGet(t, c, k)
	b := mustGet(t, c, k)
	a.Value = []byte("from-a")
	if err := c.CompareAndSwap(a); err != nil {
		t.Fatalf("CompareAndSwap a: %v", err)
	}
	b.Value = []byte("from-b")
	wantErr(t, "CompareAndSwap b after a", c.CompareAndSwap(b), memcache.ErrCASConflict)
	wantValue(t, c, k, "from-a")

	// A plain Set also invalidates an outstanding CAS id.
	a = mustGet(t, c, k)
	mustSet(t, c, k, "overwritten")
	a.Value = []byte("late")
	wantErr(t, "CompareAndSwap after Set", c.CompareAndSwap(a), memcache.ErrCASConflict)

	// CAS on a key that has gone away: memcached answers NOT_FOUND, which
	// gomemcache reports as ErrCacheMiss.
	a = mustGet(t, c, k)
	if err := c.Delete(k); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	a.Value = []byte("ghost")
	wantErr(t, "CompareAndSwap on deleted key", c.CompareAndSwap(a), memcache.ErrCacheMiss)
	wantMiss(t, c, k)

	// ErrNotStored from the other conditional writes.
	mustSet(t, c, k, "x")
	wantErr(t, "Add on existing key", c.Add(&memcache.Item{Key: k, Value: []byte("y")}), memcache.ErrNotStored)
}

func TestIncrementDecrement(t *testing.T) {
	t.Parallel()
	c := client(t)
	k := "id:n"
	mustSet(t, c, k, "10")
	if v, err := c.Increment(k, 5); err != nil || v != 15 {
		t.Fatalf("Increment(10, 5) = %d, %v", v, err)
	}
	if v, err := c.Decrement(k, 3); err != nil || v != 12 {
		t.Fatalf("Decrement(15, 3) = %d, %v", v, err)
	}
	wantValue(t, c, k, "12")

	// Decrement floors at zero.
	if v, err := c.Decrement(k, 100); err != nil || v != 0 {
		t.Fatalf("Decrement below zero = %d, %v, want 0", v, err)
	}
	// Growing past the stored width.
	mustSet(t, c, k, "99")
	if v, err := c.Increment(k, 1); err != nil || v != 100 {
		t.Fatalf("Increment(99, 1) = %d, %v", v, err)
	}
	wantValue(t, c, k, "100")
	// Shrinking: memcached may keep the old width padded with spaces, so
	// compare the number only.
	if v, err := c.Decrement(k, 1); err != nil || v != 99 {
		t.Fatalf("Decrement(100, 1) = %d, %v", v, err)
	}
	if got := strings.TrimRight(string(mustGet(t, c, k).Value), " "); got != "99" {
		t.Fatalf("Get after Decrement = %q, want 99", got)
	}

	// 64-bit wrap-around on increment.
	mustSet(t, c, k, "18446744073709551615")
	if v, err := c.Increment(k, 2); err != nil || v != 1 {
		t.Fatalf("Increment(2^64-1, 2) = %d, %v, want 1", v, err)
	}
	mustSet(t, c, k, "0")
	if v, err := c.Increment(k, math.MaxUint64); err != nil || v != math.MaxUint64 {
		t.Fatalf("Increment(0, 2^64-1) = %d, %v", v, err)
	}

	// Missing key.
	if v, err := c.Increment("id:missing", 1); !errors.Is(err, memcache.ErrCacheMiss) {
		t.Fatalf("Increment(missing) = %d, %v, want ErrCacheMiss", v, err)
	}
	if v, err := c.Decrement("id:missing", 1); !errors.Is(err, memcache.ErrCacheMiss) {
		t.Fatalf("Decrement(missing) = %d, %v, want ErrCacheMiss", v, err)
	}

	// Non-numeric values are a client error, and the connection stays usable.
	for _, bad := range []string{"abc", "12abc", "-5", "", "1.5", "123456789012345678901"} {
		mustSet(t, c, "id:bad", bad)
		v, err := c.Increment("id:bad", 1)
		if err == nil || errors.Is(err, memcache.ErrCacheMiss) {
			t.Fatalf("Increment(%q) = %d, %v, want a client error", bad, v, err)
		}
		if !strings.Contains(err.Error(), "client error") {
			t.Fatalf("Increment(%q) error %q, want a CLIENT_ERROR", bad, err)
		}
		if _, err := c.Decrement("id:bad", 1); err == nil {
			t.Fatalf("Decrement(%q) succeeded", bad)
		}
		wantValue(t, c, "id:bad", bad)
	}

	// Increment keeps flags and bumps the CAS id.
	if err := c.Set(&memcache.Item{Key: k, Value: []byte("1"), Flags: 5}); err != nil {
		t.Fatal(err)
	}
	before := mustGet(t, c, k)
	if _, err := c.Increment(k, 1); err != nil {
		t.Fatal(err)
	}
	after := mustGet(t, c, k)
	if after.Flags != 5 || after.CasID == before.CasID || string(after.Value) != "2" {
		t.Fatalf("after Increment: %+v (before %+v)", after, before)
	}
}

func TestDelete(t *testing.T) {
	t.Parallel()
	c := client(t)
	mustSet(t, c, "del:k", "v")
	if err := c.Delete("del:k"); err != nil {
		t.Fatalf("Delete existing: %v", err)
	}
	wantMiss(t, c, "del:k")
	wantErr(t, "Delete again", c.Delete("del:k"), memcache.ErrCacheMiss)
	wantErr(t, "Delete never-set", c.Delete("del:never"), memcache.ErrCacheMiss)
}

func TestTouch(t *testing.T) {
	t.Parallel()
	c := client(t)
	if err := c.Set(&memcache.Item{Key: "touch:k", Value: []byte("v"), Expiration: 1}); err != nil {
		t.Fatal(err)
	}
	if err := c.Set(&memcache.Item{Key: "touch:short", Value: []byte("v"), Expiration: 100}); err != nil {
		t.Fatal(err)
	}
	if err := c.Touch("touch:k", 100); err != nil {
		t.Fatalf("Touch: %v", err)
	}
	if err := c.Touch("touch:short", 1); err != nil {
		t.Fatalf("Touch: %v", err)
	}
	wantErr(t, "Touch missing", c.Touch("touch:missing", 10), memcache.ErrCacheMiss)
	time.Sleep(2100 * time.Millisecond)
	wantValue(t, c, "touch:k", "v")
	wantMiss(t, c, "touch:short")
}

func TestGetAndTouch(t *testing.T) {
	t.Parallel()
	c := client(t)
	if err := c.Set(&memcache.Item{Key: "gat:k", Value: []byte("val"), Flags: 3, Expiration: 1}); err != nil {
		t.Fatal(err)
	}
	it, err := c.GetAndTouch("gat:k", 100)
	if err != nil {
		t.Fatalf("GetAndTouch: %v", err)
	}
	if string(it.Value) != "val" || it.Flags != 3 || it.Key != "gat:k" {
		t.Fatalf("GetAndTouch = %+v", it)
	}
	if _, err := c.GetAndTouch("gat:missing", 10); !errors.Is(err, memcache.ErrCacheMiss) {
		t.Fatalf("GetAndTouch(missing) err = %v, want ErrCacheMiss", err)
	}
	// Shorten a long TTL with gat.
	if err := c.Set(&memcache.Item{Key: "gat:short", Value: []byte("s"), Expiration: 100}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetAndTouch("gat:short", 1); err != nil {
		t.Fatalf("GetAndTouch(short): %v", err)
	}
	time.Sleep(2100 * time.Millisecond)
	wantValue(t, c, "gat:k", "val")
	wantMiss(t, c, "gat:short")
}

func TestExpiration(t *testing.T) {
	t.Parallel()
	c := client(t)
	set := func(k string, exp int32) {
		t.Helper()
		if err := c.Set(&memcache.Item{Key: k, Value: []byte("v"), Expiration: exp}); err != nil {
			t.Fatalf("Set(%s, exp %d): %v", k, exp, err)
		}
	}
	// Two seconds, not one: memcached's clock ticks once a second, so an item set with 1
	// may already be expired by the next tick a few milliseconds later (memcached too).
	set("exp:rel1", 2)
	set("exp:abs", int32(time.Now().Unix()+2)) // absolute Unix time
	set("exp:never", 0)
	set("exp:long", 3600)
	wantValue(t, c, "exp:rel1", "v")
	wantValue(t, c, "exp:abs", "v")

	// A negative expiration means "already expired".
	set("exp:neg", -1)
	wantMiss(t, c, "exp:neg")

	time.Sleep(3100 * time.Millisecond)
	wantMiss(t, c, "exp:rel1")
	wantMiss(t, c, "exp:abs")
	wantValue(t, c, "exp:never", "v")
	wantValue(t, c, "exp:long", "v")
	// An expired key behaves as absent for the conditional writes.
	if err := c.Add(&memcache.Item{Key: "exp:rel1", Value: []byte("new")}); err != nil {
		t.Fatalf("Add over an expired key: %v", err)
	}
	wantValue(t, c, "exp:rel1", "new")
	wantErr(t, "Replace expired", c.Replace(&memcache.Item{Key: "exp:abs", Value: []byte("x")}), memcache.ErrNotStored)
}

func TestLargeValues(t *testing.T) {
	t.Parallel()
	c := client(t)
	for _, size := range []int{1000, 100 * 1024, 500 * 1024, 1000 * 1024} {
		val := make([]byte, size)
		for i := range val {
			val[i] = byte(i*31 + size)
		}
		k := fmt.Sprintf("big:%d", size)
		if err := c.Set(&memcache.Item{Key: k, Value: val}); err != nil {
			t.Fatalf("Set %d bytes: %v", size, err)
		}
		it := mustGet(t, c, k)
		if !bytes.Equal(it.Value, val) {
			t.Fatalf("%d-byte value came back different (len %d)", size, len(it.Value))
		}
	}
	// Over the default 1 MiB item size: refused, and the client keeps working.
	tooBig := bytes.Repeat([]byte("z"), 2*1024*1024)
	if err := c.Set(&memcache.Item{Key: "big:toobig", Value: tooBig}); err == nil {
		t.Fatalf("Set of a 2 MiB value succeeded; memcached refuses items over -I (1 MiB)")
	}
	wantMiss(t, c, "big:toobig")
	mustSet(t, c, "big:after", "ok")
	wantValue(t, c, "big:after", "ok")

	// Multi-get of several large values on one connection.
	var keys []string
	for i := 0; i < 5; i++ {
		k := fmt.Sprintf("big:m%d", i)
		keys = append(keys, k)
		if err := c.Set(&memcache.Item{Key: k, Value: bytes.Repeat([]byte{byte('a' + i)}, 300*1024)}); err != nil {
			t.Fatal(err)
		}
	}
	m, err := c.GetMulti(keys)
	if err != nil {
		t.Fatalf("GetMulti large: %v", err)
	}
	for i, k := range keys {
		if it := m[k]; it == nil || !bytes.Equal(it.Value, bytes.Repeat([]byte{byte('a' + i)}, 300*1024)) {
			t.Fatalf("GetMulti large: %s wrong", k)
		}
	}
}

func TestMalformedKeysRejectedClientSide(t *testing.T) {
	t.Parallel()
	c := client(t)
	bad := []string{
		"has space",
		"has\nnewline",
		"has\rcr",
		"tab\there",
		"nul\x00byte",
		"del\x7f",
		strings.Repeat("x", 251),
	}
	for _, k := range bad {
		if err := c.Set(&memcache.Item{Key: k, Value: []byte("v")}); !errors.Is(err, memcache.ErrMalformedKey) {
			t.Errorf("Set(%q) err = %v, want ErrMalformedKey", k, err)
		}
		if _, err := c.Get(k); !errors.Is(err, memcache.ErrMalformedKey) {
			t.Errorf("Get(%q) err = %v, want ErrMalformedKey", k, err)
		}
		if err := c.Delete(k); !errors.Is(err, memcache.ErrMalformedKey) {
			t.Errorf("Delete(%q) err = %v, want ErrMalformedKey", k, err)
		}
		if _, err := c.Increment(k, 1); !errors.Is(err, memcache.ErrMalformedKey) {
			t.Errorf("Increment(%q) err = %v, want ErrMalformedKey", k, err)
		}
		if _, err := c.GetMulti([]string{"ok", k}); !errors.Is(err, memcache.ErrMalformedKey) {
			t.Errorf("GetMulti(%q) err = %v, want ErrMalformedKey", k, err)
		}
	}
	// The server is still fine afterwards.
	mustSet(t, c, "mk:ok", "fine")
	wantValue(t, c, "mk:ok", "fine")
}

func TestConcurrency(t *testing.T) {
	t.Parallel()
	for _, idle := range []int{0, 64} { // 0 = gomemcache's default pool of 2 idle conns
		idle := idle
		t.Run(fmt.Sprintf("maxidle=%d", idle), func(t *testing.T) {
			c := client(t)
			c.MaxIdleConns = idle
			const workers = 64
			const perWorker = 150
			counter := fmt.Sprintf("conc%d:counter", idle)
			mustSet(t, c, counter, "0")

			var wg sync.WaitGroup
			var failures atomic.Int64
			errs := make(chan error, workers)
			for w := 0; w < workers; w++ {
				wg.Add(1)
				go func(w int) {
					defer wg.Done()
					fail := func(err error) {
						if failures.Add(1) == 1 {
							errs <- err
						}
					}
					for i := 0; i < perWorker; i++ {
						k := fmt.Sprintf("conc%d:%d:%d", idle, w, i)
						v := []byte(fmt.Sprintf("value-%d-%d-%s", w, i, strings.Repeat("p", i)))
						if err := c.Set(&memcache.Item{Key: k, Value: v, Flags: uint32(w)}); err != nil {
							fail(fmt.Errorf("Set %s: %w", k, err))
							return
						}
						it, err := c.Get(k)
						if err != nil {
							fail(fmt.Errorf("Get %s: %w", k, err))
							return
						}
						if !bytes.Equal(it.Value, v) || it.Flags != uint32(w) {
							fail(fmt.Errorf("Get %s = %q/%d, want %q/%d", k, it.Value, it.Flags, v, w))
							return
						}
						if _, err := c.Increment(counter, 1); err != nil {
							fail(fmt.Errorf("Increment: %w", err))
							return
						}
						if i%10 == 5 { // i/2 != i, so two distinct stored keys
							keys := []string{k, fmt.Sprintf("conc%d:%d:%d", idle, w, i/2), "conc:missing"}
							m, err := c.GetMulti(keys)
							if err != nil {
								fail(fmt.Errorf("GetMulti: %w", err))
								return
							}
							if len(m) != 2 {
								fail(fmt.Errorf("GetMulti(%v) returned %d items, want 2", keys, len(m)))
								return
							}
						}
					}
				}(w)
			}
			wg.Wait()
			close(errs)
			if n := failures.Load(); n > 0 {
				t.Fatalf("%d goroutine(s) failed; first: %v", n, <-errs)
			}
			it := mustGet(t, c, counter)
			if string(it.Value) != strconv.Itoa(workers*perWorker) {
				t.Fatalf("counter = %q after %d concurrent increments", it.Value, workers*perWorker)
			}

			// Concurrent CAS loop: every increment must land exactly once.
			casKey := fmt.Sprintf("conc%d:cas", idle)
			mustSet(t, c, casKey, "0")
			var cwg sync.WaitGroup
			var casErr atomic.Value
			for w := 0; w < 8; w++ {
				cwg.Add(1)
				go func() {
					defer cwg.Done()
					for i := 0; i < 25; i++ {
						for {
							it, err := c.Get(casKey)
							if err != nil {
								casErr.Store(err)
								return
							}
							n, _ := strconv.Atoi(string(it.Value))
							it.Value = []byte(strconv.Itoa(n + 1))
							err = c.CompareAndSwap(it)
							if err == nil {
								break
							}
							if !errors.Is(err, memcache.ErrCASConflict) {
								casErr.Store(err)
								return
							}
						}
					}
				}()
			}
			cwg.Wait()
			if e := casErr.Load(); e != nil {
				t.Fatalf("CAS loop: %v", e)
			}
			wantValue(t, c, casKey, "200")
		})
	}
}

// Not parallel: runs before every parallel test, so it cannot wipe their keys.
func TestFlushAll(t *testing.T) {
	c := client(t)
	for i := 0; i < 20; i++ {
		mustSet(t, c, fmt.Sprintf("flush:%d", i), "v")
	}
	if err := c.FlushAll(); err != nil {
		t.Fatalf("FlushAll: %v", err)
	}
	for i := 0; i < 20; i++ {
		wantMiss(t, c, fmt.Sprintf("flush:%d", i))
	}
	// The cache is usable right after a flush.
	mustSet(t, c, "flush:after", "v2")
	wantValue(t, c, "flush:after", "v2")

	// DeleteAll is also flush_all.
	if err := c.DeleteAll(); err != nil {
		t.Fatalf("DeleteAll: %v", err)
	}
	wantMiss(t, c, "flush:after")
}
