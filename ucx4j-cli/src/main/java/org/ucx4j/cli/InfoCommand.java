package org.ucx4j.cli;

import java.io.PrintStream;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code ucx4j info}: which UCX was loaded and how, the transports and devices it sees, its effective
 * configuration, and the ucx4j configuration with the source of every value.
 *
 * <p>Exit code 78 when the ucx4j configuration is invalid, else 2 when UCX is unavailable; everything
 * else is still printed. A configuration is loaded before UCX, so an invalid one is reported first.
 */
@Command(
        name = "info",
        mixinStandardHelpOptions = true,
        description = "Show the UCX library, transports, devices and configuration that ucx4j sees.")
final class InfoCommand implements Callable<Integer> {
    @Option(names = "--json", description = "Print JSON instead of text.")
    private boolean json;

    @Override
    public Integer call() {
        InfoReport report = InfoReport.collect();
        PrintStream out = System.out;
        if (json) {
            out.println(Json.write(report.tree()));
        } else {
            new InfoText(out).print(report);
        }
        out.flush();
        if (report.config() == null) {
            System.err.println("ucx4j info: the ucx4j configuration is invalid: "
                    + report.section("config").get("error"));
            return Main.EXIT_CONFIG_INVALID;
        }
        return report.ucxAvailable() ? 0 : Main.EXIT_UCX_UNAVAILABLE;
    }
}
