package sqlcached.mysqlproxy;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.security.MessageDigest;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The unchanged MySQL Connector/J through the sqlcached MySQL proxy, with server-side prepared
 * statements (useServerPrepStmts=true: COM_STMT_PREPARE/EXECUTE/CLOSE/RESET) and with
 * client-side ones (false: COM_QUERY). Every result is compared with MariaDB's direct answer.
 * The database MYSQL_DB has t(id INT PRIMARY KEY, v VARCHAR(64), n INT) with rows 1..100.
 */
class ProxyTest {
    private static String env(String name) {
        String v = System.getenv(name);
        assumeTrue(v != null && !v.isEmpty(), name + " is not set (run through tests/querycache/test_client_java.py)");
        return v;
    }

    private static Connection connect(String addr, String password, boolean serverPs, String extra)
            throws SQLException {
        String url = "jdbc:mysql://" + addr + "/" + env("MYSQL_DB") + "?useSSL=false&sslMode=DISABLED"
                + "&allowPublicKeyRetrieval=true&connectTimeout=10000&socketTimeout=60000"
                + "&useServerPrepStmts=" + serverPs + "&cachePrepStmts=false" + extra;
        return DriverManager.getConnection(url, env("MYSQL_USER"), password);
    }

    private static Connection proxy(boolean serverPs, String extra) throws SQLException {
        return connect(env("PROXY_ADDR"), env("MYSQL_PASSWORD"), serverPs, extra);
    }

    private static Connection direct(boolean serverPs, String extra) throws SQLException {
        return connect(env("DIRECT_ADDR"), env("MYSQL_PASSWORD"), serverPs, extra);
    }

    /** Every row of every column as strings (NULL as null), with the column labels first. */
    private static List<List<String>> rows(ResultSet rs) throws SQLException {
        List<List<String>> out = new ArrayList<>();
        ResultSetMetaData md = rs.getMetaData();
        List<String> head = new ArrayList<>();
        for (int i = 1; i <= md.getColumnCount(); i++) {
            head.add(md.getColumnLabel(i) + ":" + md.getColumnTypeName(i));
        }
        out.add(head);
        while (rs.next()) {
            List<String> row = new ArrayList<>();
            for (int i = 1; i <= md.getColumnCount(); i++) {
                row.add(rs.getString(i));
            }
            out.add(row);
        }
        return out;
    }

    private static List<List<String>> query(Connection c, String sql, Object... args) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            for (int i = 0; i < args.length; i++) {
                ps.setObject(i + 1, args[i]);
            }
            try (ResultSet rs = ps.executeQuery()) {
                return rows(rs);
            }
        }
    }

    private static int update(Connection c, String sql, Object... args) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            for (int i = 0; i < args.length; i++) {
                ps.setObject(i + 1, args[i]);
            }
            return ps.executeUpdate();
        }
    }

    @ParameterizedTest
    @ValueSource(booleans = {true, false})
    void selectsMatchDirect(boolean serverPs) throws Exception {
        try (Connection p = proxy(serverPs, ""); Connection d = direct(serverPs, "")) {
            for (int round = 0; round < 3; round++) {
                for (int id : new int[] {1, 2, 50}) {
                    assertEquals(query(d, "SELECT id, v, n FROM t WHERE id = ?", id),
                            query(p, "SELECT id, v, n FROM t WHERE id = ?", id), "id " + id + " round " + round);
                }
                assertEquals(query(d, "SELECT id, v FROM t WHERE id BETWEEN ? AND ? ORDER BY id", 10, 20),
                        query(p, "SELECT id, v FROM t WHERE id BETWEEN ? AND ? ORDER BY id", 10, 20));
            }
            String types = "SELECT ?, CAST(? AS DECIMAL(12,4)), CAST(? AS DATE), CAST(? AS DOUBLE), ? IS NULL, HEX(?)";
            Object[] args = {"héllo wörld", "-12345.6789", "2024-02-29", "1.5e10", null, new byte[] {0, 1, (byte) 255}};
            assertEquals(query(d, types, args), query(p, types, args));
        }
    }

    /**
     * A statement whose first executions on this connection are cache hits (another connection
     * filled the cache), then a miss: Connector/J sends the parameter types only with the first
     * COM_STMT_EXECUTE, which the backend never saw, so the proxy must supply them.
     */
    @ParameterizedTest
    @ValueSource(booleans = {true, false})
    void preparedHitThenMiss(boolean serverPs) throws Exception {
        String sql = "SELECT v, n FROM t WHERE id = ?";
        try (Connection a = proxy(serverPs, ""); Connection b = proxy(serverPs, ""); Connection d = direct(serverPs, "")) {
            for (int i = 0; i < 3; i++) {
                query(a, sql, 21); // fills the cache
            }
            try (PreparedStatement ps = b.prepareStatement(sql)) {
                for (int id : new int[] {21, 21, 22, 23, 21, 24}) {
                    ps.setInt(1, id);
                    try (ResultSet rs = ps.executeQuery()) {
                        assertEquals(query(d, sql, id), rows(rs), "id " + id);
                    }
                }
            }
        }
    }

    @ParameterizedTest
    @ValueSource(booleans = {true, false})
    void writesAreVisible(boolean serverPs) throws Exception {
        int base = serverPs ? 2000 : 3000;
        try (Connection p = proxy(serverPs, "")) {
            update(p, "DELETE FROM t WHERE id >= ? AND id < ?", base, base + 1000);
            for (int i = 0; i < 10; i++) {
                int id = base + i;
                assertEquals(1, update(p, "INSERT INTO t (id, v, n) VALUES (?, ?, ?)", id, "j" + i, i));
                for (int j = 0; j < 3; j++) {
                    String want = j == 0 ? "j" + i : "j" + i + "-" + (j - 1);
                    assertEquals(want, query(p, "SELECT v FROM t WHERE id = ?", id).get(1).get(0));
                    assertEquals(1, update(p, "UPDATE t SET v = ? WHERE id = ?", "j" + i + "-" + j, id));
                }
            }
            assertEquals("10", query(p, "SELECT COUNT(*) FROM t WHERE id >= ? AND id < ?", base, base + 1000).get(1).get(0));
            update(p, "DELETE FROM t WHERE id >= ? AND id < ?", base, base + 1000);
            assertEquals("0", query(p, "SELECT COUNT(*) FROM t WHERE id >= ? AND id < ?", base, base + 1000).get(1).get(0));
        }
    }

    @ParameterizedTest
    @ValueSource(booleans = {true, false})
    void transactionCommitAndRollback(boolean serverPs) throws Exception {
        int id = serverPs ? 11 : 12;
        try (Connection p = proxy(serverPs, "")) {
            String before = query(p, "SELECT v FROM t WHERE id = ?", id).get(1).get(0);
            p.setAutoCommit(false);
            update(p, "UPDATE t SET v = ? WHERE id = ?", "tx", id);
            assertEquals("tx", query(p, "SELECT v FROM t WHERE id = ?", id).get(1).get(0));
            p.rollback();
            p.setAutoCommit(true);
            assertEquals(before, query(p, "SELECT v FROM t WHERE id = ?", id).get(1).get(0));
            p.setAutoCommit(false);
            update(p, "UPDATE t SET v = ? WHERE id = ?", "tx-committed", id);
            p.commit();
            p.setAutoCommit(true);
            assertEquals("tx-committed", query(p, "SELECT v FROM t WHERE id = ?", id).get(1).get(0));
            update(p, "UPDATE t SET v = ? WHERE id = ?", before, id);
        }
    }

    @ParameterizedTest
    @ValueSource(booleans = {true, false})
    void errorsPassThrough(boolean serverPs) throws Exception {
        try (Connection p = proxy(serverPs, ""); Connection d = direct(serverPs, "")) {
            for (String sql : new String[] {"SELEC 1", "SELECT * FROM no_such_table", "SELECT nope FROM t WHERE id = ?"}) {
                SQLException pe = assertThrows(SQLException.class, () -> query(p, sql, sql.contains("?") ? new Object[] {1} : new Object[0]));
                SQLException de = assertThrows(SQLException.class, () -> query(d, sql, sql.contains("?") ? new Object[] {1} : new Object[0]));
                assertEquals(de.getErrorCode(), pe.getErrorCode(), sql);
                assertEquals(de.getSQLState(), pe.getSQLState(), sql);
                assertEquals(de.getMessage(), pe.getMessage(), sql);
            }
            assertEquals(2, query(p, "SELECT v FROM t WHERE id = ?", 1).size());
        }
    }

    @ParameterizedTest
    @ValueSource(booleans = {true, false})
    void multiResults(boolean serverPs) throws Exception {
        try (Connection p = proxy(serverPs, "&allowMultiQueries=true"); Connection d = direct(serverPs, "&allowMultiQueries=true")) {
            assertEquals(multi(d), multi(p));
        }
    }

    private static List<List<List<String>>> multi(Connection c) throws SQLException {
        List<List<List<String>>> sets = new ArrayList<>();
        try (Statement st = c.createStatement()) {
            boolean isRs = st.execute("SELECT 1 AS a; SELECT v FROM t WHERE id = 3; UPDATE t SET n = n WHERE id = 3; SELECT 'x' AS b");
            while (true) {
                if (isRs) {
                    try (ResultSet rs = st.getResultSet()) {
                        sets.add(rows(rs));
                    }
                } else if (st.getUpdateCount() == -1) {
                    break;
                } else {
                    sets.add(List.of(List.of("update:" + st.getUpdateCount())));
                }
                isRs = st.getMoreResults();
            }
        }
        return sets;
    }

    @ParameterizedTest
    @ValueSource(booleans = {true, false})
    void bigRow(boolean serverPs) throws Exception {
        byte[] big = new byte[(17 << 20) + 12345]; // > 16 MiB: split packets both ways
        for (int i = 0; i < big.length; i++) {
            big[i] = (byte) (i * 31 + 7);
        }
        try (Connection p = proxy(serverPs, "&maxAllowedPacket=67108864")) {
            try (Statement st = p.createStatement()) {
                st.execute("CREATE TABLE IF NOT EXISTS java_big (id INT PRIMARY KEY, b LONGBLOB)");
            }
            int id = serverPs ? 1 : 2;
            update(p, "REPLACE INTO java_big VALUES (?, ?)", id, big);
            for (int i = 0; i < 2; i++) {
                try (PreparedStatement ps = p.prepareStatement("SELECT b FROM java_big WHERE id = ?")) {
                    ps.setInt(1, id);
                    try (ResultSet rs = ps.executeQuery()) {
                        assertTrue(rs.next());
                        byte[] got = rs.getBytes(1);
                        assertNotNull(got);
                        assertEquals(big.length, got.length);
                        MessageDigest md = MessageDigest.getInstance("SHA-256");
                        assertArrayEquals(md.digest(big), MessageDigest.getInstance("SHA-256").digest(got));
                    }
                }
            }
        }
    }

    @ParameterizedTest
    @ValueSource(booleans = {true, false})
    void wrongPasswordIs1045(boolean serverPs) {
        for (String addr : Arrays.asList(env("PROXY_ADDR"), env("DIRECT_ADDR"))) {
            SQLException e = assertThrows(SQLException.class, () -> connect(addr, "wrong-password", serverPs, "").close());
            assertEquals(1045, e.getErrorCode(), addr + ": " + e.getMessage());
        }
    }

    /** Connector/J over TLS to the proxy (sslMode=VERIFY_CA with a PKCS12 trust store). */
    private static Connection tlsProxy(String trustStore, boolean serverPs) throws SQLException {
        String url = "jdbc:mysql://" + env("PROXY_ADDR") + "/" + env("MYSQL_DB")
                + "?sslMode=VERIFY_CA&trustCertificateKeyStoreUrl=file:" + trustStore
                + "&trustCertificateKeyStoreType=PKCS12&trustCertificateKeyStorePassword=changeit"
                + "&connectTimeout=10000&socketTimeout=60000&useServerPrepStmts=" + serverPs
                + "&cachePrepStmts=false";
        return DriverManager.getConnection(url, env("MYSQL_USER"), env("MYSQL_PASSWORD"));
    }

    /**
     * sslMode=VERIFY_CA: the proxy offers TLS and terminates it; answers are MariaDB's, also
     * from the cache, and a trust store without the proxy's CA refuses the connection.
     */
    @ParameterizedTest
    @ValueSource(booleans = {true, false})
    void tlsVerifyCa(boolean serverPs) throws Exception {
        try (Connection tls = tlsProxy(env("TLS_TRUSTSTORE"), serverPs); Connection d = direct(serverPs, "")) {
            for (int i = 0; i < 3; i++) {
                assertEquals(query(d, "SELECT v, n FROM t WHERE id = ?", 11),
                        query(tls, "SELECT v, n FROM t WHERE id = ?", 11));
            }
            try (Statement st = tls.createStatement(); ResultSet rs = st.executeQuery("SELECT 1")) {
                assertTrue(rs.next());
            }
        }
        assertThrows(SQLException.class, () -> tlsProxy(env("TLS_ROGUE_TRUSTSTORE"), serverPs).close());
    }
}
