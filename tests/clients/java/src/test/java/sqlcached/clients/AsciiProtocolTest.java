package sqlcached.clients;

import net.spy.memcached.ConnectionFactory;
import net.spy.memcached.DefaultConnectionFactory;

/** spymemcached over the ASCII (text) protocol: the client's default factory. */
class AsciiProtocolTest extends SpymemcachedCompatBase {
    @Override
    protected ConnectionFactory factory() {
        return new DefaultConnectionFactory();
    }

    @Override
    protected boolean binary() {
        return false;
    }
}
