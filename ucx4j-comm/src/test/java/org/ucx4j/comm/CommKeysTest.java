package org.ucx4j.comm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.ucx4j.ConfigEntry;
import org.ucx4j.UcxConfig;
import org.ucx4j.UcxConfigException;

/** ucx4j-comm's keys: registered through ServiceLoader, declared as documented, read by CommOptions. */
class CommKeysTest {
    @Test
    void registeredWithTheConfigurationWhenCommIsOnThePath() {
        // Registration also checks that the core lists each key as comm's, so that it is ignored (with a
        // warning), not refused, where comm is absent.
        UcxConfig config = UcxConfig.builder().set(CommKeys.MAX_FRAMES, 10).build();
        assertTrue(config.keys().containsAll(CommKeys.ALL), config.keys().toString());
        assertEquals(10, config.get(CommKeys.MAX_FRAMES));
        assertTrue(config.entries().contains(new ConfigEntry("max-frames", "10", "builder")));
        // Text from any source reaches the same key.
        assertEquals(
                Boolean.TRUE,
                UcxConfig.builder().set("multi-buffer", "yes").build().get(CommKeys.MULTI_BUFFER));
    }

    @Test
    void declaredAsDocumented() {
        assertEquals(Optional.of(100_000), CommKeys.MAX_FRAMES.defaultValue());
        assertEquals(Optional.of(64L << 30), CommKeys.MAX_FRAME_SIZE.defaultValue());
        assertEquals(Optional.empty(), CommKeys.MULTI_BUFFER.defaultValue());
        assertEquals(Optional.of(256L << 20), CommKeys.MAX_IN_FLIGHT.defaultValue());
        assertEquals(Optional.of(1L << 30), CommKeys.MAX_IN_FLIGHT_PER_LISTENER.defaultValue());
        assertEquals(Optional.of(128), CommKeys.MAX_PENDING_HANDSHAKES.defaultValue());
        assertEquals(Optional.of(32), CommKeys.MAX_PENDING_HANDSHAKES_PER_SOURCE.defaultValue());
        assertTrue(CommKeys.AUTH_SECRET.isSecret());
        assertFalse(CommKeys.AUTH_SECRET_FILE.isSecret());
    }

    @Test
    void validatedAtLoadNamingKeyValueAndSource() {
        UcxConfigException e = assertThrows(
                UcxConfigException.class,
                () -> UcxConfig.builder().set("max-frames", "0").build());
        assertTrue(
                e.getMessage().contains("invalid value '0' for ucx4j config key 'max-frames' from builder"),
                e.getMessage());
        assertThrows(
                UcxConfigException.class,
                () -> UcxConfig.builder().set(CommKeys.MAX_FRAME_SIZE, 0L).build());
        for (String key : new String[] {
            "max-in-flight", "max-in-flight-per-listener", "max-pending-handshakes", "max-pending-handshakes-per-source"
        }) {
            UcxConfigException bad = assertThrows(
                    UcxConfigException.class,
                    () -> UcxConfig.builder().set(key, "0").build());
            assertTrue(
                    bad.getMessage().contains("invalid value '0' for ucx4j config key '" + key + "'"),
                    bad.getMessage());
        }
        UcxConfigException secret = assertThrows(
                UcxConfigException.class,
                () -> UcxConfig.builder().set(CommKeys.AUTH_SECRET, "  ").build());
        assertFalse(secret.getMessage().contains("'  '"), secret.getMessage());
        assertEquals(Optional.empty(), secret.value());
    }

    @Test
    void commOptionsReadThem() {
        CommOptions options = CommOptions.builder()
                .config(UcxConfig.builder()
                        .set(CommKeys.MAX_FRAMES, 5)
                        .set(CommKeys.MAX_FRAME_SIZE, 1L << 20)
                        .set(CommKeys.MULTI_BUFFER, true)
                        .set(CommKeys.AUTH_SECRET, "s3cret-of-16-bytes")
                        .set(CommKeys.MAX_IN_FLIGHT, 1L << 20)
                        .set(CommKeys.MAX_IN_FLIGHT_PER_LISTENER, 8L << 20)
                        .set(CommKeys.MAX_PENDING_HANDSHAKES, 3)
                        .set(CommKeys.MAX_PENDING_HANDSHAKES_PER_SOURCE, 2)
                        .build())
                .build();
        assertEquals(1L << 20, options.maxInFlight());
        assertEquals(8L << 20, options.maxInFlightPerListener());
        assertEquals(3, options.maxPendingHandshakes());
        assertEquals(2, options.maxPendingHandshakesPerSource());
        assertEquals(5, options.maxFrames());
        assertEquals(1L << 20, options.maxFrameSize());
        assertTrue(options.multiBuffer());
        assertEquals(
                "s3cret-of-16-bytes",
                new String(options.secret().orElseThrow(), java.nio.charset.StandardCharsets.UTF_8));
    }

    @Test
    void aSecretShorterThanSixteenBytesIsRefusedWithoutShowingIt(
            @org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) throws Exception {
        String shortSecret = "hunter2-xyz"; // 11 bytes
        IllegalArgumentException inline = assertThrows(IllegalArgumentException.class, () -> CommOptions.builder()
                .config(UcxConfig.builder()
                        .set(CommKeys.AUTH_SECRET, shortSecret)
                        .build())
                .build());
        assertTrue(inline.getMessage().startsWith("auth.secret is too short: 11 bytes"), inline.getMessage());
        assertTrue(inline.getMessage().contains("at least 16 bytes"), inline.getMessage());
        assertFalse(inline.getMessage().contains(shortSecret), inline.getMessage());
        // UTF-8 bytes count, not characters: 8 two-byte characters are 16 bytes, enough.
        String eightTwoByteChars = "\u00e9".repeat(8);
        CommOptions accepted = CommOptions.builder()
                .config(UcxConfig.builder()
                        .set(CommKeys.AUTH_SECRET, eightTwoByteChars)
                        .build())
                .build();
        assertEquals(16, accepted.secret().orElseThrow().length);

        java.nio.file.Path file = dir.resolve("secret");
        java.nio.file.Files.writeString(file, shortSecret + "\n");
        IllegalArgumentException fromFile = assertThrows(IllegalArgumentException.class, () -> CommOptions.builder()
                .config(UcxConfig.builder()
                        .set(CommKeys.AUTH_SECRET_FILE, file.toString())
                        .build())
                .build());
        assertTrue(
                fromFile.getMessage().startsWith("auth.secret-file " + file + " is too short: 11 bytes"),
                fromFile.getMessage());
        assertFalse(fromFile.getMessage().contains(shortSecret), fromFile.getMessage());
    }

    @Test
    void withSecretReplacesTheSecretKeepsTheRestAndCopiesTheBytes() {
        CommOptions base = CommOptions.builder()
                .config(UcxConfig.builder()
                        .set(CommKeys.AUTH_SECRET, "configured-secret-0123")
                        .set(CommKeys.MAX_FRAMES, 7)
                        .build())
                .identity("me")
                .connectTimeout(java.time.Duration.ofSeconds(3))
                .build();
        byte[] given = new byte[20];
        java.util.Arrays.fill(given, (byte) 5);
        CommOptions other = base.withSecret(given);
        java.util.Arrays.fill(given, (byte) 0); // the caller clears its array: the options kept a copy
        byte[] expected = new byte[20];
        java.util.Arrays.fill(expected, (byte) 5);
        org.junit.jupiter.api.Assertions.assertArrayEquals(
                expected, other.secret().orElseThrow());
        assertEquals(7, other.maxFrames());
        assertEquals("me", other.identity());
        assertEquals(java.time.Duration.ofSeconds(3), other.connectTimeout());
        assertEquals(
                "configured-secret-0123",
                new String(base.secret().orElseThrow(), java.nio.charset.StandardCharsets.UTF_8),
                "the original is unchanged");
        IllegalArgumentException tooShort = assertThrows(
                IllegalArgumentException.class, () -> CommOptions.defaults().withSecret(new byte[15]));
        assertTrue(tooShort.getMessage().startsWith("the secret given is too short: 15 bytes"), tooShort.getMessage());
    }
}
