package org.ucx4j;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.ucx4j.internal.config.ConfigWarnings;

/**
 * Records the configuration warnings logged during each test ({@code @RegisterExtension}), starting from
 * a clean "once per process" memory and leaving one behind.
 */
final class RecordedConfigWarnings implements BeforeEachCallback, AfterEachCallback {
    private final List<String> messages = new CopyOnWriteArrayList<>();

    /** The warnings logged so far in this test, in order. */
    List<String> messages() {
        return messages;
    }

    @Override
    public void beforeEach(ExtensionContext context) {
        messages.clear();
        ConfigWarnings.resetForTesting();
        ConfigWarnings.observeForTesting((key, message) -> messages.add(message));
    }

    @Override
    public void afterEach(ExtensionContext context) {
        ConfigWarnings.observeForTesting(null);
        ConfigWarnings.resetForTesting();
    }
}
