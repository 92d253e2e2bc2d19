/**
 * The standalone lease server (O1): {@link org.leasehold.server.LeaseServerMain} parses flags, environment and a
 * config file; {@link org.leasehold.server.LeaseServer} serves one embedded lease engine over gRPC with bearer-token
 * or mutual-TLS authentication, per-namespace ACLs, Prometheus metrics and health endpoints.
 */
package org.leasehold.server;
