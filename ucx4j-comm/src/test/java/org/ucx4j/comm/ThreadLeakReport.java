package org.ucx4j.comm;

import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;
import org.awaitility.Awaitility;
import org.awaitility.core.ConditionTimeoutException;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Names the test class that leaves comm threads behind. Registered for every test class of this module
 * (META-INF/services, with JUnit's extension auto-detection on in junit-platform.properties): after a
 * class, the {@code ucx4j-comm*} threads it started must end within {@link #GRACE} (runtimes close on a
 * thread of their own, a moment after their last user); those still alive then are printed to stderr
 * with the class's name. It reports and does not fail: Surefire runs the module's classes in one JVM, and
 * CommLeakTest, which checks its own cycles strictly, once timed out on a runtime some other class had
 * left (CI, both UCX versions) without saying which class.
 */
public final class ThreadLeakReport implements BeforeAllCallback, AfterAllCallback {
    /** How long a class's threads may take to end after it. */
    static final Duration GRACE = Duration.ofSeconds(15);

    private static final ExtensionContext.Namespace NS = ExtensionContext.Namespace.create(ThreadLeakReport.class);

    /** Creates the extension (JUnit does, through the service loader). */
    public ThreadLeakReport() {}

    private static Set<Thread> commThreads() {
        return Thread.getAllStackTraces().keySet().stream()
                .filter(t -> t.getName().startsWith("ucx4j-comm") && t.isAlive())
                .collect(Collectors.toSet());
    }

    @Override
    public void beforeAll(ExtensionContext context) {
        context.getStore(NS).put("before", commThreads());
    }

    @Override
    @SuppressWarnings("unchecked")
    public void afterAll(ExtensionContext context) {
        Set<Thread> before = (Set<Thread>) context.getStore(NS).get("before", Set.class);
        try {
            Awaitility.await()
                    .atMost(GRACE)
                    .pollInterval(Duration.ofMillis(100))
                    .until(() -> left(before).isEmpty());
        } catch (ConditionTimeoutException e) {
            System.err.println(
                    "ThreadLeakReport: " + context.getRequiredTestClass().getName() + " left " + left(before)
                            + " alive " + GRACE.toSeconds() + " s after its last test");
        }
    }

    private static List<String> left(Set<Thread> before) {
        return commThreads().stream()
                .filter(t -> before == null || !before.contains(t))
                .map(Thread::getName)
                .sorted()
                .toList();
    }
}
