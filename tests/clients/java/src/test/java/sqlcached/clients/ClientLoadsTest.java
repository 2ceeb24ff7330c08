package sqlcached.clients;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.net.InetSocketAddress;
import java.util.List;

import net.spy.memcached.AddrUtil;
import net.spy.memcached.BinaryConnectionFactory;
import net.spy.memcached.DefaultConnectionFactory;

import org.junit.jupiter.api.Test;

/**
 * Needs no server. .ci/deps-clients.sh runs only this class, which makes surefire resolve its
 * JUnit Platform provider and launcher (dependency:go-offline does not fetch those), so later
 * `mvn test` runs need nothing from the network.
 */
class ClientLoadsTest {
    @Test
    void clientClassesLoad() {
        List<InetSocketAddress> addrs = AddrUtil.getAddresses("127.0.0.1:11211 127.0.0.2:11212");
        assertEquals(2, addrs.size());
        assertEquals(11212, addrs.get(1).getPort());
        new BinaryConnectionFactory();
        new DefaultConnectionFactory();
    }
}
