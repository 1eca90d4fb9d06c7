package org.ucx4j;

/**
 * What a completed tag receive (or a probe) learned about the message.
 *
 * <p>Threading: immutable.
 *
 * @param senderTag the full 64-bit tag the sender used
 * @param length the message length in bytes
 */
public record TagInfo(long senderTag, long length) {}
