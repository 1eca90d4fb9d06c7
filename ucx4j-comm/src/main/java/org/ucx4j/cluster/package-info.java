/**
 * The worker's side of {@code ucx4j launch}: {@link org.ucx4j.cluster.Cluster} (rank, size, GPU, and
 * collectives through the launcher's rendezvous) and {@link org.ucx4j.cluster.ClusterMesh} (one comm to
 * every other worker); {@link org.ucx4j.cluster.RendezvousServer} is the launcher's side.
 */
package org.ucx4j.cluster;
