package sqlcached.mysqlproxy;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.sql.Driver;
import java.sql.DriverManager;

import org.junit.jupiter.api.Test;

/**
 * Needs no server. .ci/deps-clients.sh runs only this class, which makes Maven fetch Connector/J
 * and surefire's JUnit Platform provider, so later `mvn test` runs need nothing from the network.
 */
class DriverLoadsTest {
    @Test
    void driverLoads() throws Exception {
        Driver d = DriverManager.getDriver("jdbc:mysql://127.0.0.1:3306/test");
        assertTrue(d.getMajorVersion() >= 8);
    }
}
