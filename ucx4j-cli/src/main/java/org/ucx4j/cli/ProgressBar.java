package org.ucx4j.cli;

import java.io.PrintStream;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A progress bar on stderr for runs that take a while: it appears only after two seconds, only when
 * stderr is a terminal, and is erased when the run ends. Counting is a plain atomic increment, so the
 * measured loop pays almost nothing; a daemon thread draws.
 *
 * <p>Threading: {@link #step()} from any thread; {@link #close()} once, from the owner.
 */
final class ProgressBar implements AutoCloseable {
    private static final long SHOW_AFTER_NANOS = 2_000_000_000L;
    private static final int WIDTH = 30;

    private final AtomicLong done = new AtomicLong();
    private final long total;
    private volatile String label;
    private int widestLabel;
    private final PrintStream err;
    private final Thread painter;
    private volatile boolean running = true;
    private volatile boolean shown;

    private ProgressBar(long total, String label, PrintStream err, boolean enabled) {
        this.total = Math.max(1, total);
        this.label = label;
        this.widestLabel = label.length();
        this.err = err;
        this.painter = enabled
                ? Thread.ofPlatform().daemon(true).name("ucx4j-progress-bar").start(this::paint)
                : null;
    }

    /**
     * Starts a bar, or a silent counter when disabled or stderr is not a terminal.
     *
     * @param total the number of steps
     * @param label what is being done
     * @param enabled false to never draw
     * @return the bar, to close when done
     */
    static ProgressBar start(long total, String label, boolean enabled) {
        java.io.Console console = System.console();
        boolean terminal = console != null && console.isTerminal();
        return new ProgressBar(total, label, System.err, enabled && terminal);
    }

    /**
     * Changes what the bar says is being done.
     *
     * @param text the new label
     */
    synchronized void label(String text) {
        label = text;
        widestLabel = Math.max(widestLabel, text.length());
    }

    /**
     * Prints a line on stderr above the bar (which is redrawn below it), or just the line when no bar is drawn.
     *
     * @param line the text
     */
    synchronized void println(String line) {
        erase();
        err.println(line);
        err.flush();
    }

    /** Counts one step. */
    void step() {
        done.incrementAndGet();
    }

    private void paint() {
        long start = System.nanoTime();
        while (running) {
            try {
                Thread.sleep(200);
            } catch (InterruptedException e) {
                return;
            }
            if (running && System.nanoTime() - start >= SHOW_AFTER_NANOS) {
                long d = Math.min(done.get(), total);
                int filled = (int) (WIDTH * d / total);
                synchronized (this) {
                    if (running) {
                        err.printf(
                                "\r%s [%s%s] %3d%% %d/%d",
                                label, "#".repeat(filled), ".".repeat(WIDTH - filled), 100 * d / total, d, total);
                        err.flush();
                        shown = true;
                    }
                }
            }
        }
    }

    /** Stops drawing and erases the bar. */
    @Override
    public void close() {
        synchronized (this) {
            running = false;
            erase();
        }
        if (painter != null) {
            painter.interrupt();
        }
    }

    /** Erases the bar's line if it was drawn. Holds the lock. */
    private void erase() {
        if (shown) {
            err.print("\r" + " ".repeat(widestLabel + WIDTH + 40) + "\r");
            err.flush();
        }
    }
}
