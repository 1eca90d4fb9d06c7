/**
 * Hooks for ucx4j's own optional modules, found with {@link java.util.ServiceLoader}:
 * {@link org.ucx4j.spi.UcxExtension}, how ucx4j-cuda prepares GPU contexts for UCX without the core
 * depending on it; {@link org.ucx4j.spi.ConfigKeySet}, how a module registers its configuration keys
 * with the one {@link org.ucx4j.UcxConfig}.
 */
package org.ucx4j.spi;
