/**
 * Test-only helpers shared by ucx4j's modules (not shipped): {@link org.ucx4j.testsupport.Requirements}
 * (skip a test without UCX or a GPU, or fail it when the environment requires them),
 * {@link org.ucx4j.testsupport.ChildJvm} and {@link org.ucx4j.testsupport.RunningJvm} (tests across
 * processes).
 */
package org.ucx4j.testsupport;
