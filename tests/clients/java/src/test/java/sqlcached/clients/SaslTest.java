package sqlcached.clients;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.net.InetSocketAddress;
import java.util.List;
import java.util.concurrent.TimeUnit;

import net.spy.memcached.ConnectionFactoryBuilder;
import net.spy.memcached.MemcachedClient;
import net.spy.memcached.auth.AuthDescriptor;
import net.spy.memcached.auth.PlainCallbackHandler;
import org.junit.jupiter.api.Test;

/**
 * spymemcached's binary SASL (AuthDescriptor with PLAIN and a PlainCallbackHandler, as Java
 * applications configure it) against a server started with -S at $SASL_ADDR, whose password
 * file has $SASL_USER / $SASL_PASSWORD.
 */
class SaslTest {
    private static String env(String name) {
        String v = System.getenv(name);
        assumeTrue(v != null && !v.isEmpty(), name + " is not set (run through tests/clients/test_java_spymemcached.py)");
        return v;
    }

    private static MemcachedClient client(String user, String password) throws Exception {
        String[] hp = env("SASL_ADDR").split(":");
        AuthDescriptor ad = new AuthDescriptor(new String[] {"PLAIN"}, new PlainCallbackHandler(user, password));
        ConnectionFactoryBuilder b = new ConnectionFactoryBuilder()
                .setProtocol(ConnectionFactoryBuilder.Protocol.BINARY)
                .setAuthDescriptor(ad)
                .setOpTimeout(3000);
        return new MemcachedClient(b.build(), List.of(new InetSocketAddress(hp[0], Integer.parseInt(hp[1]))));
    }

    @Test
    void rightPasswordWorks() throws Exception {
        MemcachedClient mc = client(env("SASL_USER"), env("SASL_PASSWORD"));
        try {
            assertTrue(mc.set("sasl-java", 0, "hello").get(5, TimeUnit.SECONDS));
            assertEquals("hello", mc.get("sasl-java"));
            assertEquals(1L, mc.incr("sasl-n", 1, 1));
            assertTrue(mc.getStats().values().iterator().next().containsKey("auth_cmds"));
        } finally {
            mc.shutdown(2, TimeUnit.SECONDS);
        }
    }

    @Test
    void wrongPasswordGetsNothing() throws Exception {
        MemcachedClient mc = client(env("SASL_USER"), "not-" + env("SASL_PASSWORD"));
        try {
            // The client keeps failing to authenticate: every operation times out or fails.
            assertThrows(Exception.class, () -> {
                Boolean ok = mc.set("sasl-java-bad", 0, "x").get(5, TimeUnit.SECONDS);
                if (!ok) {
                    throw new IllegalStateException("refused");
                }
            });
        } finally {
            mc.shutdown(2, TimeUnit.SECONDS);
        }
    }
}
