package org.ucx4j.cli;

import picocli.CommandLine;

/**
 * A {@code --connect HOST:PORT} value: the host (an IPv6 address may be written in brackets, {@code [::1]:13337})
 * and a port of 1 to 65535.
 *
 * @param host the host name or address, without brackets
 * @param port the port
 */
record HostPort(String host, int port) {
    /**
     * Parses {@code HOST:PORT}.
     *
     * @param text what the user wrote
     * @return the host and port
     * @throws CommandLine.TypeConversionException naming what is wrong (picocli reports it as a usage error)
     */
    static HostPort parse(String text) {
        int colon = text.lastIndexOf(':');
        if (colon <= 0) {
            throw new CommandLine.TypeConversionException("'" + text + "' is not HOST:PORT");
        }
        String host = text.substring(0, colon);
        if (host.startsWith("[") && host.endsWith("]")) {
            host = host.substring(1, host.length() - 1);
        } else if (host.indexOf(':') >= 0) {
            // fe80::1:13337 is ambiguous: which colon ends the address?
            throw new CommandLine.TypeConversionException(
                    "'" + text + "' is not HOST:PORT: write an IPv6 address in brackets, [" + host + "]:"
                            + text.substring(colon + 1));
        }
        String portText = text.substring(colon + 1);
        int port;
        try {
            port = Integer.parseInt(portText);
        } catch (NumberFormatException e) {
            throw new CommandLine.TypeConversionException(
                    "'" + text + "' is not HOST:PORT: the port '" + portText + "' is not a number");
        }
        if (port < 1 || port > 65535) {
            throw new CommandLine.TypeConversionException(
                    "'" + text + "' is not HOST:PORT: the port " + port + " is not in 1..65535");
        }
        return new HostPort(host, port);
    }

    /** picocli's converter for options of this type. */
    static final class Converter implements CommandLine.ITypeConverter<HostPort> {
        @Override
        public HostPort convert(String value) {
            return parse(value);
        }
    }

    @Override
    public String toString() {
        return (host.indexOf(':') >= 0 ? "[" + host + "]" : host) + ":" + port;
    }
}
