package org.ucx4j.cli;

import picocli.CommandLine.Option;

/** The output options of the measuring commands ({@code bench}, {@code demo}), as a picocli mixin. */
final class OutputOptions {
    @Option(names = "--json", description = "Print the results as JSON instead of a table.")
    boolean json;

    @Option(names = "--no-progress-bar", negatable = false, description = "Never draw the progress bar on stderr.")
    boolean noProgressBar;

    /** Whether a progress bar may be drawn: not asked away, and not with JSON (a run meant for a script). */
    boolean progressBar() {
        return !noProgressBar && !json;
    }
}
