package sqlcached.clients;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.Serializable;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Random;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import net.spy.memcached.AddrUtil;
import net.spy.memcached.CASResponse;
import net.spy.memcached.CASValue;
import net.spy.memcached.ConnectionFactory;
import net.spy.memcached.MemcachedClient;
import net.spy.memcached.internal.GetFuture;
import net.spy.memcached.internal.OperationFuture;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.TestInstance;

/**
 * The unchanged spymemcached 2.12.3 client against the server at $MEMCACHED_ADDR.
 * Subclasses pick the wire protocol through the connection factory, exactly as an
 * application would ({@code new MemcachedClient(new BinaryConnectionFactory(), AddrUtil.getAddresses(addr))}).
 * Every test works on keys under its own prefix; the test methods run one after another.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class SpymemcachedCompatBase {
    /** How long to wait on any single future; generous so a busy CI box does not flake. */
    static final long WAIT_S = 30;

    protected MemcachedClient mc;
    protected String p; // per-test key prefix

    protected abstract ConnectionFactory factory();

    protected abstract boolean binary();

    static String serverAddr() {
        String addr = System.getenv("MEMCACHED_ADDR");
        if (addr == null || addr.isBlank()) {
            fail("MEMCACHED_ADDR (host:port of the server under test) is not set");
        }
        return addr;
    }

    @BeforeAll
    void connect() throws Exception {
        List<InetSocketAddress> addrs = AddrUtil.getAddresses(serverAddr());
        mc = new MemcachedClient(factory(), addrs);
    }

    @AfterAll
    void disconnect() {
        if (mc != null) {
            mc.shutdown(5, TimeUnit.SECONDS);
        }
    }

    @BeforeEach
    void prefix(TestInfo info) {
        p = (binary() ? "bin:" : "ascii:") + info.getTestMethod().orElseThrow().getName() + ":";
    }

    protected static <T> T await(Future<T> f) throws Exception {
        return f.get(WAIT_S, TimeUnit.SECONDS);
    }

    protected boolean set(String key, int exp, Object value) throws Exception {
        return await(mc.set(key, exp, value));
    }

    /** A serializable object with a few field types; compared field by field. */
    static final class Person implements Serializable {
        private static final long serialVersionUID = 1L;
        final String name;
        final int age;
        final List<String> tags;
        final Map<String, Double> scores;

        Person(String name, int age, List<String> tags, Map<String, Double> scores) {
            this.name = name;
            this.age = age;
            this.tags = tags;
            this.scores = scores;
        }

        @Override
        public boolean equals(Object o) {
            if (!(o instanceof Person)) {
                return false;
            }
            Person x = (Person) o;
            return name.equals(x.name) && age == x.age && tags.equals(x.tags) && scores.equals(x.scores);
        }

        @Override
        public int hashCode() {
            return Objects.hash(name, age, tags, scores);
        }

        @Override
        public String toString() {
            return "Person(" + name + "," + age + "," + tags + "," + scores + ")";
        }
    }

    // ------------------------------------------------------------------ basic

    @Test
    void setAndGet() throws Exception {
        assertTrue(set(p + "k", 0, "hello"), "set");
        assertEquals("hello", mc.get(p + "k"));
        assertTrue(set(p + "k", 0, "overwritten"), "set overwrite");
        assertEquals("overwritten", mc.get(p + "k"));
        assertNull(mc.get(p + "never-set"));

        // Empty string and non-ASCII text.
        assertTrue(set(p + "empty", 0, ""));
        assertEquals("", mc.get(p + "empty"));
        String unicode = "grüße, 世界, emoji \uD83D\uDE00, \r\nEND\r\n";
        assertTrue(set(p + "unicode", 0, unicode));
        assertEquals(unicode, mc.get(p + "unicode"));

        // The SerializingTranscoder encodes the Java type in the item flags: they must round-trip.
        Map<String, Object> typed = new LinkedHashMap<>();
        typed.put("int", 42);
        typed.put("negint", -7);
        typed.put("long", Long.MAX_VALUE);
        typed.put("bool", Boolean.TRUE);
        typed.put("double", 3.25);
        typed.put("float", 1.5f);
        typed.put("byte", (byte) 0x7f);
        typed.put("char", 'x');
        typed.put("bytes", new byte[] {0, 1, 2, (byte) 0xff, '\r', '\n'});
        typed.put("date", new java.util.Date(1_700_000_000_000L));
        for (Map.Entry<String, Object> e : typed.entrySet()) {
            assertTrue(set(p + e.getKey(), 0, e.getValue()), "set " + e.getKey());
        }
        for (Map.Entry<String, Object> e : typed.entrySet()) {
            Object got = mc.get(p + e.getKey());
            if (e.getValue() instanceof byte[]) {
                assertArrayEquals((byte[]) e.getValue(), (byte[]) got, e.getKey());
            } else {
                assertEquals(e.getValue(), got, e.getKey());
                assertEquals(e.getValue().getClass(), got.getClass(), e.getKey());
            }
        }

        // Longest legal key.
        String longKey = p + "x".repeat(250 - p.length());
        assertEquals(250, longKey.length());
        assertTrue(set(longKey, 0, "long"));
        assertEquals("long", mc.get(longKey));
    }

    @Test
    void serializedObjects() throws Exception {
        Person alice = new Person("Alice", 30, List.of("a", "b"), new HashMap<>(Map.of("math", 9.5)));
        assertTrue(set(p + "alice", 0, alice));
        assertEquals(alice, mc.get(p + "alice"));

        ArrayList<Person> many = new ArrayList<>();
        for (int i = 0; i < 2000; i++) { // big enough to be gzip-compressed by the transcoder (>16 KiB)
            many.add(new Person("p" + i, i, List.of("t" + i), new HashMap<>(Map.of("s", (double) i))));
        }
        assertTrue(set(p + "many", 0, many));
        assertEquals(many, mc.get(p + "many"));

        HashMap<String, int[]> nested = new HashMap<>();
        nested.put("x", new int[] {1, 2, 3});
        assertTrue(set(p + "nested", 0, nested));
        @SuppressWarnings("unchecked")
        HashMap<String, int[]> back = (HashMap<String, int[]>) mc.get(p + "nested");
        assertArrayEquals(new int[] {1, 2, 3}, back.get("x"));
    }

    @Test
    void largeValues() throws Exception {
        Random rnd = new Random(1234);
        for (int size : new int[] {100 * 1024, 500 * 1024, 900 * 1024}) {
            byte[] val = new byte[size]; // random bytes: the transcoder's gzip does not shrink them, so they go raw
            rnd.nextBytes(val);
            assertTrue(set(p + size, 0, val), "set " + size + " bytes");
            assertArrayEquals(val, (byte[]) mc.get(p + size), size + "-byte value");
        }
        // A ~500 KB string (compressed by the client) and a 500 KB serialized object.
        String big = "sqlcached ".repeat(50_000);
        assertTrue(set(p + "bigstr", 0, big));
        assertEquals(big, mc.get(p + "bigstr"));
        int[] ints = new int[128 * 1024];
        for (int i = 0; i < ints.length; i++) {
            ints[i] = rnd.nextInt();
        }
        assertTrue(set(p + "bigobj", 0, ints));
        assertArrayEquals(ints, (int[]) mc.get(p + "bigobj"));

        // Over the default 1 MiB item size limit: refused; the connection keeps working.
        byte[] tooBig = new byte[2 * 1024 * 1024];
        rnd.nextBytes(tooBig);
        Boolean stored;
        try {
            stored = await(mc.set(p + "toobig", 0, tooBig));
        } catch (ExecutionException e) {
            stored = false; // ASCII: SERVER_ERROR object too large for cache surfaces as an exception
        }
        assertFalse(stored, "a 2 MiB value must be refused (item size max is 1 MiB)");
        assertNull(mc.get(p + "toobig"));
        assertTrue(set(p + "after", 0, "ok"));
        assertEquals("ok", mc.get(p + "after"));
    }

    // ------------------------------------------------------------------ multi-get

    @Test
    void getBulk() throws Exception {
        List<String> keys = new ArrayList<>();
        for (int i = 0; i < 200; i++) {
            String k = p + i;
            keys.add(k);
            if (i % 4 != 0) {
                assertTrue(set(k, 0, i % 2 == 0 ? (Object) ("v" + i) : (Object) i));
            }
        }
        Map<String, Object> got = mc.getBulk(keys);
        assertEquals(150, got.size(), "getBulk size");
        for (int i = 0; i < 200; i++) {
            String k = p + i;
            if (i % 4 == 0) {
                assertFalse(got.containsKey(k), "missing key " + k + " present");
            } else {
                assertEquals(i % 2 == 0 ? "v" + i : (Object) i, got.get(k), k);
            }
        }
        // Varargs form, all misses, and duplicates.
        assertEquals(Map.of(), mc.getBulk(p + "none1", p + "none2"));
        Map<String, Object> dup = mc.getBulk(p + "1", p + "1", p + "2");
        assertEquals(Map.of(p + "1", 1, p + "2", "v2"), dup);
        // A large bulk request (1000 keys in one go).
        List<String> big = new ArrayList<>();
        for (int i = 0; i < 1000; i++) {
            big.add(p + "b" + i);
            mc.set(p + "b" + i, 0, "bv" + i);
        }
        assertTrue(await(mc.set(p + "fence", 0, "x")));
        Map<String, Object> bigGot = mc.getBulk(big);
        assertEquals(1000, bigGot.size());
        for (int i = 0; i < 1000; i++) {
            assertEquals("bv" + i, bigGot.get(p + "b" + i));
        }
    }

    // ------------------------------------------------------------------ add / replace / append / prepend

    @Test
    void addReplace() throws Exception {
        assertTrue(await(mc.add(p + "k", 0, "first")), "add new key");
        assertFalse(await(mc.add(p + "k", 0, "second")), "add existing key must fail");
        assertEquals("first", mc.get(p + "k"));

        assertTrue(await(mc.replace(p + "k", 0, "replaced")), "replace existing key");
        assertEquals("replaced", mc.get(p + "k"));
        assertFalse(await(mc.replace(p + "missing", 0, "x")), "replace missing key must fail");
        assertNull(mc.get(p + "missing"));

        assertTrue(await(mc.delete(p + "k")));
        assertTrue(await(mc.add(p + "k", 0, "again")), "add after delete");
        assertEquals("again", mc.get(p + "k"));
    }

    @Test
    void appendPrepend() throws Exception {
        assertTrue(set(p + "k", 0, "mid"));
        // 2.12.3 has both forms: without CAS, and with a CAS value (0 = no check).
        assertTrue(await(mc.append(p + "k", ">>")), "append");
        assertTrue(await(mc.prepend(p + "k", "<<")), "prepend");
        assertEquals("<<mid>>", mc.get(p + "k"));
        assertTrue(await(mc.append(0, p + "k", "!")), "append with cas 0");
        assertTrue(await(mc.prepend(0, p + "k", "¡")), "prepend with cas 0");
        assertEquals("¡<<mid>>!", mc.get(p + "k"));

        assertFalse(await(mc.append(p + "missing", "x")), "append to missing key must fail");
        assertFalse(await(mc.prepend(p + "missing", "x")), "prepend to missing key must fail");
        assertNull(mc.get(p + "missing"));

        // Append changes the CAS id, so an old id is stale afterwards.
        long before = mc.gets(p + "k").getCas();
        assertTrue(await(mc.append(p + "k", "+")));
        long after = mc.gets(p + "k").getCas();
        assertNotEquals(before, after, "append must change the CAS id");

        if (binary()) {
            // Binary append carries a CAS: a matching one succeeds, a stale one fails.
            assertTrue(await(mc.append(after, p + "k", "c")), "append with the current cas");
            assertFalse(await(mc.append(after, p + "k", "d")), "append with a stale cas must fail");
            assertEquals("¡<<mid>>!+c", mc.get(p + "k"));
        }
    }

    // ------------------------------------------------------------------ gets / cas

    @Test
    void getsAndCas() throws Exception {
        assertTrue(set(p + "k", 0, "v1"));
        CASValue<Object> cv = mc.gets(p + "k");
        assertNotNull(cv);
        assertEquals("v1", cv.getValue());
        assertNotEquals(0L, cv.getCas());

        assertEquals(CASResponse.OK, mc.cas(p + "k", cv.getCas(), "v2"));
        assertEquals("v2", mc.get(p + "k"));
        assertEquals(CASResponse.EXISTS, mc.cas(p + "k", cv.getCas(), "v3"), "stale cas");
        assertEquals("v2", mc.get(p + "k"));

        CASValue<Object> cv2 = mc.gets(p + "k");
        assertNotEquals(cv.getCas(), cv2.getCas(), "cas id must change on update");
        // With an expiration argument, and async.
        assertEquals(CASResponse.OK, await(mc.asyncCAS(p + "k", cv2.getCas(), 0, "v4")));
        assertEquals("v4", mc.get(p + "k"));

        // A plain set invalidates an outstanding id.
        CASValue<Object> cv3 = mc.gets(p + "k");
        assertTrue(set(p + "k", 0, "set-in-between"));
        assertEquals(CASResponse.EXISTS, mc.cas(p + "k", cv3.getCas(), "late"));

        // Missing key.
        assertNull(mc.gets(p + "missing"));
        assertEquals(CASResponse.NOT_FOUND, mc.cas(p + "missing", 12345L, "x"));
        CASValue<Object> cv4 = mc.gets(p + "k");
        assertTrue(await(mc.delete(p + "k")));
        assertEquals(CASResponse.NOT_FOUND, mc.cas(p + "k", cv4.getCas(), "ghost"));
        assertNull(mc.get(p + "k"));

        // Concurrent-style CAS loop through one client.
        assertTrue(set(p + "ctr", 0, "0"));
        for (int i = 0; i < 50; i++) {
            CASValue<Object> c = mc.gets(p + "ctr");
            int n = Integer.parseInt((String) c.getValue());
            assertEquals(CASResponse.OK, mc.cas(p + "ctr", c.getCas(), Integer.toString(n + 1)));
        }
        assertEquals("50", mc.get(p + "ctr"));
    }

    // ------------------------------------------------------------------ incr / decr

    @Test
    void incrDecr() throws Exception {
        // Without a default, a missing key gives -1 and is not created.
        assertEquals(-1L, mc.incr(p + "missing", 1));
        assertEquals(-1L, mc.decr(p + "missing", 1));
        assertNull(mc.get(p + "missing"));

        // With a default: created with the default (not default+by), then counted.
        assertEquals(10L, mc.incr(p + "c", 5, 10));
        assertEquals(15L, mc.incr(p + "c", 5, 10));
        assertEquals(12L, mc.decr(p + "c", 3, 10));
        assertEquals(100L, mc.decr(p + "d", 1, 100, 0));
        assertEquals(99L, mc.decr(p + "d", 1, 100, 0));
        assertEquals(7L, mc.incr(p + "e", 1L, 7L, 3600));
        assertEquals(8L, (long) await(mc.asyncIncr(p + "e", 1L)));
        assertEquals(6L, (long) await(mc.asyncDecr(p + "e", 2)));

        // Values stored as decimal strings are counters.
        assertTrue(set(p + "s", 0, "41"));
        assertEquals(42L, mc.incr(p + "s", 1));
        assertEquals("42", mc.get(p + "s"));
        assertTrue(set(p + "w", 0, "99"));
        assertEquals(100L, mc.incr(p + "w", 1));
        assertEquals("100", mc.get(p + "w"));
        assertEquals(99L, mc.decr(p + "w", 1));
        assertEquals("99", ((String) mc.get(p + "w")).trim()); // memcached may keep the old width space-padded

        // Decrement floors at zero.
        assertEquals(0L, mc.decr(p + "s", 1000));
        if (binary()) {
            // Increment wraps at 2^64; the binary reply is 8 raw bytes, read as a signed long.
            // Not on the ASCII path: spymemcached parses the decimal reply with Long.parseLong, so
            // values >= 2^63 fail inside the client; and real memcached 1.6.18 was seen to answer
            // "CLIENT_ERROR cannot increment or decrement non-numeric value" to an ASCII incr of a
            // stored 18446744073709551615 in about one run in five of this suite. The Go test covers
            // the ASCII wrap-around.
            assertTrue(set(p + "max", 0, "18446744073709551615"));
            assertEquals(1L, mc.incr(p + "max", 2));
            assertTrue(set(p + "big", 0, "9223372036854775807"));
            assertEquals(Long.MIN_VALUE, mc.incr(p + "big", 1), "2^63 reads back as Long.MIN_VALUE");
        }

        // Incr on a counter bumps the CAS id.
        long cas1 = mc.gets(p + "c").getCas();
        mc.incr(p + "c", 1);
        assertNotEquals(cas1, mc.gets(p + "c").getCas());
    }

    @Test
    void incrOnNonNumeric() throws Exception {
        assertTrue(set(p + "text", 0, "not a number"));
        long r;
        try {
            r = mc.incr(p + "text", 1);
        } catch (RuntimeException e) {
            r = -2; // some client/protocol paths surface the server's error as an exception
        }
        assertTrue(r < 0, "incr on a non-numeric value must fail, got " + r);
        assertEquals("not a number", mc.get(p + "text"), "value unchanged after failed incr");
        // The connection is still in sync afterwards.
        assertTrue(set(p + "after", 0, "7"));
        assertEquals(8L, mc.incr(p + "after", 1));
    }

    // ------------------------------------------------------------------ delete / touch / gat / expiry

    @Test
    void delete() throws Exception {
        assertTrue(set(p + "k", 0, "v"));
        assertTrue(await(mc.delete(p + "k")), "delete existing");
        assertNull(mc.get(p + "k"));
        assertFalse(await(mc.delete(p + "k")), "delete again");
        assertFalse(await(mc.delete(p + "never")), "delete never-set");
    }

    /**
     * All TTL behaviour in one test so the suite sleeps only once per protocol. Items that must
     * still be there a few milliseconds later are set with 2 s, not 1 s: memcached's clock ticks
     * once a second, so a 1 s item can expire right after its set (seen in CI). The absolute
     * time stays now + 1 s: the server's clock lags by up to a second, so a later absolute
     * time could outlive the 2.1 s sleep.
     */
    @Test
    void expiryTouchAndGetAndTouch() throws Exception {
        assertTrue(set(p + "exp1", 2, "short"));
        assertTrue(set(p + "abs", (int) (System.currentTimeMillis() / 1000 + 1), "absolute"));
        assertTrue(set(p + "forever", 0, "forever"));
        assertTrue(set(p + "hour", 3600, "hour"));
        assertEquals("short", mc.get(p + "exp1"));
        assertEquals("absolute", mc.get(p + "abs"));

        // touch: extend one short-lived key, shorten one long-lived key.
        assertTrue(set(p + "touched", 2, "t"));
        assertTrue(await(mc.touch(p + "touched", 3600)), "touch existing");
        assertTrue(set(p + "shortened", 3600, "s"));
        assertTrue(await(mc.touch(p + "shortened", 1)), "touch to shorten");
        assertFalse(await(mc.touch(p + "missing", 10)), "touch missing");

        // getAndTouch (binary GAT only; spymemcached refuses it for ASCII on the client side).
        assertTrue(set(p + "gat", 2, "gatval"));
        assertTrue(set(p + "gatshort", 3600, "gs"));
        if (binary()) {
            CASValue<Object> g = mc.getAndTouch(p + "gat", 3600);
            assertNotNull(g, "getAndTouch existing");
            assertEquals("gatval", g.getValue());
            assertNotEquals(0L, g.getCas());
            assertEquals("gs", mc.getAndTouch(p + "gatshort", 1).getValue());
            assertNull(mc.getAndTouch(p + "missing", 10), "getAndTouch missing");
        } else {
            try {
                mc.getAndTouch(p + "gat", 3600);
                fail("spymemcached's ASCII factory was expected to refuse getAndTouch");
            } catch (UnsupportedOperationException expected) {
                // the ASCII path uses touch instead
                assertTrue(await(mc.touch(p + "gat", 3600)));
                assertTrue(await(mc.touch(p + "gatshort", 1)));
            }
        }

        Thread.sleep(2100);

        assertNull(mc.get(p + "exp1"), "exp 2 item must be gone after 2.1 s");
        assertNull(mc.get(p + "abs"), "absolute-time item must be gone");
        assertEquals("forever", mc.get(p + "forever"));
        assertEquals("hour", mc.get(p + "hour"));
        assertEquals("t", mc.get(p + "touched"), "touched item must have survived");
        assertNull(mc.get(p + "shortened"), "touch must be able to shorten the TTL");
        assertEquals("gatval", mc.get(p + "gat"), "getAndTouch must have extended the TTL");
        assertNull(mc.get(p + "gatshort"));
        // Expired keys are absent for add/replace/gets/getBulk too.
        assertNull(mc.gets(p + "exp1"));
        assertEquals(Map.of(p + "forever", "forever"), mc.getBulk(p + "exp1", p + "forever"));
        assertFalse(await(mc.replace(p + "abs", 0, "x")));
        assertTrue(await(mc.add(p + "exp1", 0, "re-added")));
        assertEquals("re-added", mc.get(p + "exp1"));
    }

    @Test
    void negativeExpiration() throws Exception {
        // ASCII: "set k 0 -1 1" is immediately expired. Binary: the 32-bit expiration field is
        // unsigned, so -1 goes out as 0xFFFFFFFF, which memcached 1.6.18 reads as an absolute Unix
        // time (in 2106) and keeps the item; likewise for touch.
        assertTrue(set(p + "neg", -1, "x"));
        if (binary()) {
            assertEquals("x", mc.get(p + "neg"), "binary SET exp 0xFFFFFFFF: memcached keeps the item (far-future absolute time)");
            assertTrue(set(p + "t", 100, "t"));
            assertTrue(await(mc.touch(p + "t", -1)), "binary TOUCH exp 0xFFFFFFFF must succeed like memcached");
            assertEquals("t", mc.get(p + "t"), "binary TOUCH exp 0xFFFFFFFF: memcached keeps the item");
        } else {
            assertNull(mc.get(p + "neg"), "ASCII negative exptime means already expired");
        }
    }

    // ------------------------------------------------------------------ flush / stats / versions

    @Test
    void flush() throws Exception {
        for (int i = 0; i < 20; i++) {
            assertTrue(set(p + i, 0, "v" + i));
        }
        assertTrue(await(mc.flush()), "flush");
        for (int i = 0; i < 20; i++) {
            assertNull(mc.get(p + i), "after flush " + i);
        }
        assertTrue(set(p + "after", 0, "v"));
        assertEquals("v", mc.get(p + "after"));
    }

    @Test
    void statsAndVersions() throws Exception {
        assertTrue(set(p + "k", 0, "v"));
        Map<SocketAddress, Map<String, String>> stats = mc.getStats();
        assertEquals(1, stats.size(), "one server");
        Map<String, String> s = stats.values().iterator().next();
        for (String name : new String[] {"curr_items", "pid", "uptime", "version", "curr_connections",
                "total_items", "cmd_get", "cmd_set", "get_hits", "get_misses"}) {
            assertTrue(s.containsKey(name), "stats lacks " + name + ": " + s.keySet());
        }
        assertTrue(Long.parseLong(s.get("curr_items")) >= 1, "curr_items = " + s.get("curr_items"));
        assertTrue(Long.parseLong(s.get("cmd_set")) >= 1, "cmd_set = " + s.get("cmd_set"));

        Map<SocketAddress, String> versions = mc.getVersions();
        assertEquals(1, versions.size());
        String v = versions.values().iterator().next();
        assertNotNull(v);
        assertFalse(v.isBlank(), "empty version");
    }

    // ------------------------------------------------------------------ many ops in flight

    @Test
    void tenThousandAsyncOps() throws Exception {
        final int n = 10_000;
        List<OperationFuture<Boolean>> sets = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            sets.add(mc.set(p + i, 0, "value-" + i + "-" + "x".repeat(i % 100)));
        }
        for (int i = 0; i < n; i++) {
            assertTrue(await(sets.get(i)), "async set " + i);
        }
        List<GetFuture<Object>> gets = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            gets.add(mc.asyncGet(p + i));
        }
        for (int i = 0; i < n; i++) {
            assertEquals("value-" + i + "-" + "x".repeat(i % 100), await(gets.get(i)), "async get " + i);
        }

        // Mixed pipeline: incr / add / delete / gets in flight at once.
        assertTrue(set(p + "ctr", 0, "0"));
        List<Future<?>> mixed = new ArrayList<>();
        for (int i = 0; i < 2000; i++) {
            mixed.add(mc.asyncIncr(p + "ctr", 1));
            mixed.add(mc.add(p + "add" + (i % 100), 0, "a"));
            mixed.add(mc.delete(p + (i + 5000)));
            mixed.add(mc.asyncGets(p + i));
        }
        for (Future<?> f : mixed) {
            await(f);
        }
        assertEquals("2000", mc.get(p + "ctr"));
        for (int i = 5000; i < 7000; i++) {
            assertNull(mc.get(p + i), "deleted " + i);
        }
        Map<String, Object> bulk = mc.getBulk(Arrays.asList(p + "add0", p + "add99", p + "0", p + "9999"));
        assertEquals(4, bulk.size());
    }
}
