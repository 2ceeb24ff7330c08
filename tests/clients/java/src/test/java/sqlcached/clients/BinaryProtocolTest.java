package sqlcached.clients;

import net.spy.memcached.BinaryConnectionFactory;
import net.spy.memcached.ConnectionFactory;

/** spymemcached over the binary protocol, set up as in most Java applications. */
class BinaryProtocolTest extends SpymemcachedCompatBase {
    @Override
    protected ConnectionFactory factory() {
        return new BinaryConnectionFactory();
    }

    @Override
    protected boolean binary() {
        return true;
    }
}
