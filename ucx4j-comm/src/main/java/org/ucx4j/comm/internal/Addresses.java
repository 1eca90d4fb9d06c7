package org.ucx4j.comm.internal;

import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;

/** host:port URIs to socket addresses and back, with errors that name the address. */
final class Addresses {
    private Addresses() {}

    static InetSocketAddress socketAddress(URI uri) {
        String host = uri.getHost();
        if (host == null || uri.getPort() < 0) {
            throw new IllegalArgumentException("comm address '" + uri + "' needs a host and a port, for example "
                    + uri.getScheme() + "://127.0.0.1:0 or " + uri.getScheme() + "://[::1]:9000");
        }
        if ((uri.getPath() != null && !uri.getPath().isEmpty() && !uri.getPath().equals("/"))
                || uri.getQuery() != null) {
            throw new IllegalArgumentException(
                    "comm address '" + uri + "' has a path or query; expected " + uri.getScheme() + "://host:port");
        }
        if (host.startsWith("[") && host.endsWith("]")) {
            host = host.substring(1, host.length() - 1);
        }
        InetSocketAddress a = new InetSocketAddress(host, uri.getPort());
        if (a.isUnresolved()) {
            throw new IllegalArgumentException("comm address '" + uri + "': host '" + host + "' cannot be resolved");
        }
        return a;
    }

    static URI uri(String scheme, InetSocketAddress a) {
        InetAddress ip = a.getAddress();
        String host = ip == null ? a.getHostString() : ip.getHostAddress();
        int zone = host.indexOf('%');
        if (zone >= 0) {
            host = host.substring(0, zone);
        }
        if (ip instanceof Inet6Address || host.contains(":")) {
            host = "[" + host + "]";
        }
        return URI.create(scheme + "://" + host + ":" + a.getPort());
    }
}
