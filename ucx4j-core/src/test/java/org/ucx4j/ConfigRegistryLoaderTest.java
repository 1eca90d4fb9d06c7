package org.ucx4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import java.util.concurrent.Callable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.ucx4j.spi.ConfigKeySet;

/**
 * Modules' keys are found through the thread's context class loader as well as the core's own: a
 * module that only a child loader lists (Spark's executor loader holding an application's jars) has its
 * keys registered, instead of being refused as unknown.
 */
class ConfigRegistryLoaderTest {
    @TempDir
    Path dir;

    /** A child of the test's loader whose only addition is a services file naming {@link ContextLoaderKeySet}. */
    private URLClassLoader childListingTheKeySet() throws Exception {
        Path services = dir.resolve("META-INF/services");
        Files.createDirectories(services);
        // First an entry that is no ConfigKeySet of this core (as a second copy of ucx4j in a container's
        // loader would list): skipped, not a reason to refuse the configuration.
        Files.writeString(
                services.resolve(ConfigKeySet.class.getName()),
                String.class.getName() + "\n" + ContextLoaderKeySet.class.getName() + "\n");
        return new URLClassLoader(new URL[] {dir.toUri().toURL()}, ConfigRegistryLoaderTest.class.getClassLoader());
    }

    private static <T> T withContextLoader(ClassLoader loader, Callable<T> work) throws Exception {
        Thread t = Thread.currentThread();
        ClassLoader before = t.getContextClassLoader();
        t.setContextClassLoader(loader);
        try {
            return work.call();
        } finally {
            t.setContextClassLoader(before);
        }
    }

    @Test
    void aModuleOnlyTheContextLoaderListsHasItsKeysRegistered() throws Exception {
        try (URLClassLoader child = childListingTheKeySet()) {
            UcxConfig config = withContextLoader(
                    child,
                    () -> UcxConfig.builder().set("acme.context-setting", "on").build());
            assertEquals(Optional.of("on"), config.find(ContextLoaderKeySet.SETTING));
            assertTrue(config.keys().contains(ContextLoaderKeySet.SETTING));
            // The core's own keys are all there too, once.
            assertTrue(config.keys().containsAll(UcxKeys.ALL));
            ConfigRegistry first = withContextLoader(child, ConfigRegistry::discovered);
            assertSame(first, withContextLoader(child, ConfigRegistry::discovered), "not computed once per loader");
            assertNotNull(first.named("acme.context-setting"));
        }
    }

    @Test
    void withoutThatLoaderTheKeyStaysUnknown() throws Exception {
        // The loader the tests run with does not list the key set: the same key is refused as misspelt.
        UcxConfigException e = assertThrows(
                UcxConfigException.class,
                () -> UcxConfig.builder().set("acme.context-setting", "on").build());
        assertTrue(e.getMessage().contains("unknown ucx4j config key 'acme.context-setting'"), e.getMessage());
        assertNull(ConfigRegistry.discovered().named("acme.context-setting"));
        // An ancestor of the core's loader as context loader sees nothing more: the core's registry.
        assertSame(
                ConfigRegistry.discovered(),
                withContextLoader(ClassLoader.getPlatformClassLoader(), ConfigRegistry::discovered));
        assertSame(ConfigRegistry.discovered(), withContextLoader(null, ConfigRegistry::discovered));
    }
}
