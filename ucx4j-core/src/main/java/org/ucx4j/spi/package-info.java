/**
 * Hooks for ucx4j's own optional modules ({@link org.ucx4j.spi.UcxExtension}): how ucx4j-cuda prepares
 * GPU contexts for UCX without the core depending on it.
 */
package org.ucx4j.spi;
