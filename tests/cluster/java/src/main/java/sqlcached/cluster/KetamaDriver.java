package sqlcached.cluster;

import java.io.BufferedReader;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.logging.LogManager;

import net.spy.memcached.AddrUtil;
import net.spy.memcached.FailureMode;
import net.spy.memcached.KetamaConnectionFactory;
import net.spy.memcached.MemcachedClient;

/**
 * spymemcached 2.12.3's KetamaConnectionFactory in front of several memcached-compatible nodes,
 * driven by tests/cluster/test_ketama.py one command per stdin line, one reply per stdout line
 * (so that the test can SIGKILL and restart a node between two commands):
 *
 * <pre>
 *   connect HOST:PORT ...   a new MemcachedClient on those nodes (closes the previous one)  -> ok
 *   connect --defaults HOST:PORT ...   the same with a plain KetamaConnectionFactory()
 *   set KEY ...             set each KEY to "v:" + KEY, wait for every future  -> ok FAILED_COUNT
 *   get KEY ...             get each key                -> one character per key, in order:
 *                           h hit with the right value, w wrong value, m miss, e exception or
 *                           not answered within 5 s of the last get being issued
 *   close                   shut the client down                           -> ok
 * </pre>
 *
 * The factory is KetamaConnectionFactory (ketama continuum: MD5, 160 points per node labelled
 * "host:port-N", the same ring as libmemcached's ketama_weighted) with only the settings a node
 * restart needs changed from spymemcached's defaults: reconnect at most 1 s after a node drops
 * (default 30 s, doubling per attempt), 1 s operation timeout (default 2.5 s). The failure mode is
 * left at its default, Redistribute: once a node is seen down its keys go to another node, found
 * by rehashing the key up to 7 times; the rare key whose every rehash lands on the dead node again
 * stays queued on it, as do the gets already written to it when it died: those end as timeouts.
 */
public final class KetamaDriver {
    /** Reconnect delay cap in seconds (spymemcached's default: 30). */
    static final long MAX_RECONNECT_DELAY_S = 1;
    /** Per-operation timeout in milliseconds (spymemcached's default: 2500). */
    static final long OP_TIMEOUT_MS = 1000;
    /** How long `get` waits for all of its futures together. */
    static final long BATCH_TIMEOUT_MS = 5000;

    static final class Factory extends KetamaConnectionFactory {
        @Override
        public long getMaxReconnectDelay() {
            return MAX_RECONNECT_DELAY_S;
        }

        @Override
        public long getOperationTimeout() {
            return OP_TIMEOUT_MS;
        }

        @Override
        public FailureMode getFailureMode() {
            return FailureMode.Redistribute; // spymemcached's default, spelled out
        }

        @Override
        public boolean isDaemon() {
            return true;
        }
    }

    private static MemcachedClient mc;

    static String set(String[] keys) throws InterruptedException {
        List<Future<Boolean>> fs = new ArrayList<>(keys.length);
        for (String k : keys) {
            fs.add(mc.set(k, 0, "v:" + k));
        }
        int failed = 0;
        for (Future<Boolean> f : fs) {
            try {
                if (!Boolean.TRUE.equals(f.get(10, TimeUnit.SECONDS))) {
                    failed++;
                }
            } catch (Exception e) {
                failed++;
            }
        }
        return "ok " + failed;
    }

    static String get(String[] keys) throws InterruptedException {
        int n = keys.length;
        List<Future<Object>> fs = new ArrayList<>(n);
        StringBuilder out = new StringBuilder(n);
        for (String k : keys) {
            try {
                fs.add(mc.asyncGet(k));
            } catch (RuntimeException e) { // e.g. the input queue is full
                fs.add(null);
            }
        }
        // One deadline for the whole batch, as an application waiting on a page's gets would:
        // a get written to a node just before it died stays queued on that node for resending
        // once it reconnects (spymemcached redistributes only what it had not written yet), so
        // it only ends by timing out here.
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(BATCH_TIMEOUT_MS);
        for (int i = 0; i < n; i++) {
            Future<Object> f = fs.get(i);
            if (f == null) {
                out.append('e');
                continue;
            }
            try {
                Object v = f.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
                if (v == null) {
                    out.append('m');
                } else if (("v:" + keys[i]).equals(v)) {
                    out.append('h');
                } else {
                    out.append('w');
                }
            } catch (Exception e) {
                f.cancel(true);
                out.append('e');
            }
        }
        return out.toString();
    }

    public static void main(String[] args) throws Exception {
        System.setProperty("net.spy.log.LoggerImpl", "net.spy.memcached.compat.log.SunLogger");
        try (InputStream props = KetamaDriver.class.getResourceAsStream("/ketama-logging.properties")) {
            if (props != null) {
                LogManager.getLogManager().readConfiguration(props);
            }
        }
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            String[] w = line.trim().split("\\s+");
            String reply;
            try {
                switch (w[0]) {
                    case "connect": {
                        if (mc != null) {
                            mc.shutdown(1, TimeUnit.SECONDS);
                        }
                        boolean defaults = w.length > 1 && w[1].equals("--defaults");
                        List<String> addrs = Arrays.asList(w).subList(defaults ? 2 : 1, w.length);
                        mc = new MemcachedClient(defaults ? new KetamaConnectionFactory() : new Factory(),
                                AddrUtil.getAddresses(String.join(" ", addrs)));
                        reply = "ok";
                        break;
                    }
                    case "set":
                        reply = set(Arrays.copyOfRange(w, 1, w.length));
                        break;
                    case "get":
                        reply = get(Arrays.copyOfRange(w, 1, w.length));
                        break;
                    case "close":
                        if (mc != null) {
                            mc.shutdown(1, TimeUnit.SECONDS);
                            mc = null;
                        }
                        reply = "ok";
                        break;
                    case "quit":
                        if (mc != null) {
                            mc.shutdown(1, TimeUnit.SECONDS);
                        }
                        out.println("ok");
                        return;
                    default:
                        reply = "error unknown command " + w[0];
                }
            } catch (Exception e) {
                reply = "error " + e;
            }
            out.println(reply);
        }
    }
}
