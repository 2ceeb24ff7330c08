package sqlcached.seeds;

// MD5
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;

// Spymemcached
import net.spy.memcached.AddrUtil;
import net.spy.memcached.BinaryConnectionFactory;
import net.spy.memcached.MemcachedClient;

import com.mysql.cj.jdbc.Driver;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Properties;
import java.util.Random;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import javax.sql.rowset.CachedRowSet;
import javax.sql.rowset.RowSetFactory;
import javax.sql.rowset.RowSetProvider;

/**
 * Seed 000's program (jdbcdemo4, 2014: "Getting started with Memcached and MySQL") ported to
 * Java 17, run by bench/seeds/e000_cacheaside.py.
 *
 * <p>One run is the seed's whole program: connect to MySQL (and memcached), then 1000 times
 * {@code SELECT firstname,lastname FROM test.customers where id=<random 1..30000>}; with a
 * cache the MD5 of the query text is the memcached key, a hit is a serialized CachedRowSet, a
 * miss runs the query and {@code set}s its CachedRowSet for 30 days (binary protocol). The
 * time covers the connects through the client shutdown, as the seed's did.
 *
 * <p>Differences from the seed: several runs in one JVM (JIT warm-up shared; each run still
 * opens its own connections), {@code RowSetProvider}'s CachedRowSet instead of
 * com.sun.rowset.CachedRowSetImpl, a fixed Random seed per run (every run and every
 * configuration asks for the same ids), rows summed into a checksum instead of printed.
 *
 * <pre>
 * java sqlcached.seeds.CacheAside MODE JDBC_ADDR USER PASSWORD MEMCACHED_ADDR RUNS QUERIES SEED
 *   MODE: direct (JDBC only), cacheaside (memcached + JDBC), proxy (JDBC only; the address is
 *   sqlcached's MySQL port: the same code as direct)
 * </pre>
 *
 * Prints {@code RUN i ms=.. hits=.. misses=.. check=..} after each run; between runs it reads
 * one line from stdin (the driver restarts servers there), so stdin must stay open.
 */
public final class CacheAside {
    private CacheAside() {}

    /** MD5 of the text as 32 lowercase hex digits (the seed's memcached key). */
    private static String md5Encode(String string1) {
        if (string1 == null) return null;
        try {
            MessageDigest digest1 = MessageDigest.getInstance("MD5");
            byte[] hash = digest1.digest(string1.getBytes(StandardCharsets.UTF_8));
            StringBuilder sb = new StringBuilder(2 * hash.length);
            for (byte b : hash) {
                sb.append(String.format("%02x", b & 0xff));
            }
            return sb.toString();
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Adds every row's names to the checksum (the seed printed them). */
    private static long consume(CachedRowSet crs, long check) throws SQLException {
        crs.beforeFirst();
        while (crs.next()) {
            check = check * 31 + (crs.getString("firstname") + ", " + crs.getString("lastname")).hashCode();
        }
        return check;
    }

    /** Adds every row's names to the checksum, straight from the JDBC result set. */
    private static long consume(ResultSet rs, long check) throws SQLException {
        while (rs.next()) {
            check = check * 31 + (rs.getString("firstname") + ", " + rs.getString("lastname")).hashCode();
        }
        return check;
    }

    /** Runs the seed's program a number of times and prints one RUN line per run. */
    public static void main(String[] args) throws Exception {
        if (args.length != 8) {
            System.err.println("usage: CacheAside direct|cacheaside|proxy JDBC_ADDR USER PASSWORD MEMCACHED_ADDR RUNS QUERIES SEED");
            System.exit(2);
        }
        String mode = args[0];
        boolean cache = mode.equals("cacheaside");
        if (!cache && !mode.equals("direct") && !mode.equals("proxy")) {
            System.err.println("unknown mode " + mode);
            System.exit(2);
        }
        String jdbcUrl = "jdbc:mysql://" + args[1] + "/?sslMode=DISABLED&allowPublicKeyRetrieval=true"
                + "&connectTimeout=10000&socketTimeout=60000";
        String user = args[2], password = args[3], mcAddr = args[4];
        int runs = Integer.parseInt(args[5]), queries = Integer.parseInt(args[6]);
        long seed = Long.parseLong(args[7]);

        Driver driver = new Driver();
        RowSetFactory rowSets = RowSetProvider.newFactory();
        BufferedReader stdin = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));

        for (int run = 1; run <= runs; run++) {
            Properties props = new Properties();
            props.put("user", user);
            props.put("password", password);
            Random generator = new Random(seed);
            int inMemcached = 0, notInMemcached = 0;
            long check = 17;

            long startTime = System.currentTimeMillis();
            MemcachedClient c = cache
                    ? new MemcachedClient(new BinaryConnectionFactory(), AddrUtil.getAddresses(mcAddr))
                    : null;
            Connection conn = driver.connect(jdbcUrl, props);

            for (int i = 1; i <= queries; i++) {
                int id = generator.nextInt(30000) + 1;
                String query1 = "SELECT firstname,lastname FROM test.customers where id=" + id;
                Object object1 = null;
                String query1Md5 = null;
                if (cache) {
                    query1Md5 = md5Encode(query1);
                    Future<Object> f = c.asyncGet(query1Md5);
                    try {
                        object1 = f.get(5, TimeUnit.SECONDS);
                    } catch (TimeoutException e) {
                        f.cancel(false);
                        System.err.println("Memcached timeout...");
                    }
                }
                if (object1 == null) {
                    notInMemcached++;
                    try (Statement st = conn.createStatement(); ResultSet rs = st.executeQuery(query1)) {
                        if (cache) {
                            CachedRowSet crsi = rowSets.createCachedRowSet();
                            crsi.populate(rs);
                            c.set(query1Md5, 60 * 60 * 24 * 30, crsi);
                            check = consume(crsi, check);
                            crsi.close();
                        } else {
                            check = consume(rs, check);
                        }
                    }
                } else {
                    inMemcached++;
                    CachedRowSet crsi = (CachedRowSet) object1;
                    check = consume(crsi, check);
                    crsi.close();
                }
            }

            conn.close();
            if (c != null) {
                c.shutdown();
            }
            long endTime = System.currentTimeMillis();

            System.out.println("RUN " + run + " ms=" + (endTime - startTime) + " hits=" + inMemcached
                    + " misses=" + notInMemcached + " check=" + Long.toHexString(check));
            System.out.flush();
            if (run < runs && stdin.readLine() == null) {
                break; // the driver went away
            }
        }
    }
}
