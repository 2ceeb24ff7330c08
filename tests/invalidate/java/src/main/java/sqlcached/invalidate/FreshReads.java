package sqlcached.invalidate;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import javax.sql.rowset.CachedRowSet;
import javax.sql.rowset.RowSetFactory;
import javax.sql.rowset.RowSetProvider;

import net.spy.memcached.AddrUtil;
import net.spy.memcached.BinaryConnectionFactory;
import net.spy.memcached.MemcachedClient;

/**
 * Seed 000's cache-aside read, unchanged in shape, run by several threads for a while:
 * the key is the MD5 of {@code SELECT firstname,lastname FROM test.customers where id=<id>},
 * a hit is a serialized CachedRowSet (spymemcached, binary protocol), a miss runs the query
 * on MariaDB and {@code set}s the CachedRowSet for 30 days. Nothing in it deletes or expires
 * keys: freshness comes from sqlcached's {@code --invalidate} rule on test.customers.
 *
 * <pre>java sqlcached.invalidate.FreshReads JDBC_ADDR USER PASSWORD MEMCACHED_ADDR SECONDS ROWS THREADS</pre>
 *
 * Prints one line per read, {@code R id firstname startMillis hit}, then {@code DONE}.
 */
public final class FreshReads {
    private FreshReads() {}

    /** MD5 of the text as 32 lowercase hex digits (the seed's memcached key). */
    static String md5(String s) throws Exception {
        byte[] hash = MessageDigest.getInstance("MD5").digest(s.getBytes(StandardCharsets.UTF_8));
        StringBuilder sb = new StringBuilder(32);
        for (byte b : hash) {
            sb.append(String.format("%02x", b & 0xff));
        }
        return sb.toString();
    }

    /** Runs the readers and prints their reads. */
    public static void main(String[] args) throws Exception {
        String jdbcUrl = "jdbc:mysql://" + args[0] + "/?sslMode=DISABLED&allowPublicKeyRetrieval=true";
        String user = args[1], password = args[2], mcAddr = args[3];
        long seconds = Long.parseLong(args[4]);
        int rows = Integer.parseInt(args[5]), threads = Integer.parseInt(args[6]);
        MemcachedClient c = new MemcachedClient(new BinaryConnectionFactory(), AddrUtil.getAddresses(mcAddr));
        RowSetFactory rowSets = RowSetProvider.newFactory();
        long end = System.currentTimeMillis() + seconds * 1000;
        List<StringBuilder> outs = new ArrayList<>();
        List<Thread> workers = new ArrayList<>();
        List<Throwable> errors = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            StringBuilder out = new StringBuilder();
            outs.add(out);
            final int seed = t;
            Thread w = new Thread(() -> {
                try (Connection conn = DriverManager.getConnection(jdbcUrl, user, password)) {
                    Random generator = new Random(seed);
                    while (System.currentTimeMillis() < end) {
                        int id = generator.nextInt(rows) + 1;
                        String query1 = "SELECT firstname,lastname FROM test.customers where id=" + id;
                        String key = md5(query1);
                        long start = System.currentTimeMillis();
                        Object cached = c.asyncGet(key).get(5, TimeUnit.SECONDS);
                        CachedRowSet crs;
                        boolean hit = cached != null;
                        if (hit) {
                            crs = (CachedRowSet) cached;
                        } else {
                            try (Statement st = conn.createStatement(); ResultSet rs = st.executeQuery(query1)) {
                                crs = rowSets.createCachedRowSet();
                                crs.populate(rs);
                            }
                            c.set(key, 60 * 60 * 24 * 30, crs).get(5, TimeUnit.SECONDS);
                        }
                        crs.beforeFirst();
                        String first = crs.next() ? crs.getString("firstname") : "-";
                        out.append("R ").append(id).append(' ').append(first).append(' ').append(start)
                                .append(' ').append(hit ? 1 : 0).append('\n');
                    }
                } catch (Throwable e) {
                    synchronized (errors) {
                        errors.add(e);
                    }
                }
            });
            workers.add(w);
            w.start();
        }
        for (Thread w : workers) {
            w.join();
        }
        c.shutdown();
        for (StringBuilder out : outs) {
            System.out.print(out);
        }
        for (Throwable e : errors) {
            System.out.println("ERROR " + e);
        }
        System.out.println("DONE");
    }
}
